// End-to-end: the packaged VSIX installed into a real VS Code (code-server 4.100.3) driven by
// headless Chromium through playwright-core, against the scripted fake model server.
//   node test/e2e/e2e.cjs <code-server-dir> <extension.vsix> <screenshot.png>
// Checks: install, activation with no provider configured (the first-run welcome: a provider
// choice written to settings, Set API Key, Test connection), the chat's accessibility (log region, labelled
// input and buttons, focus ring, Ctrl+Alt+K, High Contrast), a full turn with a write needing
// permission answered by clicking Allow in the webview after its card showed the proposed file
// (opened in the diff editor by itself, closed once answered, and by Open diff before approval; an edit's card shows removed and added lines, rejected it
// changes nothing; a two-hunk edit reviewed hunk by hunk by keyboard, one hunk rejected:
// only the kept hunk written, the model told in the tool result, no second turn; review in the
// editor: Undo of one change beside a line the user typed, Keep of the other, the chat's list
// with Undo on a file and Keep all; no badge or
// notification for a card on screen; one waiting while the Explorer has the sidebar: a badge
// and one notification whose Show focuses its first answer, the answer clearing the badge), Undo this turn restoring an edited file and removing a created one
// (the answer collapses to one line, no
// notice at a normal end), incremental streaming with follow mode (kept through a drag of the
// sidebar's sash, left by the wheel) and Jump to latest, Escape
// stopping a turn, prompt recall and the slash menu by keyboard, Markdown tables, lists and
// highlighted code with Copy and Insert, one plan card per turn, a one-line read card, a created file on disk at once, Open diff opening
// a diff editor, Stop cancelling a streaming turn, Ask About Selection sending the selection
// as an embedded resource, context for a prompt (an `@` mention picked by keyboard reaching the
// model, `@changes` sending the working tree's git diff, the current file's chip removed and not sent, Edit last then Send sending the same
// message again, Add Selection to Chat adding a chip
// without sending, pasted and dropped images reaching the model, one over 5 MB refused), read_file seeing unsaved editor text, the mode and model pickers
// reaching the agent (plan checklist, terminal output, the sandbox refusing that command's
// write beside the workspace, an edit of an existing file left unsaved), the view at a 170 px
// sidebar (nothing sticks out, "Working…" whole), Open in Terminal on a running command (live
// output in a VS Code terminal, closing it does not stop the command, the exit code), a command
// that asks a question answered in the terminal made for it as it started (headed by the
// command, no launcher), the layout with long paths and words and a plan card at 300 and 170 px
// (text inside its card, a wheel at the end leaving the toolbar, past chats' titles readable;
// High Contrast's Jump to latest opaque), Set API Key reaching the model but not settings.json, the history list loading a
// past session (replayed like the live turn), New Chat starting fresh, Retry and Edit last, a
// 401 in VS Code's terms offering Set API Key, Rewind to here on the first of three prompts
// (files set back through the editor, a file the user changed since kept as a conflict, the
// chat continuing in a fork with the prompt in the input; kept through a reload), the history's search, rename and delete,
// corvid.models from the Settings editor in the model picker without a reload, a
// window reload bringing the open chat back, Show Logs, a broken
// `corvid.agent.command` shown as an error notification, `corvid acp` ($CORVID_BIN) over
// stdio running a turn, and a missing addon shown as an error notification. code-server and
// all its children are killed by PID at exit.
const { spawn, spawnSync, execFileSync } = require("node:child_process");
const fs = require("node:fs");
const net = require("node:net");
const os = require("node:os");
const path = require("node:path");
const { pathToFileURL } = require("node:url");
const { chromium } = require("playwright-core");

const [CS, VSIX, SHOT] = process.argv.slice(2);
const CORVID_BIN = process.env.CORVID_BIN;
if (!CS || !VSIX || !SHOT) {
  console.error("usage: node e2e.cjs <code-server-dir> <vsix> <screenshot.png>");
  process.exit(2);
}
const repo = path.resolve(__dirname, "../../..");
// Whether this kernel lets the sandbox launcher confine a command (Landlock).
const landlock =
  spawnSync(process.execPath, [path.join(repo, "sandbox-launcher.cjs"), "sandbox", "--policy", JSON.stringify({ roots: [], tmp: os.tmpdir(), required: true }), "--", "true"]).status === 0;
const t0 = Date.now();
const say = (m) => console.log(`[e2e ${((Date.now() - t0) / 1000).toFixed(1)}s] ${m}`);

let csPid = null;
function descendants(pid) {
  const out = [];
  const r = spawnSync("ps", ["-o", "pid=", "--ppid", String(pid)], { encoding: "utf8" });
  for (const c of (r.stdout || "").split(/\s+/).filter(Boolean).map(Number)) out.push(c, ...descendants(c));
  return out;
}
function killCodeServer() {
  if (!csPid) return;
  const pids = [csPid, ...descendants(csPid)];
  for (const p of pids.reverse()) {
    try {
      process.kill(p, "SIGKILL");
    } catch {}
  }
  csPid = null;
}
process.on("exit", killCodeServer);
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => process.exit(130));

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function main() {
  const fake = await (await import(pathToFileURL(path.join(repo, "tests/support/fake-model.mjs")).href)).startFakeModel();
  const W = fs.mkdtempSync(path.join(os.tmpdir(), "corvid-vscode-e2e-"));
  const data = path.join(W, "data"), ext = path.join(W, "ext"), work = path.join(W, "work");
  for (const d of [path.join(data, "User"), ext, work]) fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(work, "README.md"), "# demo workspace\n");
  // A file to mention with `@` (its content must reach the model).
  fs.mkdirSync(path.join(work, "src"));
  fs.writeFileSync(path.join(work, "src/mention-target.ts"), "export const MENTION_MARK = 42;\n");
  // A JSON file with a syntax error: the problem `@problems` and Fix with Corvid send.
  fs.writeFileSync(path.join(work, "broken.json"), '{\n  "name": "demo",\n  "port": 80 81\n}\n');
  const settingsFile = path.join(data, "User/settings.json");
  const baseSettings = {
      "security.workspace.trust.enabled": false,
      "workbench.startupEditor": "none",
      "telemetry.telemetryLevel": "off",
      "update.mode": "none",
      "extensions.autoCheckUpdates": false,
      "extensions.autoUpdate": false,
      "workbench.colorTheme": "Default Dark Modern",
      "files.autoSave": "off",
      // The DOM renderer: a command's terminal is text the test can read.
      "terminal.integrated.gpuAcceleration": "off",
      // No provider: the first run shows the welcome, which sets corvid.baseUrl and corvid.model.
  };
  const fakeBase = `${fake.url.replace(/\/v1\/?$/, "")}/v1`;
  fs.writeFileSync(settingsFile, JSON.stringify(baseSettings));
  const config = path.join(W, "corvid.toml");
  // Two models, so the model picker has a choice; the fake model takes images (a pasted image
  // reaches it as an image part), fake-model-2 none.
  fs.writeFileSync(config, '[provider]\nmodels = ["fake-model", "fake-model-2"]\nimages = true\n\n[models."fake-model-2"]\nimages = false\n\n[discovery]\nollama_url = "http://127.0.0.1:9"\n');
  const entry = path.join(CS, "out/node/entry.js");
  const base = ["--user-data-dir", data, "--extensions-dir", ext];

  // 1. The VSIX installs offline.
  const csEnv = { ...process.env, XDG_CONFIG_HOME: path.join(W, "config") };
  execFileSync(process.execPath, [entry, ...base, "--install-extension", VSIX], { stdio: "inherit", env: csEnv });
  const installed = fs.readdirSync(ext).filter((d) => d.startsWith("corvid.corvid-vscode"));
  if (installed.length !== 1) throw new Error(`VSIX not installed: ${fs.readdirSync(ext)}`);
  if (!fs.readdirSync(path.join(ext, installed[0], "dist")).some((f) => f.endsWith(".node"))) throw new Error("the .node is missing from the VSIX");
  say(`installed ${installed[0]}`);

  // 2. code-server on loopback; the API key comes from the environment (tests only).
  const port = await freePort();
  // No provider in the environment either (the welcome sets one up; the key goes to secret storage).
  const env = { ...csEnv, CORVID_CONFIG: config, CORVID_DATA_DIR: path.join(W, "corvid-data") };
  for (const v of ["CORVID_API_KEY", "CORVID_BASE_URL", "CORVID_MODEL", "CORVID_PROVIDER", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"]) delete env[v];
  const cs = spawn(
    process.execPath,
    [entry, "--bind-addr", `127.0.0.1:${port}`, "--auth", "none", "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override", ...base, work],
    { env, stdio: ["ignore", fs.openSync(path.join(W, "code-server.log"), "w"), fs.openSync(path.join(W, "code-server.log"), "a")] },
  );
  csPid = cs.pid;
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {}
    if (i > 120) throw new Error("code-server did not start");
    await new Promise((r) => setTimeout(r, 500));
  }
  say(`code-server up on ${port} (log: ${W}/code-server.log)`);

  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "pw-chromium-"));
  const ctx = await chromium.launchPersistentContext(userDataDir, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport: { width: 1400, height: 850 },
  });
  try {
    const page = ctx.pages()[0] || (await ctx.newPage());
    await page.goto(`${url}/?folder=${encodeURIComponent(work)}`, { waitUntil: "domcontentloaded", timeout: 60000 });
    await page.waitForSelector(".monaco-workbench", { timeout: 90000 });
    say("workbench visible");

    // The palette lists the commands known when it opens; right after a window reload the
    // extensions' contributions may not be registered yet (a CI run once timed out here),
    // so a palette that does not offer the command is closed and opened again.
    const palette = async (title, { click = true } = {}) => {
      const row = page.locator(".quick-input-list .monaco-list-row", { hasText: title.split(": ").pop() }).first();
      for (let attempt = 1; ; attempt++) {
        if (click) await page.locator(".monaco-workbench").click({ position: { x: 700, y: 300 } });
        await page.keyboard.press("F1");
        await page.waitForSelector(".quick-input-widget:not([style*='display: none']) input", { timeout: 20000 });
        await page.keyboard.type(title);
        try {
          await row.waitFor({ timeout: 8000 });
          break;
        } catch (e) {
          if (attempt === 4) throw e;
          say(`palette: "${title}" not offered yet (attempt ${attempt}); trying again`);
          await page.keyboard.press("Escape");
          await page.waitForTimeout(1000);
        }
      }
      await page.waitForTimeout(300);
      await page.keyboard.press("Enter");
    };

    // 3. Activation: opening the view from the activity bar activates the extension. No
    // provider is configured (no settings, no CORVID_* variables, no Ollama): the view shows
    // the first-run welcome, not an error.
    await page.locator(".activitybar .action-item a[aria-label^='Corvid']").first().click({ timeout: 30000 });
    await page.locator(".statusbar-item", { hasText: "Corvid:" }).first().waitFor({ timeout: 60000 });
    const view = page.frameLocator("iframe.webview.ready").first().frameLocator("#active-frame");
    const promptBox = view.locator("textarea#prompt");
    const welcome = view.getByRole("region", { name: "Set up Corvid" });
    await welcome.waitFor({ timeout: 60000 });
    await page.locator(".statusbar-item", { hasText: "Corvid: setup" }).first().waitFor({ timeout: 10000 });
    const choices = await welcome.locator("button.setup-provider").allInnerTexts();
    if (choices.join("|") !== "OpenAI-compatible URL|OpenRouter|Anthropic|Local Ollama") throw new Error(`the welcome offers ${choices}`);
    if ((await page.locator(".notifications-toasts .notification-toast", { hasText: "Corvid" }).count()) !== 0) throw new Error("a missing provider raised a notification");
    if ((await welcome.innerText()).includes("CORVID_")) throw new Error(`the welcome names environment variables: ${await welcome.innerText()}`);
    // Test connection before anything is set says so in plain words.
    await welcome.getByRole("button", { name: "Test connection" }).click();
    await welcome.locator(".setup-test.failed", { hasText: "No model provider is set yet" }).waitFor({ timeout: 30000 });
    // A prompt typed while the welcome shows (nothing set up yet) is kept (the welcome says
    // so) and sent once connected: the first turn below is that prompt.
    fake.script("E2E-WRITE", {
      steps: [
        { toolCalls: [{ name: "write_file", arguments: { path: "hello.txt", content: "Hello from Corvid in VS Code\n" } }] },
        { chunks: [{ reasoning: "The file is written; summarise." }, { content: "I created **hello.txt**:\n\n```text\nHello from Corvid in VS Code\n```\n\n- one file\n- no HTML <b>here</b>" }] },
      ],
    });
    await promptBox.fill("E2E-WRITE: create hello.txt with a greeting");
    await promptBox.press("Enter");
    await welcome.locator(".setup-held", { hasText: "E2E-WRITE: create hello.txt with a greeting" }).waitFor({ timeout: 20000 });
    if (fake.requests.some((q) => q.api === "openai")) throw new Error("a prompt during setup reached the model before Corvid was connected");
    // OpenAI-compatible at a URL where nothing listens (a bad URL is refused first), the model
    // typed (no list to pick from): Test connection calls the provider and says nothing answers.
    const quickInput = ".quick-input-widget:not([style*='display: none']) input";
    const deadBase = `http://127.0.0.1:${await freePort()}/v1`;
    await welcome.getByRole("button", { name: "OpenAI-compatible URL" }).click();
    await page.waitForSelector(quickInput, { timeout: 20000 });
    await page.keyboard.type("not a url");
    await page.locator(".quick-input-widget .quick-input-message", { hasText: "Not a URL" }).first().waitFor({ timeout: 10000 });
    await page.keyboard.press("Control+A");
    await page.keyboard.type(deadBase);
    await page.keyboard.press("Enter");
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "model" }).first().waitFor({ timeout: 20000 });
    await page.keyboard.type("fake-model");
    await page.keyboard.press("Enter");
    await welcome.locator(".setup-now", { hasText: `OpenAI-compatible at ${deadBase}, model fake-model; API key not set.` }).waitFor({ timeout: 20000 });
    await welcome.getByRole("button", { name: "Test connection" }).click();
    await welcome.locator(".setup-test.failed", { hasText: `nothing answers at ${deadBase}/models (connection refused)` }).waitFor({ timeout: 30000 });
    if ((await view.locator(".notice.info", { hasText: "Connected" }).count()) !== 0) throw new Error("Test connection reported a dead URL as connected");
    say("welcome: Test connection on a URL where nothing listens says so");
    // Then the fake model's URL: the model is picked from the provider's own list.
    await welcome.getByRole("button", { name: "OpenAI-compatible URL" }).click();
    await page.waitForSelector(quickInput, { timeout: 20000 });
    await page.keyboard.press("Control+A");
    await page.keyboard.type(fakeBase);
    await page.keyboard.press("Enter");
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "model" }).first().waitFor({ timeout: 20000 });
    const offered = await page.locator(".quick-input-list .monaco-list-row").allInnerTexts();
    if (!offered.some((t) => t.startsWith("fake-model")) || !offered.some((t) => t.startsWith("fake-model-2"))) throw new Error(`the model question does not offer the provider's models: ${offered}`);
    await page.keyboard.type("fake-model");
    await page.locator(".quick-input-list .monaco-list-row.focused", { hasText: /^fake-model(\s|current|$)/ }).first().waitFor({ timeout: 10000 });
    await page.keyboard.press("Enter");
    await welcome.locator(".setup-now", { hasText: `OpenAI-compatible at ${fakeBase}, model fake-model; API key not set.` }).waitFor({ timeout: 20000 });
    const written = JSON.parse(fs.readFileSync(settingsFile, "utf8"));
    if (written["corvid.baseUrl"] !== fakeBase || written["corvid.model"] !== "fake-model" || written["corvid.provider"] !== "openai") throw new Error(`the welcome wrote ${JSON.stringify(written)}`);
    await page.locator(".notifications-toasts .notification-toast", { hasText: "needs an API key" }).first().waitFor({ timeout: 20000 });
    await welcome.getByRole("button", { name: "Set API Key" }).click();
    await page.waitForSelector(".quick-input-widget:not([style*='display: none']) input[type='password']", { timeout: 20000 });
    await page.keyboard.type("test-key");
    await page.keyboard.press("Enter");
    await welcome.locator(".setup-now", { hasText: "API key set." }).waitFor({ timeout: 20000 });
    await welcome.getByRole("button", { name: "Test connection" }).click();
    await view.locator(".notice.info", { hasText: `Connected to ${fakeBase}: model fake-model is there (2 models listed).` }).waitFor({ timeout: 60000 });
    if (!fake.requests.some((q) => q.api === "models" && q.headers.authorization === "Bearer test-key")) throw new Error("Test connection did not list the models with the key");
    await view.locator(".msg.user", { hasText: "E2E-WRITE: create hello.txt with a greeting" }).waitFor({ timeout: 30000 });
    if ((await view.locator(".msg.user").count()) !== 1) throw new Error("the prompt kept during setup was sent more than once");
    await welcome.waitFor({ state: "detached", timeout: 10000 });
    // Working: the kept prompt's turn runs (it waits for the write's permission, below).
    await page.locator(".statusbar-item", { hasText: "Corvid: working" }).first().waitFor({ timeout: 60000 });
    say("welcome: a prompt typed before setup kept and sent once connected; no provider → OpenAI-compatible URL, model from its list, API key set, Test connection listed the models");
    await promptBox.waitFor({ timeout: 30000 });
    // Accessibility: the transcript is a log region, the input is labelled.
    if ((await view.getByRole("log", { name: "Conversation" }).count()) !== 1) throw new Error("the transcript is not a labelled log region");
    if ((await view.getByRole("textbox", { name: "Message to Corvid" }).count()) !== 1) throw new Error("the input has no accessible name");
    // The Focus Chat Input keybinding puts the cursor in the chat's input from the editor area.
    const inputFocused = () => promptBox.evaluate((el) => document.hasFocus() && document.activeElement === el);
    await page.locator(".monaco-workbench").click({ position: { x: 700, y: 300 } });
    if (await inputFocused()) throw new Error("the input should not have the focus before the keybinding");
    await page.keyboard.press("Control+Alt+K");
    for (let i = 0; !(await inputFocused()); i++) {
      if (i > 40) throw new Error("Ctrl+Alt+K did not focus the chat input");
      await page.waitForTimeout(250);
    }
    say("a11y: log region, labelled input; Ctrl+Alt+K focuses the input");

    // 4. A full turn: write_file needs permission; Allow is clicked in the webview. (Its
    // prompt was typed during setup and sent once connected, above.)
    const allow = view.locator("button.perm[data-option='allow_once']");
    await allow.waitFor({ timeout: 30000 });
    const optionCount = await view.locator("button.perm").count();
    if (optionCount < 2) throw new Error(`expected every permission option as a button, got ${optionCount}`);
    say(`permission shown with ${optionCount} options; clicking Allow`);
    // "Allow once" is the primary button; "Always allow" and the rejections are secondary.
    if (!(await view.locator("button.perm[data-option='allow_always']").getAttribute("class")).includes("secondary")) throw new Error("Always allow should be a secondary button");
    if ((await allow.getAttribute("class")).includes("secondary")) throw new Error("Allow once should be the primary button");
    // The card shows what it asks about before the answer: the new file's lines, and Open diff
    // opens VS Code's diff editor on the proposal while nothing is on disk yet.
    const proposal = view.locator(".permission:not(.answered) .proposed");
    await proposal.locator(".pdiff .dl.add", { hasText: "+Hello from Corvid in VS Code" }).waitFor({ timeout: 10000 });
    if (!(await proposal.locator(".stat").innerText()).includes("new file")) throw new Error(`the proposed new file is not marked new: ${await proposal.locator(".stat").innerText()}`);
    if (fs.existsSync(path.join(work, "hello.txt"))) throw new Error("hello.txt exists before the write was allowed");
    await page.screenshot({ path: SHOT.replace(/\.png$/, "-permission.png") });
    // Ask mode opens the proposal in the diff editor by itself, the focus staying in the chat.
    await page.locator(".tab", { hasText: "Corvid's proposal" }).first().waitFor({ timeout: 20000 });
    if (!(await view.locator("textarea#prompt").count())) throw new Error("the chat is gone");
    await palette("View: Close All Editors");
    await page.locator(".tab", { hasText: "Corvid's proposal" }).first().waitFor({ state: "detached", timeout: 10000 });
    await proposal.locator("button.open-proposed").click();
    await page.locator(".tab", { hasText: "Corvid's proposal" }).first().waitFor({ timeout: 20000 });
    await page.locator(".monaco-diff-editor .view-lines", { hasText: "Hello from Corvid in VS Code" }).first().waitFor({ timeout: 20000 });
    if (fs.existsSync(path.join(work, "hello.txt"))) throw new Error("Open diff on the proposal wrote hello.txt");
    await palette("View: Close All Editors");
    await page.locator(".monaco-diff-editor").first().waitFor({ state: "detached", timeout: 10000 });
    say("the permission card shows the proposed file; Open diff opened it before approval");
    // The card was on screen all along (seconds, well past the alerts' settle time): no badge,
    // no "waiting for your approval" notification.
    const approvalToasts = page.locator(".notifications-toasts .notification-toast", { hasText: "Corvid is waiting for your approval" });
    const corvidBadge = page.locator(".activitybar .action-item", { has: page.locator("a[aria-label^='Corvid']") }).locator(".badge .badge-content");
    if ((await approvalToasts.count()) !== 0) throw new Error("a permission on screen raised a notification");
    if (await corvidBadge.isVisible()) throw new Error(`a permission on screen raised a badge: ${await corvidBadge.innerText()}`);
    await proposal.locator("button.open-proposed").click();
    await page.locator(".tab", { hasText: "Corvid's proposal" }).first().waitFor({ timeout: 20000 });
    await allow.click();
    // Answered, the proposal's tab closes (the written file shows instead).
    await page.locator(".tab", { hasText: "Corvid's proposal" }).first().waitFor({ state: "detached", timeout: 10000 });
    await view.locator("body[data-last-stop='end_turn']").waitFor({ timeout: 30000 });
    // A normal end leaves no notice; the answered request is one line without buttons.
    if ((await view.locator(".stop-reason").count()) !== 0) throw new Error("a normal turn end left a notice");
    const answered = view.locator(".permission.answered").first();
    if ((await answered.locator("button").count()) !== 0 || !(await answered.innerText()).includes("Allowed once")) throw new Error(`the answered request did not collapse: ${await answered.innerText()}`);
    const answeredBox = await answered.boundingBox();
    if (answeredBox.height > 40) throw new Error(`the answered request is ${answeredBox.height} px high, not one line`);
    const agentText = await view.locator(".msg.agent").last().innerHTML();
    if (!agentText.includes("<strong>hello.txt</strong>") || agentText.includes("<b>")) throw new Error(`markdown not rendered safely: ${agentText}`);
    await view.locator(".tool.completed").first().waitFor({ timeout: 10000 });
    say("turn finished: end_turn, tool card completed");

    // 5. Open diff opens VS Code's diff editor.
    await view.locator("button.open-diff").first().click();
    await page.locator(".monaco-diff-editor").first().waitFor({ timeout: 20000 });
    say("diff editor open");

    // 6. A file the agent creates is on disk with its content at once (not an empty file
    // plus an unsaved buffer), and its tab is not left modified.
    const hello = path.join(work, "hello.txt");
    const read = () => (fs.existsSync(hello) ? fs.readFileSync(hello, "utf8") : null);
    if (read() !== "Hello from Corvid in VS Code\n") throw new Error(`the created hello.txt is not on disk: ${JSON.stringify(read())}`);
    await page.locator(".tab", { hasText: "hello.txt" }).first().waitFor({ timeout: 10000 });
    if ((await page.locator(".tab.dirty", { hasText: "hello.txt" }).count()) !== 0) throw new Error("the created hello.txt should not be left modified");
    say("hello.txt: created on disk with its content");

    // 6b. An edit asked about shows the changed lines (removed and added) before the answer;
    // rejected, the file stays as it was and the turn offers no undo.
    fake.script("E2E-ASKEDIT", {
      steps: [{ toolCalls: [{ name: "edit_file", arguments: { path: "hello.txt", old_text: "Hello from", new_text: "Hello there from" } }] }, { chunks: [{ content: "Left it alone." }] }],
    });
    const checkpointsBefore = await view.locator(".checkpoint").count();
    await promptBox.fill("E2E-ASKEDIT: edit hello.txt");
    await promptBox.press("Enter");
    const editCard = view.locator(".permission:not(.answered)");
    await editCard.locator(".pdiff .dl.del", { hasText: "-Hello from Corvid in VS Code" }).waitFor({ timeout: 30000 });
    await editCard.locator(".pdiff .dl.add", { hasText: "+Hello there from Corvid in VS Code" }).waitFor({ timeout: 5000 });
    if ((await editCard.locator(".stat").innerText()).replace(/\s+/g, " ") !== "+1 −1") throw new Error(`the edit's counts: ${await editCard.locator(".stat").innerText()}`);
    // One hunk: nothing to review hunk by hunk.
    if ((await editCard.locator(".hunk").count()) !== 0) throw new Error("a one-hunk edit offers per-hunk review");
    await editCard.locator("button.perm[data-option^='reject']").first().click();
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    if (read() !== "Hello from Corvid in VS Code\n") throw new Error(`the rejected edit changed hello.txt: ${read()}`);
    if ((await view.locator(".checkpoint").count()) !== checkpointsBefore) throw new Error("a turn that wrote nothing offers an undo");
    say("an edit's permission card shows the removed and added lines; rejected, nothing changed");

    // 6c. Per-hunk review: an edit with two hunks shows a Keep / Reject toggle per hunk (all
    // kept); one rejected by keyboard, then Allow by keyboard: a partial approval, so the core
    // writes the kept hunk only and tells the model in the same turn.
    const reviewFile = path.join(work, "review.txt");
    const reviewText = Array.from({ length: 12 }, (_, i) => `row ${i + 1}`).join("\n") + "\n";
    fs.writeFileSync(reviewFile, reviewText);
    const reviewOld = reviewText.split("\n").slice(1, 11).join("\n");
    fake.script("E2E-HUNKS", {
      steps: [
        { toolCalls: [{ name: "edit_file", arguments: { path: "review.txt", old_text: reviewOld, new_text: reviewOld.replace("row 2", "ROW TWO").replace("row 11", "ROW ELEVEN") } }] },
        { chunks: [{ content: "Waiting for your word." }] },
      ],
    });
    await promptBox.fill("E2E-HUNKS: change rows 2 and 11");
    await promptBox.press("Enter");
    const hunkCard = view.locator(".permission:not(.answered)");
    await hunkCard.locator(".hunk").nth(1).waitFor({ timeout: 30000 });
    if ((await hunkCard.locator(".hunk").count()) !== 2) throw new Error(`expected two hunks, got ${await hunkCard.locator(".hunk").count()}`);
    for (const b of await hunkCard.getByRole("button", { name: /^Keep hunk/ }).all())
      if ((await b.getAttribute("aria-pressed")) !== "true") throw new Error("a hunk is not kept by default");
    const rejectSecond = hunkCard.getByRole("button", { name: "Reject hunk 2 of 2" });
    await rejectSecond.focus();
    await page.keyboard.press("Enter");
    await hunkCard.locator(".hunk.rejected").waitFor({ timeout: 5000 });
    if ((await rejectSecond.getAttribute("aria-pressed")) !== "true" || (await hunkCard.getByRole("button", { name: "Keep hunk 2 of 2" }).getAttribute("aria-pressed")) !== "false")
      throw new Error("the rejected hunk's toggle does not say so");
    if ((await hunkCard.getByRole("button", { name: "Keep hunk 1 of 2" }).getAttribute("aria-pressed")) !== "true") throw new Error("rejecting hunk 2 changed hunk 1");
    if (!(await rejectSecond.evaluate((el) => document.activeElement === el))) throw new Error("the toggle lost the keyboard focus when the card was redrawn");
    await hunkCard.locator(".review-note", { hasText: "Hunk 2 rejected: Allow writes the rest of this edit without it" }).waitFor({ timeout: 5000 });
    // Tab on to Allow (past the toggle's own pair), Enter answers.
    const allowHunks = hunkCard.locator("button.perm[data-option='allow_once']");
    for (let i = 0; !(await allowHunks.evaluate((el) => document.activeElement === el)); i++) {
      if (i > 6) throw new Error("Tab did not reach Allow from the hunk toggles");
      await page.keyboard.press("Tab");
    }
    const requestsBeforeHunks = fake.requests.length;
    await page.keyboard.press("Enter");
    await view.locator(".msg.agent", { hasText: "Waiting for your word." }).waitFor({ timeout: 30000 });
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    // The core numbered the hunks, so Allow stayed an allow with hunk 2 named in its _meta: the
    // kept hunk is written, the rejected one is not, and no follow-up turn was needed.
    const reviewed = fs.readFileSync(reviewFile, "utf8");
    if (reviewed !== reviewText.replace("row 2\n", "ROW TWO\n")) throw new Error(`a partial approval should write hunk 1 only: ${JSON.stringify(reviewed)}`);
    if ((await view.locator(".msg.user.follow-up").count()) !== 0) throw new Error("a follow-up was sent though the core wrote the kept hunk");
    const hunkAnswer = await view.locator(".permission.answered", { hasText: "review.txt" }).innerText();
    if (!hunkAnswer.includes("Allowed in part: hunk 2 of 2 rejected")) throw new Error(`the answered card says: ${hunkAnswer}`);
    const sentToModel = fake.requests.slice(requestsBeforeHunks).filter((q) => q.api === "openai");
    if (sentToModel.length !== 1) throw new Error(`expected one model request (the tool result), got ${sentToModel.length}`);
    const told = JSON.stringify(sentToModel[0].body.messages.filter((m) => m.role === "tool").at(-1));
    if (!told.includes("hunk 1 was written; hunk 2 was rejected and NOT written") || !told.includes("+ROW ELEVEN")) throw new Error(`the model was not told what was written: ${told.slice(0, 600)}`);
    say("per-hunk review: hunk 2 rejected by keyboard, Allow → hunk 1 written, hunk 2 not, the model told in the tool result, no second turn");

    // 6c'. Review in the editor: an allowed edit with two changes lands in the file, listed in
    // the chat's changed files and marked in the editor with Keep / Undo above each change. The
    // user types a line of their own at the end, then undoes the second change (only that
    // region goes back; their line stays) and keeps the first; the file leaves the review.
    // Then the chat's list: Undo on review.txt's row puts its kept hunk back; Keep all keeps
    // the created hello.txt, and the list is gone.
    const inEditor = path.join(work, "in-editor.txt");
    const inEditorText = Array.from({ length: 12 }, (_, i) => `item ${i + 1}`).join("\n") + "\n";
    fs.writeFileSync(inEditor, inEditorText);
    fake.script("E2E-INEDITOR", {
      steps: [
        { toolCalls: [{ name: "edit_file", arguments: { path: "in-editor.txt", edits: [{ old_text: "item 2\n", new_text: "ITEM TWO\n" }, { old_text: "item 11\n", new_text: "ITEM ELEVEN\n" }] } }] },
        { chunks: [{ content: "Both items changed." }] },
      ],
    });
    await promptBox.fill("E2E-INEDITOR: change items 2 and 11");
    await promptBox.press("Enter");
    await view.locator(".permission:not(.answered) button.perm[data-option='allow_once']").click({ timeout: 30000 });
    await view.locator(".msg.agent", { hasText: "Both items changed." }).waitFor({ timeout: 30000 });
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    const changesBox = view.locator("#changes");
    await changesBox.locator(".changed-file", { hasText: "in-editor.txt" }).filter({ hasText: "2 changes" }).waitFor({ timeout: 10000 });
    if (!(await changesBox.locator(".changed-file", { hasText: "review.txt" }).count())) throw new Error(`review.txt's kept hunk is not listed: ${await changesBox.innerText()}`);
    await changesBox.locator("button.cf-open", { hasText: "in-editor.txt" }).click();
    await page.locator(".tab.active", { hasText: "in-editor.txt" }).waitFor({ timeout: 10000 });
    const lens = (title) => page.locator(`.codelens-decoration a[title="${title}"]`);
    await lens("Undo Corvid's change (line 11)").waitFor({ timeout: 20000 });
    await page.locator(".codelens-decoration a", { hasText: "Corvid changed 2 places: Keep All" }).waitFor({ timeout: 5000 });
    const inEditorLines = page.locator(".part.editor .editor-group-container.active .monaco-editor .view-lines").last();
    await inEditorLines.click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("my own line\n");
    await page.screenshot({ path: SHOT.replace(/\.png$/, "-review.png") });
    await lens("Undo Corvid's change (line 11)").click();
    const expectUndone = inEditorText.replace("item 2\n", "ITEM TWO\n") + "my own line\n";
    for (let i = 0; fs.readFileSync(inEditor, "utf8") !== expectUndone; i++) {
      if (i > 40) throw new Error(`Undo of one change: ${JSON.stringify(fs.readFileSync(inEditor, "utf8"))}`);
      await page.waitForTimeout(250);
    }
    await changesBox.locator(".changed-file", { hasText: "in-editor.txt" }).filter({ hasText: "1 change" }).waitFor({ timeout: 10000 });
    await lens("Keep Corvid's change (line 2)").click();
    await changesBox.locator(".changed-file", { hasText: "in-editor.txt" }).waitFor({ state: "detached", timeout: 10000 });
    await page.locator(".codelens-decoration a", { hasText: /Corvid changed/ }).waitFor({ state: "detached", timeout: 10000 }); // the reviewed file's lenses are gone
    if (fs.readFileSync(inEditor, "utf8") !== expectUndone) throw new Error("Keep changed the file");
    await changesBox.locator(".changed-file", { hasText: "review.txt" }).getByRole("button", { name: /^Undo Corvid's changes/ }).click();
    for (let i = 0; fs.readFileSync(reviewFile, "utf8") !== reviewText; i++) {
      if (i > 40) throw new Error(`Undo on review.txt's row: ${JSON.stringify(fs.readFileSync(reviewFile, "utf8"))}`);
      await page.waitForTimeout(250);
    }
    await changesBox.getByRole("button", { name: "Keep all of Corvid's changes" }).click();
    await changesBox.waitFor({ state: "hidden", timeout: 10000 });
    if (read() !== "Hello from Corvid in VS Code\n") throw new Error("Keep all changed hello.txt");
    say("review in the editor: Undo of one change (the user's own line kept), Keep of the other; the chat's Undo on a file and Keep all; the list gone");

    // 6d. A permission the user cannot see (the Explorer took the sidebar while it waits): a
    // badge on Corvid's activity bar item and one notification; its Show brings the card back
    // with the focus on its first answer; answering clears the badge. (A command, not a write:
    // a written file would open in the preview tab later steps expect hello.txt in.)
    fake.script("E2E-AWAY", {
      steps: [{ toolCalls: [{ name: "run_command", arguments: { command: "echo corvid-away-ok" } }] }, { chunks: [{ content: "Ran it while you were away." }] }],
    });
    await promptBox.fill("E2E-AWAY: run a command");
    await promptBox.press("Enter");
    const awayCard = view.locator(".permission:not(.answered)");
    await awayCard.locator("button.perm").first().waitFor({ timeout: 30000 });
    const awayTitle = (await awayCard.locator(".ptitle").innerText()).replace(/^Allow: /, "").replace(/\?$/, "");
    await page.locator(".activitybar .action-item a[aria-label^='Explorer']").first().click();
    await corvidBadge.filter({ hasText: /^1$/ }).waitFor({ timeout: 30000 });
    const awayToast = approvalToasts.filter({ hasText: awayTitle });
    await awayToast.first().waitFor({ timeout: 30000 });
    if ((await approvalToasts.count()) !== 1) throw new Error(`expected one approval notification, got ${await approvalToasts.allInnerTexts()}`);
    await awayToast.first().locator(".monaco-button", { hasText: "Show" }).click();
    const firstAnswer = awayCard.locator("button.perm").first();
    for (let i = 0; !(await firstAnswer.evaluate((el) => document.hasFocus() && document.activeElement === el).catch(() => false)); i++) {
      if (i > 60) throw new Error("Show did not focus the card's first answer");
      await page.waitForTimeout(250);
    }
    const inView = await firstAnswer.evaluate((el) => {
      const b = el.getBoundingClientRect(), t = document.getElementById("transcript").getBoundingClientRect();
      return b.top >= t.top && b.bottom <= t.bottom;
    });
    if (!inView) throw new Error("Show left the card's answers outside the transcript's viewport");
    await page.keyboard.press("Enter");
    await corvidBadge.waitFor({ state: "hidden", timeout: 30000 });
    await view.locator(".msg.agent", { hasText: "Ran it while you were away." }).waitFor({ timeout: 30000 });
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    // The answer given after Show reached the agent: the command ran.
    await view.locator("pre.out.terminal", { hasText: "corvid-away-ok" }).waitFor({ timeout: 10000 });
    if ((await approvalToasts.count()) !== 0) throw new Error(`an approval notification is still shown: ${await approvalToasts.allInnerTexts()}`);
    say("a permission off screen (Explorer active): badge 1 and one notification; Show focused its first answer; answering cleared the badge");

    // 7. Stop cancels a streaming turn.
    // The sidebar's sash dragged to `width` (returns the width it had).
    const sidebar = page.locator(".part.sidebar");
    const dragSidebarTo = async (width) => {
      const box = await sidebar.boundingBox();
      const y = box.y + box.height / 2;
      await page.mouse.move(box.x + box.width, y);
      await page.mouse.down();
      await page.mouse.move(box.x + (box.width + width) / 2, y, { steps: 5 });
      await page.mouse.move(box.x + width, y, { steps: 5 });
      await page.mouse.up();
      return box.width;
    };
    const viewWidth = () => view.locator("body").evaluate(() => document.documentElement.clientWidth);
    fake.script("E2E-SLOW", { chunks: Array.from({ length: 400 }, (_, i) => ({ content: `word${i} ` })), delayMs: 50 });
    await promptBox.fill("E2E-SLOW: talk for a long time");
    await promptBox.press("Enter");
    await view.locator(".msg.agent", { hasText: "word3" }).first().waitFor({ timeout: 30000 });
    // Streaming updates the transcript in place: an element drawn before keeps its identity
    // (a full redraw would drop this mark, and with it any selection or focus).
    await view.locator(".msg.user").last().evaluate((el) => (el.dataset.e2eMark = "kept"));
    // Follow mode: the view stays at the bottom while text streams ...
    const transcriptBox = view.locator("#transcript");
    const gap = () => transcriptBox.evaluate((t) => t.scrollHeight - t.scrollTop - t.clientHeight);
    // (Once the streamed text overflows the view by a good margin.)
    for (let i = 0; (await transcriptBox.evaluate((t) => t.scrollHeight - t.clientHeight)) < 150; i++) {
      if (i > 60) throw new Error("the transcript does not overflow; the follow-mode check needs it to");
      await page.waitForTimeout(250);
    }
    await page.waitForTimeout(300);
    if ((await gap()) > 30) throw new Error(`follow mode left the view ${await gap()} px above the bottom while streaming`);
    // ... also through a resize of the sidebar (narrower, then back: the content reflows and
    // the view's scroll position moves under it) ...
    const wideBefore = await dragSidebarTo(220);
    for (let i = 0; (await viewWidth()) > 260; i++) {
      if (i > 40) throw new Error(`the sidebar did not get narrow: the view is ${await viewWidth()} px wide`);
      await page.waitForTimeout(250);
    }
    await dragSidebarTo(wideBefore);
    for (let i = 0; (await viewWidth()) < wideBefore - 60; i++) {
      if (i > 40) throw new Error(`the sidebar did not get wide again: ${await viewWidth()} px`);
      await page.waitForTimeout(250);
    }
    const wordsBeforeResizeCheck = (await view.locator(".msg.agent").last().innerText()).split(" ").length;
    for (let i = 0; (await view.locator(".msg.agent").last().innerText()).split(" ").length < wordsBeforeResizeCheck + 5; i++) {
      if (i > 40) throw new Error("the text stopped streaming during the resize check");
      await page.waitForTimeout(250);
    }
    if ((await gap()) > 30 || (await view.locator("button#jump").isVisible())) throw new Error(`a resize of the sidebar left follow mode: ${await gap()} px above the bottom`);
    // ... until the reader scrolls up (the wheel): then it stays put and offers "Jump to latest".
    await transcriptBox.hover();
    for (let i = 0; (await transcriptBox.evaluate((t) => t.scrollTop)) > 5; i++) {
      if (i > 20) throw new Error("the wheel did not scroll the transcript to the top");
      await page.mouse.wheel(0, -20000);
      await page.waitForTimeout(250);
    }
    await view.locator("button#jump").waitFor({ timeout: 5000 });
    const wordsAt = async () => (await view.locator(".msg.agent").last().innerText()).split(" ").length;
    const before = await wordsAt();
    await page.waitForTimeout(1500);
    if ((await wordsAt()) <= before) throw new Error("the text stopped streaming during the follow-mode check");
    if ((await transcriptBox.evaluate((t) => t.scrollTop)) > 5) throw new Error("streaming scrolled the view although the reader had scrolled up");
    if ((await view.locator(".msg.user[data-e2e-mark='kept']").count()) !== 1) throw new Error("streaming redrew the earlier messages");
    await view.locator("button#jump").click();
    await page.waitForTimeout(1000);
    if ((await gap()) > 30) throw new Error("Jump to latest did not resume following");
    if (await view.locator("button#jump").isVisible()) throw new Error("Jump to latest stays visible at the bottom");
    say("streaming: earlier messages kept, follow mode, Jump to latest");
    await view.locator("button#stop").click();
    await view.locator(".stop-reason[data-stop='cancelled']").waitFor({ timeout: 20000 });
    const streamed = await view.locator(".msg.agent").last().innerText();
    if (streamed.includes("word399")) throw new Error("the turn was not cancelled");
    say("Stop cancelled the streaming turn");

    // 7b. Escape in the chat stops a running turn too.
    fake.script("E2E-ESC", { chunks: Array.from({ length: 400 }, (_, i) => ({ content: `esc${i} ` })), delayMs: 50 });
    await promptBox.fill("E2E-ESC: talk until Escape");
    await promptBox.press("Enter");
    await view.locator(".msg.agent", { hasText: "esc3" }).first().waitFor({ timeout: 30000 });
    await promptBox.press("Escape");
    await view.locator(".stop-reason[data-stop='cancelled']").nth(1).waitFor({ timeout: 20000 });
    if ((await view.locator(".msg.agent").last().innerText()).includes("esc399")) throw new Error("Escape did not cancel the turn");
    say("Escape stopped the streaming turn");

    // 7c. Up in the empty input recalls earlier prompts, newest first; Down goes back.
    await promptBox.fill("");
    await promptBox.press("ArrowUp");
    if ((await promptBox.inputValue()) !== "E2E-ESC: talk until Escape") throw new Error(`Up recalled ${await promptBox.inputValue()}`);
    await promptBox.press("ArrowUp");
    if ((await promptBox.inputValue()) !== "E2E-SLOW: talk for a long time") throw new Error(`Up twice recalled ${await promptBox.inputValue()}`);
    await promptBox.press("ArrowDown");
    await promptBox.press("ArrowDown");
    if ((await promptBox.inputValue()) !== "") throw new Error("Down past the newest prompt should empty the input");
    // The slash-command menu by keyboard: arrows move, Enter picks, Escape closes.
    await promptBox.pressSequentially("/");
    const options = view.locator("#commands").getByRole("option");
    await options.first().waitFor({ timeout: 10000 });
    const names = (await options.allInnerTexts()).map((t) => t.split(" ")[0]);
    if (names.length < 2) throw new Error(`expected the agent's slash commands, got ${names}`);
    await promptBox.press("ArrowDown");
    if ((await view.locator("#commands [role='option'][aria-selected='true']").innerText()).split(" ")[0] !== names[1]) throw new Error("ArrowDown did not move in the command menu");
    await promptBox.press("Enter");
    if ((await promptBox.inputValue()) !== `${names[1]} `) throw new Error(`Enter picked ${await promptBox.inputValue()}, not ${names[1]}`);
    await promptBox.fill("/");
    await options.first().waitFor({ timeout: 5000 });
    await promptBox.press("Escape");
    if ((await options.count()) !== 0) throw new Error("Escape did not close the command menu");
    await promptBox.fill("");
    say("prompt recall with Up/Down; the slash menu works by keyboard");

    // 8. Ask About Selection: the selected text reaches the model as an embedded resource.
    await page.locator(".monaco-workbench").click({ position: { x: 700, y: 300 } });
    await page.keyboard.press("F1");
    await page.waitForSelector(".quick-input-widget:not([style*='display: none']) input", { timeout: 20000 });
    await page.keyboard.press("Backspace");
    await page.keyboard.type("README.md");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "README.md" }).first().waitFor({ timeout: 20000 });
    await page.keyboard.press("Enter");
    await page.locator(".tab.active", { hasText: "README.md" }).waitFor({ timeout: 20000 });
    await page.locator(".monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+A");
    fake.script("E2E-SELECTION", { chunks: [{ content: "That is a heading." }] });
    await page.keyboard.press("Control+Alt+Shift+K"); // the Ask About Selection keybinding
    await page.waitForSelector(".quick-input-widget:not([style*='display: none']) input", { timeout: 20000 });
    await page.keyboard.press("Control+A");
    await page.keyboard.type("E2E-SELECTION what is this?");
    await page.keyboard.press("Enter");
    await view.locator(".msg.agent", { hasText: "That is a heading." }).waitFor({ timeout: 30000 });
    const asked = JSON.stringify(fake.requests.filter((q) => q.api === "openai").at(-1).body.messages);
    if (!asked.includes("# demo workspace") || !asked.includes("README.md")) throw new Error(`the selection did not reach the model: ${asked.slice(0, 500)}`);
    say("Ask About Selection sent the selection as a resource");

    // 9. fs/read_text_file returns the open document's text, unsaved edits included.
    await page.locator(".monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("\nUNSAVED-LINE typed in the editor");
    await page.locator(".tab.dirty", { hasText: "README.md" }).first().waitFor({ timeout: 10000 });
    fake.script("E2E-READ", { steps: [{ toolCalls: [{ name: "read_file", arguments: { path: "README.md" } }] }, { chunks: [{ content: "Read it." }] }] });
    await promptBox.fill("E2E-READ: read README.md");
    await promptBox.press("Enter");
    await view.locator(".msg.agent", { hasText: "Read it." }).waitFor({ timeout: 30000 });
    const toolResult = JSON.stringify(fake.requests.filter((q) => q.api === "openai").at(-1).body.messages.slice(-1));
    if (!toolResult.includes("UNSAVED-LINE")) throw new Error(`read_file did not see the unsaved edit: ${toolResult.slice(0, 400)}`);
    if (fs.readFileSync(path.join(work, "README.md"), "utf8").includes("UNSAVED-LINE")) throw new Error("README.md should still be unsaved");
    // A read is a one-line card; what it read opens on a click.
    const readCard = view.locator("details.tool.compact", { hasText: "README.md" }).last();
    if (await readCard.evaluate((d) => d.open)) throw new Error("the read_file card should start collapsed");
    if ((await readCard.boundingBox()).height > 40) throw new Error("the read_file card is not one line");
    await readCard.locator("summary").click();
    await readCard.locator("pre.out").first().waitFor({ timeout: 5000 });
    say("read_file saw the editor's unsaved text");

    // 9b. Markdown: a table, nested lists, emphasis around code, a highlighted code block whose
    // Copy reaches the clipboard and whose Insert puts the code at the cursor of the editor
    // (README.md, the last one used).
    await ctx.grantPermissions(["clipboard-read", "clipboard-write"]);
    fake.script("E2E-MD", {
      chunks: [{ content: "| File | Lines |\n|---|---:|\n| a.rs | 10 |\n\n- outer\n  - inner\n\nRun **`cargo test`** first.\n\n```ts\nconst inserted = \"E2E-INSERTED\";\n```\n" }],
    });
    await promptBox.fill("E2E-MD: show me some markdown");
    await promptBox.press("Enter");
    const mdMsg = view.locator(".msg.agent", { has: view.locator("table") }).last();
    await mdMsg.locator("table th", { hasText: "File" }).waitFor({ timeout: 30000 });
    if ((await mdMsg.locator("table td").allInnerTexts()).join("|") !== "a.rs|10") throw new Error("the table cells are wrong");
    await mdMsg.locator("li ul li", { hasText: "inner" }).waitFor({ timeout: 5000 });
    await mdMsg.locator("strong code", { hasText: "cargo test" }).waitFor({ timeout: 5000 });
    await mdMsg.locator(".codeblock code.language-ts .hljs-keyword", { hasText: "const" }).waitFor({ timeout: 5000 });
    await mdMsg.getByRole("button", { name: "Copy code" }).click();
    let clip = "";
    for (let i = 0; !clip.includes("E2E-INSERTED") && i < 40; i++) {
      await page.waitForTimeout(250);
      // Read where the focus is (the webview, after the click), else in the workbench.
      clip = await view.locator("body").evaluate(() => navigator.clipboard.readText()).catch(() => page.evaluate(() => navigator.clipboard.readText()).catch((e) => String(e)));
    }
    if (clip !== 'const inserted = "E2E-INSERTED";') throw new Error(`Copy did not put the code on the clipboard: ${JSON.stringify(clip)}`);
    await mdMsg.getByRole("button", { name: "Insert code at cursor" }).click();
    await page.locator(".part.editor .monaco-editor .view-lines", { hasText: 'const inserted = "E2E-INSERTED";' }).first().waitFor({ timeout: 10000 });
    await page.locator(".tab.active", { hasText: "README.md" }).waitFor({ timeout: 5000 });
    say("markdown: table, nested list, code in bold, highlighted code; Copy and Insert work");

    // Every button in the view has an accessible name, and a keyboard focus ring.
    const unnamed = await view.locator("body").evaluate(() =>
      [...document.querySelectorAll("button")].filter((b) => !(b.getAttribute("aria-label") || b.textContent.trim() || b.title)).map((b) => b.outerHTML),
    );
    if (unnamed.length) throw new Error(`buttons without an accessible name: ${unnamed}`);
    const copyButton = mdMsg.getByRole("button", { name: "Copy code" });
    await copyButton.focus();
    await page.keyboard.press("Shift+Tab");
    await page.keyboard.press("Tab");
    const ring = await copyButton.evaluate((b) => getComputedStyle(b).outlineStyle + " " + getComputedStyle(b).outlineWidth);
    if (!ring.startsWith("solid") || ring.endsWith(" 0px")) throw new Error(`no visible focus on a focused button: ${ring}`);

    // High Contrast: code is readable on its background and buttons have borders.
    const pickTheme = async (filter, name) => {
      await page.locator(".monaco-workbench").click({ position: { x: 700, y: 300 } });
      await page.keyboard.press("Control+K");
      await page.keyboard.press("Control+T"); // Preferences: Color Theme
      await page.waitForSelector(".quick-input-widget:not([style*='display: none']) input", { timeout: 20000 });
      await page.keyboard.type(filter);
      const row = page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first();
      await row.waitFor({ timeout: 20000 });
      await page.waitForTimeout(300);
      await row.click(); // Enter would take the highlighted row, which may be "Browse Additional Color Themes"
    };
    await pickTheme("High Contrast", /Default High Contrast(?! Light)/);
    await view.locator("body.vscode-high-contrast").waitFor({ state: "attached", timeout: 20000 });
    const hc = await mdMsg.locator(".codeblock").evaluate((block) => {
      const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
      const lum = ([r, g, b]) => [r, g, b].map((v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)).reduce((a, v, i) => a + v * [0.2126, 0.7152, 0.0722][i], 0);
      const bgOf = (el) => {
        for (; el; el = el.parentElement) {
          const c = rgb(getComputedStyle(el).backgroundColor);
          if (c.length >= 3 && (c.length < 4 || c[3] > 0)) return c;
        }
        return [0, 0, 0];
      };
      const ratio = (el) => {
        const [a, b] = [lum(rgb(getComputedStyle(el).color)), lum(bgOf(el))];
        return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      };
      const tokens = [block.querySelector("code"), ...block.querySelectorAll("code span")];
      const button = block.querySelector("button");
      return { worst: Math.min(...tokens.map(ratio)), border: getComputedStyle(button).borderTopWidth + " " + getComputedStyle(button).borderTopColor };
    });
    if (hc.worst < 4.5) throw new Error(`code in High Contrast has a contrast ratio of ${hc.worst.toFixed(2)}`);
    if (hc.border.startsWith("0px") || /rgba\(0, 0, 0, 0\)/.test(hc.border)) throw new Error(`buttons in High Contrast have no border: ${hc.border}`);
    // "Jump to latest" floats over the text: in High Contrast too it has a background of its
    // own (opaque) its text reads on. Shown for the measure, then hidden as it was.
    const jumpLook = await view.locator("button#jump").evaluate((b) => {
      const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
      const lum = ([r, g, b]) => [r, g, b].map((v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)).reduce((a, v, i) => a + v * [0.2126, 0.7152, 0.0722][i], 0);
      const was = b.hidden;
      b.hidden = false;
      const cs = getComputedStyle(b);
      const bg = rgb(cs.backgroundColor);
      const [a, c] = [lum(rgb(cs.color)), lum(bg)];
      const look = { background: cs.backgroundColor, opaque: bg.length === 3 || bg[3] === 1, ratio: (Math.max(a, c) + 0.05) / (Math.min(a, c) + 0.05) };
      b.hidden = was;
      return look;
    });
    if (!jumpLook.opaque || jumpLook.ratio < 4.5) throw new Error(`"Jump to latest" in High Contrast: ${JSON.stringify(jumpLook)}`);
    await page.screenshot({ path: SHOT.replace(/\.png$/, "-high-contrast.png") });
    await pickTheme("Dark Modern", /Default Dark Modern/);
    await view.locator("body.vscode-dark").waitFor({ state: "attached", timeout: 20000 });
    say(`every button named, focus visible; High Contrast: code contrast ${hc.worst.toFixed(1)}:1, button border ${hc.border}, Jump to latest on ${jumpLook.background} (${jumpLook.ratio.toFixed(1)}:1)`);

    // 9c. Context: `@` completes workspace files (picked by keyboard, sent as context the model
    // reads); the current file's chip, removed before sending, is not sent, and is back for the
    // next message.
    const lastUserMessage = () => {
      const m = fake.requests.filter((q) => q.api === "openai").at(-1).body.messages.filter((x) => x.role === "user").at(-1);
      return typeof m.content === "string" ? m.content : JSON.stringify(m.content);
    };
    const chipsBox = view.locator("#chips");
    await chipsBox.locator(".chip[data-kind='file']", { hasText: "README.md" }).waitFor({ timeout: 20000 });
    await promptBox.fill("");
    await promptBox.pressSequentially("E2E-MENTION: what is in @mention-ta");
    const activeMention = view.locator("#mentions [role='option'][aria-selected='true']");
    await activeMention.filter({ hasText: "src/mention-target.ts" }).waitFor({ timeout: 20000 });
    if ((await promptBox.getAttribute("aria-expanded")) !== "true" || (await promptBox.getAttribute("aria-activedescendant")) !== (await activeMention.getAttribute("id")))
      throw new Error("the @ popup is not announced as the input's open listbox");
    await promptBox.press("Enter");
    if ((await promptBox.inputValue()) !== "E2E-MENTION: what is in @mention-target.ts ") throw new Error(`picking the mention left ${JSON.stringify(await promptBox.inputValue())}`);
    if (await view.locator("#mentions").isVisible()) throw new Error("the @ popup stayed open after the pick");
    // A folder, chosen with the arrows and Tab; Escape closes the popup and keeps the text.
    await promptBox.pressSequentially("and @sr");
    await view.locator("#mentions [role='option'] .mkind", { hasText: "folder" }).first().waitFor({ timeout: 20000 });
    for (let i = 0; !(await activeMention.filter({ hasText: "folder" }).count()); i++) {
      if (i > 10) throw new Error("ArrowDown did not reach the folder in the @ popup");
      await promptBox.press("ArrowDown");
    }
    await promptBox.press("Tab");
    if ((await promptBox.inputValue()) !== "E2E-MENTION: what is in @mention-target.ts and @src ") throw new Error(`picking the folder left ${JSON.stringify(await promptBox.inputValue())}`);
    await promptBox.pressSequentially("@READ");
    await activeMention.filter({ hasText: "README.md" }).waitFor({ timeout: 20000 });
    await promptBox.press("Escape");
    if (await view.locator("#mentions").isVisible()) throw new Error("Escape did not close the @ popup");
    for (let i = 0; i < 5; i++) await promptBox.press("Backspace");
    const fileChipRemove = chipsBox.locator(".chip[data-kind='file'] button.chip-remove");
    await fileChipRemove.focus();
    await page.keyboard.press("Enter");
    await chipsBox.locator(".chip[data-kind='file']").waitFor({ state: "detached", timeout: 5000 });
    fake.script("E2E-MENTION", { chunks: [{ content: "It exports MENTION_MARK." }] });
    await promptBox.press("Enter");
    await view.locator(".msg.agent", { hasText: "It exports MENTION_MARK." }).waitFor({ timeout: 30000 });
    const mentionAsk = lastUserMessage();
    if (!mentionAsk.includes("MENTION_MARK = 42") || !mentionAsk.includes("mention-target.ts")) throw new Error(`the mentioned file did not reach the model: ${mentionAsk.slice(0, 400)}`);
    if (mentionAsk.includes("# demo workspace")) throw new Error("the removed current-file chip (README.md) was sent");
    if (!mentionAsk.includes("[src/](file://")) throw new Error(`the mentioned folder did not reach the model: ${mentionAsk.slice(0, 600)}`);
    await view.locator(".msg.user").last().locator(".chip", { hasText: "mention-target.ts" }).waitFor({ timeout: 5000 });
    if ((await view.locator(".msg.user").last().locator(".chip", { hasText: "README.md" }).count()) !== 0) throw new Error("the sent message shows the removed chip");
    await chipsBox.locator(".chip[data-kind='file']", { hasText: "README.md" }).waitFor({ timeout: 5000 });
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    say("@ mentions (a file with Enter, a folder with ArrowDown + Tab, Escape closes) reached the model; the removed current-file chip was not sent");
    // Edit last puts back the text and its context (the mentions' attachments, the current
    // file's chip left out as it was): sent again, the model gets the very same message.
    await view.locator("button#edit-last").click();
    if ((await promptBox.inputValue()) !== "E2E-MENTION: what is in @mention-target.ts and @src ") throw new Error(`Edit last put ${JSON.stringify(await promptBox.inputValue())} in the input`);
    if ((await chipsBox.locator(".chip[data-kind='file']", { hasText: "README.md" }).count()) !== 0) throw new Error("Edit last brought back the current-file chip the prompt was sent without");
    fake.script("E2E-MENTION", { chunks: [{ content: "Again: MENTION_MARK." }] });
    await promptBox.press("Enter");
    await view.locator(".msg.agent", { hasText: "Again: MENTION_MARK." }).waitFor({ timeout: 30000 });
    const editedAsk = lastUserMessage();
    if (editedAsk !== mentionAsk) throw new Error(`Edit last then Send did not send the same context: ${editedAsk.slice(0, 600)}`);
    await chipsBox.locator(".chip[data-kind='file']", { hasText: "README.md" }).waitFor({ timeout: 5000 });
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    say("Edit last restored the mentions' attachments: sent again, the model got the same message");

    // 9c2. The editor's own context: `@problems` sends the problems VS Code reports in the open
    // files (a JSON file with a syntax error), and "Fix with Corvid", a quick fix on that
    // problem (F8 to it, Ctrl+.), sends it with the lines around it.
    await page.locator(".monaco-workbench").click({ position: { x: 700, y: 300 } });
    await page.keyboard.press("F1");
    await page.waitForSelector(".quick-input-widget:not([style*='display: none']) input", { timeout: 20000 });
    await page.keyboard.press("Backspace");
    await page.keyboard.type("broken.json");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "broken.json" }).first().waitFor({ timeout: 20000 });
    await page.keyboard.press("Enter");
    await page.locator(".tab.active", { hasText: "broken.json" }).waitFor({ timeout: 20000 });
    await page.locator(".monaco-editor .squiggly-error").first().waitFor({ timeout: 60000 });
    await promptBox.fill("");
    await promptBox.pressSequentially("E2E-PROBLEMS: what is wrong in @probl");
    await activeMention.filter({ hasText: "problems" }).waitFor({ timeout: 20000 });
    await promptBox.press("Enter");
    fake.script("E2E-PROBLEMS", { chunks: [{ content: "A comma is missing." }] });
    await promptBox.press("Enter");
    await view.locator(".msg.agent", { hasText: "A comma is missing." }).waitFor({ timeout: 30000 });
    const problemsAsk = lastUserMessage();
    if (!/broken\.json:3:\d+: error: /.test(problemsAsk)) throw new Error(`@problems did not send the JSON file's problem: ${problemsAsk.slice(0, 600)}`);
    await view.locator(".msg.user").last().locator(".chip[data-kind='context']", { hasText: "problems" }).waitFor({ timeout: 5000 });
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    await page.locator(".part.editor .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+Home");
    await page.keyboard.press("F8"); // Go to Next Problem: the cursor on it
    await page.waitForTimeout(500);
    await page.keyboard.press("Escape");
    fake.script("Fix this error in broken.json", { chunks: [{ content: "Added the comma." }] });
    await page.keyboard.press("Control+.");
    // The quick-fix menu (its pointer block takes clicks): the row chosen with the keyboard.
    const fixRow = page.locator(".action-widget .monaco-list-row", { hasText: "Fix with Corvid" }).first();
    await fixRow.waitFor({ timeout: 20000 });
    for (let i = 0; !(await fixRow.getAttribute("class")).includes("focused"); i++) {
      if (i > 10) throw new Error("the quick-fix menu never focused Fix with Corvid");
      await page.keyboard.press("ArrowDown");
    }
    await page.keyboard.press("Enter");
    await view.locator(".msg.agent", { hasText: "Added the comma." }).waitFor({ timeout: 30000 });
    const fixAsk = lastUserMessage();
    if (!fixAsk.includes("Fix this error in broken.json at line 3") || !fixAsk.includes('"port": 80 81')) throw new Error(`Fix with Corvid sent: ${fixAsk.slice(0, 600)}`);
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    // broken.json's tab closed (middle click); README.md stays, with its unsaved line.
    await page.locator(".tab", { hasText: "broken.json" }).click({ button: "middle" });
    await page.locator(".tab", { hasText: "broken.json" }).waitFor({ state: "detached", timeout: 10000 });
    say("@problems sent the open JSON file's problem; Fix with Corvid (a quick fix) sent it with its lines");

    // 9c3. `@changes` sends the working tree's git changes: the workspace made a repository for
    // this step (one commit), a committed line changed on disk; the model gets git's status and
    // the diff. The repository is removed again after.
    const gitIn = (...args) => execFileSync("git", ["-C", work, "-c", "user.email=e2e@corvid.invalid", "-c", "user.name=e2e", ...args], { stdio: "pipe" });
    fs.writeFileSync(path.join(work, "changes.txt"), "the committed line\n");
    gitIn("init", "-q");
    gitIn("add", "changes.txt");
    gitIn("commit", "-q", "-m", "base");
    fs.writeFileSync(path.join(work, "changes.txt"), "the changed line\n");
    await promptBox.fill("");
    await promptBox.pressSequentially("E2E-CHANGES: review @chang");
    await activeMention.filter({ hasText: "changes" }).waitFor({ timeout: 20000 });
    await promptBox.press("Enter");
    fake.script("E2E-CHANGES", { chunks: [{ content: "One line changed." }] });
    await promptBox.press("Enter");
    await view.locator(".msg.agent", { hasText: "One line changed." }).waitFor({ timeout: 30000 });
    const changesAsk = lastUserMessage();
    if (!changesAsk.includes("M changes.txt") || !changesAsk.includes("-the committed line") || !changesAsk.includes("+the changed line")) throw new Error(`@changes sent: ${changesAsk.slice(0, 800)}`);
    await view.locator(".msg.user").last().locator(".chip[data-kind='context']", { hasText: "changes" }).waitFor({ timeout: 5000 });
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    fs.rmSync(path.join(work, ".git"), { recursive: true, force: true });
    fs.rmSync(path.join(work, "changes.txt"));
    say("@changes sent the working tree's git status and diff");

    // 9d. Add Selection to Chat puts the selection in the message being written as a chip
    // (it stays when the editor's selection changes) and sends nothing until Enter.
    const requestsBeforeAdd = fake.requests.length;
    const usersBeforeAdd = await view.locator(".msg.user").count();
    const readmeEditor = page.locator(".part.editor .monaco-editor .view-lines").first();
    await readmeEditor.click();
    await page.keyboard.press("Control+A");
    await palette("Corvid: Add Selection to Chat", { click: false });
    const addedChip = chipsBox.locator(".chip[data-kind='selection']", { hasText: "README.md:1-" });
    await addedChip.waitFor({ timeout: 20000 });
    for (let i = 0; !(await inputFocused()); i++) {
      if (i > 40) throw new Error("Add Selection to Chat did not focus the chat input");
      await page.waitForTimeout(250);
    }
    await readmeEditor.click(); // the editor's selection collapses
    await page.waitForTimeout(1000);
    if ((await addedChip.count()) !== 1) throw new Error("the added selection's chip went away with the editor's selection");
    if (fake.requests.length !== requestsBeforeAdd || (await view.locator(".msg.user").count()) !== usersBeforeAdd) throw new Error("Add Selection to Chat sent something");
    fake.script("E2E-ADDSEL", { chunks: [{ content: "That is the README." }] });
    await promptBox.fill("E2E-ADDSEL: and this?");
    await promptBox.press("Enter");
    await view.locator(".msg.agent", { hasText: "That is the README." }).waitFor({ timeout: 30000 });
    const addSelAsk = lastUserMessage();
    if (!/README\.md#L1-\d+/.test(addSelAsk) || !addSelAsk.includes("# demo workspace")) throw new Error(`the added selection did not reach the model: ${addSelAsk.slice(0, 400)}`);
    if ((await chipsBox.locator(".chip[data-kind='selection']").count()) !== 0) throw new Error("the added selection stayed for the next message");
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    say("Add Selection to Chat: a chip in the input, nothing sent until Enter, then the selection reached the model");

    // 9e. Images: one pasted and one dropped into the input become chips with thumbnails and
    // reach the model as image parts; one over 5 MB is refused with a message.
    const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    const dispatchFile = (type, name, b64, size) =>
      promptBox.evaluate(
        (el, { type, name, b64, size }) => {
          const bytes = b64 ? Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)) : new Uint8Array(size);
          const dt = new DataTransfer();
          dt.items.add(new File([bytes], name, { type: "image/png" }));
          const ev = new Event(type, { bubbles: true, cancelable: true });
          Object.defineProperty(ev, type === "paste" ? "clipboardData" : "dataTransfer", { value: dt });
          el.dispatchEvent(ev);
        },
        { type, name, b64, size },
      );
    await dispatchFile("paste", "pasted.png", PNG);
    await chipsBox.locator(".chip[data-kind='image'] img.thumb").first().waitFor({ timeout: 10000 });
    await dispatchFile("drop", "dropped.png", PNG);
    await chipsBox.locator(".chip[data-kind='image']", { hasText: "dropped.png" }).waitFor({ timeout: 10000 });
    await dispatchFile("paste", "huge.png", null, 6 * 1024 * 1024);
    await view.locator("#composer-note", { hasText: "the limit is 5 MB" }).waitFor({ timeout: 10000 });
    if ((await chipsBox.locator(".chip[data-kind='image']").count()) !== 2) throw new Error("the image over 5 MB was attached");
    fake.script("E2E-IMAGE", { chunks: [{ content: "Two dots." }] });
    await promptBox.fill("E2E-IMAGE: what is in the pictures?");
    await promptBox.press("Enter");
    await view.locator(".msg.agent", { hasText: "Two dots." }).waitFor({ timeout: 30000 });
    const imageAsk = fake.requests.filter((q) => q.api === "openai").at(-1).body.messages.filter((x) => x.role === "user").at(-1).content;
    const imageParts = Array.isArray(imageAsk) ? imageAsk.filter((p) => p.type === "image_url") : [];
    if (imageParts.length !== 2 || imageParts.some((p) => p.image_url.url !== `data:image/png;base64,${PNG}`)) throw new Error(`the images did not reach the model: ${JSON.stringify(imageAsk).slice(0, 400)}`);
    if ((await view.locator(".msg.user").last().locator(".chip[data-kind='image']").count()) !== 2) throw new Error("the sent message does not show its two images");
    if ((await chipsBox.locator(".chip[data-kind='image']").count()) !== 0) throw new Error("the sent images stayed in the input");
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    await page.screenshot({ path: SHOT.replace(/\.png$/, "-context.png") });
    say("a pasted and a dropped image reached the model as image parts; one over 5 MB was refused");
    // A model that takes no images (Corvid's catalog; here the config's [models."fake-model-2"]):
    // an image chip says it reaches the model only as a file path, and the note says why; back
    // on a model that takes images, the warning goes.
    const modelPicker = view.locator("select[data-config='model']");
    await modelPicker.selectOption("fake-model-2");
    await view.locator("select[data-config='model'] option[value='fake-model-2'][selected]").waitFor({ state: "attached", timeout: 10000 });
    await dispatchFile("paste", "blind.png", PNG);
    await chipsBox.locator(".chip.warn[data-kind='image']", { hasText: "path only" }).waitFor({ timeout: 10000 });
    await view.locator("#composer-note", { hasText: "fake-model-2 takes no images" }).waitFor({ timeout: 10000 });
    await modelPicker.selectOption("fake-model");
    await view.locator("select[data-config='model'] option[value='fake-model'][selected]").waitFor({ state: "attached", timeout: 10000 });
    await chipsBox.locator(".chip.warn").waitFor({ state: "detached", timeout: 10000 });
    if (await view.locator("#composer-note").isVisible()) throw new Error(`the image warning stayed: ${await view.locator("#composer-note").innerText()}`);
    await chipsBox.locator(".chip[data-kind='image'] button.chip-remove").click();
    await chipsBox.locator(".chip[data-kind='image']").waitFor({ state: "detached", timeout: 5000 });
    say("an image for a model that takes none: its chip and the note say it goes as a path only");

    // 10. The pickers change the session: mode "Auto edit" (edits without asking, commands
    // still ask) and model fake-model-2 (the model is sent it). One turn: a plan, an edit of
    // an existing file (a modified document until saved), a command in a client terminal.
    await view.locator("select[data-config='mode']").selectOption("auto-edit");
    await view.locator("select[data-config='model']").selectOption("fake-model-2");
    await view.locator("select[data-config='model'] option[value='fake-model-2'][selected]").waitFor({ state: "attached", timeout: 10000 });
    await view.locator("select[data-config='mode'] option[value='auto-edit'][selected]").waitFor({ state: "attached", timeout: 10000 });
    const plan = (s1, s2, s3) => ({
      name: "update_plan",
      arguments: { entries: [{ content: "Edit hello.txt", status: s1 }, { content: "Run a command", status: s2 }, { content: "Report back", status: s3 }] },
    });
    fake.script("E2E-RICH", {
      steps: [
        { toolCalls: [plan("in_progress", "pending", "pending")] },
        { toolCalls: [{ name: "edit_file", arguments: { path: "hello.txt", old_text: "Hello from", new_text: "Hello again from" } }] },
        { toolCalls: [{ name: "write_file", arguments: { path: "notes/todo.md", content: "- [x] edit hello.txt\n" } }] },
        { toolCalls: [plan("completed", "in_progress", "pending")] },
        // The second half must fail: the in-process core runs commands through the sandbox
        // launcher shipped in the VSIX, with code-server's own Node.
        // It prints hello.txt first: a command must see the agent's edit, not the file as it was.
        { toolCalls: [{ name: "run_command", arguments: { command: "cat hello.txt; echo corvid-terminal-ok; echo pwned > ../escape.txt" } }] },
        { toolCalls: [plan("completed", "completed", "in_progress")] },
        { chunks: [{ content: "Edited **hello.txt** and ran the command." }] },
      ],
    });
    const permissionsBefore = await view.locator(".permission").count();
    const requestsBefore = fake.requests.length;
    await promptBox.fill("E2E-RICH: plan, edit hello.txt, run a command");
    await promptBox.press("Enter");
    const allowCommand = view.locator(".permission:not(.answered) button.perm[data-option='allow_once']");
    await allowCommand.waitFor({ timeout: 30000 });
    const askedFor = await view.locator(".permission:not(.answered) .ptitle").innerText();
    if (!askedFor.includes("cat hello.txt")) throw new Error(`auto-edit mode should ask only for the command, asked: ${askedFor}`);
    // 10a. At VS Code's narrowest sidebar (170 px), with "Working…", a pending permission, and
    // cards with Open diff on screen: nothing sticks out of the view and the status is whole.
    const wideWidth = await dragSidebarTo(170);
    for (let i = 0; (await viewWidth()) > 200; i++) {
      if (i > 40) throw new Error(`the sidebar did not get narrow: the view is ${await viewWidth()} px wide`);
      await page.waitForTimeout(250);
    }
    await page.waitForTimeout(300);
    const narrow = await view.locator("body").evaluate(() => {
      const width = document.documentElement.clientWidth;
      const out = [...document.querySelectorAll("button")]
        .filter((b) => b.offsetParent !== null && !b.closest("[hidden]"))
        .map((b) => ({ name: b.textContent.trim() || b.getAttribute("aria-label"), right: b.getBoundingClientRect().right, left: b.getBoundingClientRect().left }))
        .filter((b) => b.right > width + 0.5 || b.left < -0.5);
      const status = document.getElementById("status");
      const t = document.getElementById("transcript");
      return {
        width,
        out,
        status: status.textContent,
        statusClipped: status.scrollWidth > status.clientWidth || status.getBoundingClientRect().right > width + 0.5,
        transcriptOverflow: t.scrollWidth - t.clientWidth,
        documentOverflow: document.documentElement.scrollWidth - width,
        openDiffs: document.querySelectorAll("button.open-diff").length,
        permissionButtons: document.querySelectorAll(".permission:not(.answered) button.perm").length,
      };
    });
    await page.screenshot({ path: SHOT.replace(/\.png$/, "-narrow.png") });
    if (narrow.out.length) throw new Error(`at ${narrow.width} px these buttons stick out of the view: ${JSON.stringify(narrow.out)}`);
    if (narrow.status !== "Working…" || narrow.statusClipped) throw new Error(`the status at ${narrow.width} px: ${JSON.stringify(narrow.status)}, clipped: ${narrow.statusClipped}`);
    if (narrow.transcriptOverflow > 0 || narrow.documentOverflow > 0) throw new Error(`the view scrolls sideways at ${narrow.width} px: ${JSON.stringify(narrow)}`);
    if (narrow.openDiffs < 1 || narrow.permissionButtons < 2) throw new Error(`the narrow check needs Open diff and a pending permission on screen: ${JSON.stringify(narrow)}`);
    await dragSidebarTo(wideWidth);
    for (let i = 0; (await viewWidth()) < wideWidth - 60; i++) {
      if (i > 40) throw new Error(`the sidebar did not get wide again: ${await viewWidth()} px`);
      await page.waitForTimeout(250);
    }
    say(`narrow: at ${narrow.width} px every button (${narrow.permissionButtons} permission, ${narrow.openDiffs} Open diff) inside the view, "Working…" whole`);
    await allowCommand.click();
    await view.locator(".msg.agent", { hasText: "Edited hello.txt and ran the command." }).waitFor({ timeout: 30000 });
    await view.locator("body[data-last-stop='end_turn']").waitFor({ timeout: 10000 });
    // Three plan updates, one plan card (and no "Update plan" cards of their own).
    if ((await view.locator(".transcript .plan").count()) !== 1) throw new Error(`expected one plan card, got ${await view.locator(".transcript .plan").count()}`);
    if ((await view.locator(".tool:visible", { hasText: "Update plan" }).count()) !== 0) throw new Error("plan updates are drawn as tool cards");
    if ((await view.locator(".permission").count()) !== permissionsBefore + 1) throw new Error("the edit asked for permission in auto-edit mode");
    const richModels = fake.requests.slice(requestsBefore).filter((q) => q.api === "openai").map((q) => q.body.model);
    const todo = path.join(work, "notes/todo.md");
    if (!fs.existsSync(todo) || fs.readFileSync(todo, "utf8") !== "- [x] edit hello.txt\n") throw new Error("notes/todo.md (in a new folder) is not on disk");
    if (richModels.length < 6 || richModels.some((m) => m !== "fake-model-2")) throw new Error(`the model picker did not reach the model: ${richModels}`);
    const planItems = await view.locator(".plan li").allInnerTexts();
    if (planItems.length !== 3 || !planItems[0].includes("Edit hello.txt")) throw new Error(`plan not rendered: ${planItems}`);
    if ((await view.locator(".plan li.completed").count()) !== 2) throw new Error("plan statuses not rendered");
    await view.locator("pre.out.terminal", { hasText: "corvid-terminal-ok" }).waitFor({ timeout: 10000 });
    const commandSaw = await view.locator("pre.out.terminal", { hasText: "corvid-terminal-ok" }).last().innerText();
    if (!commandSaw.includes("Hello again from Corvid")) throw new Error(`the command ran on the file as it was before the edit: ${commandSaw}`);
    if (!landlock) say("no Landlock on this kernel: the sandbox check is skipped");
    else if (fs.existsSync(path.join(W, "escape.txt"))) throw new Error("the command wrote beside the workspace: it ran unconfined");
    // The edit of the existing file went through the editor and was saved: on disk, tab clean.
    if (read() !== "Hello again from Corvid in VS Code\n") throw new Error(`the agent's edit is not on disk: ${JSON.stringify(read())}`);
    if ((await page.locator(".tab.dirty", { hasText: "hello.txt" }).count()) !== 0) throw new Error("the agent's edit of hello.txt was left unsaved");
    say("mode + model pickers reached the agent; plan and terminal output rendered; the command saw the saved edit");
    // The edited file, for the picture (the created notes/todo.md took the preview tab): its link on the card.
    await view.locator("button.path.link[data-path$='hello.txt']").last().click();
    await page.locator(".tab.active", { hasText: /^hello\.txt/ }).waitFor({ timeout: 10000 });
    fs.mkdirSync(path.dirname(SHOT), { recursive: true });
    await page.waitForTimeout(500);
    await page.screenshot({ path: SHOT });
    say(`screenshot ${SHOT}`);
    // ... which Undo takes back and Redo re-applies, in the editor.
    const editorText = page.locator(".part.editor .editor-group-container.active .monaco-editor .view-lines").last();
    await editorText.filter({ hasText: "Hello again from Corvid" }).waitFor({ timeout: 10000 });
    await editorText.click();
    await page.keyboard.press("Control+Z");
    await editorText.filter({ hasText: "Hello from Corvid" }).waitFor({ timeout: 10000 });
    // The undo is only in the editor; a command now runs on it: the agent's documents that are
    // modified again are saved before a command starts.
    await page.locator(".tab.dirty", { hasText: "hello.txt" }).first().waitFor({ timeout: 10000 });
    fake.script("E2E-UNDONE", {
      steps: [{ toolCalls: [{ name: "run_command", arguments: { command: "cat hello.txt; echo corvid-undone-ok" } }] }, { chunks: [{ content: "Printed it." }] }],
    });
    await promptBox.fill("E2E-UNDONE: print hello.txt");
    await promptBox.press("Enter");
    await allowCommand.waitFor({ timeout: 30000 });
    await allowCommand.click();
    await view.locator(".msg.agent", { hasText: "Printed it." }).waitFor({ timeout: 30000 });
    const undoneSaw = await view.locator("pre.out.terminal", { hasText: "corvid-undone-ok" }).last().innerText();
    if (!undoneSaw.includes("Hello from Corvid") || undoneSaw.includes("Hello again")) throw new Error(`the command did not run on the editor's text: ${undoneSaw}`);
    if (read() !== "Hello from Corvid in VS Code\n") throw new Error(`the undone edit was not saved before the command: ${read()}`);
    say("a command after an undo in the editor ran on the saved, undone file");
    await editorText.click();
    await page.keyboard.press("Control+Shift+Z");
    await editorText.filter({ hasText: "Hello again from Corvid" }).waitFor({ timeout: 10000 });
    say("the edit undoes and redoes in the editor");
    await palette("File: Save All Files");
    for (let i = 0; read() !== "Hello again from Corvid in VS Code\n"; i++) {
      if (i > 40) throw new Error(`hello.txt not saved: ${read()}`);
      await page.waitForTimeout(250);
    }
    say("the edit is on disk after Save All");

    // 10b. Undo this turn: the E2E-RICH turn's edit of hello.txt is put back and the file it
    // created (notes/todo.md) removed. Only the four turns that wrote files (hello.txt, the
    // kept hunk of review.txt, in-editor.txt, E2E-RICH) offer an undo.
    const checkpoints = view.locator(".checkpoint");
    if ((await checkpoints.count()) !== 4) throw new Error(`expected an undo on the four turns that wrote files, got ${await checkpoints.count()}`);
    const richCheckpoint = checkpoints.last();
    if (!(await richCheckpoint.innerText()).includes("todo.md")) throw new Error(`the last undo is not the E2E-RICH turn's: ${await richCheckpoint.innerText()}`);
    await richCheckpoint.getByRole("button", { name: /^Undo this turn/ }).click();
    await view.locator(".checkpoint.undone", { hasText: "1 file restored, 1 created file removed" }).waitFor({ timeout: 20000 });
    if (read() !== "Hello from Corvid in VS Code\n") throw new Error(`Undo this turn did not restore hello.txt: ${JSON.stringify(read())}`);
    if (fs.existsSync(todo)) throw new Error("Undo this turn left the created notes/todo.md");
    if ((await page.locator(".tab.dirty", { hasText: "hello.txt" }).count()) !== 0) throw new Error("the undone hello.txt was left unsaved");
    await editorText.filter({ hasText: "Hello from Corvid" }).waitFor({ timeout: 10000 });
    say("Undo this turn: hello.txt restored, notes/todo.md removed");

    // 10c. Open in Terminal: a running command's card follows its output and opens it in a
    // VS Code terminal, which streams the rest and ends with the exit code; closing that
    // terminal does not stop the command. The command waits for a file the test creates.
    const flag = path.join(work, "go.flag");
    fake.script("E2E-TERM", {
      steps: [
        { toolCalls: [{ name: "run_command", arguments: { command: "echo term-started; while [ ! -f go.flag ]; do sleep 0.2; done; echo term-finished; exit 3" } }] },
        { chunks: [{ content: "The command ended." }] },
      ],
    });
    await promptBox.fill("E2E-TERM: run a command that waits");
    await promptBox.press("Enter");
    await allowCommand.waitFor({ timeout: 30000 });
    await allowCommand.click();
    const termCard = view.locator(".tool", { has: view.locator("pre.out.terminal", { hasText: "term-started" }) }).last();
    await termCard.locator("pre.out.terminal.live").waitFor({ timeout: 30000 });
    await termCard.locator(".texit", { hasText: "running" }).waitFor({ timeout: 5000 });
    const openTerminal = termCard.getByRole("button", { name: /^Open the output of/ });
    const xterm = page.locator(".part.panel .xterm-rows");
    await openTerminal.click();
    await xterm.filter({ hasText: "term-started" }).first().waitFor({ timeout: 30000 });
    await palette("Terminal: Kill the Active Terminal Instance");
    await xterm.filter({ hasText: "term-started" }).first().waitFor({ state: "detached", timeout: 20000 });
    await page.waitForTimeout(500);
    if ((await termCard.locator(".texit").innerText()) !== "running") throw new Error(`closing the terminal ended the command: ${await termCard.locator(".texit").innerText()}`);
    await openTerminal.click();
    await xterm.filter({ hasText: "term-started" }).first().waitFor({ timeout: 30000 });
    fs.writeFileSync(flag, "");
    await xterm.filter({ hasText: "term-finished" }).filter({ hasText: "exit code 3" }).first().waitFor({ timeout: 30000 });
    await termCard.locator(".texit.failed", { hasText: "exit code 3" }).waitFor({ timeout: 20000 });
    await view.locator(".msg.agent", { hasText: "The command ended." }).waitFor({ timeout: 30000 });
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    fs.rmSync(flag, { force: true });
    say("Open in Terminal: live output streamed into a VS Code terminal; closing it left the command running; exit code 3 on the card and in the terminal");

    // The chat view's title actions (Open Past Chat, New Chat).
    const viewAction = (label) => page.locator(`.part.sidebar a.action-label[aria-label^='${label}']`).first();

    // 10d. A command that asks a question: it runs in a VS Code terminal of its own, made as it
    // starts and headed by the user's command (not the sandbox launcher), and what the user
    // types there reaches it.
    fake.script("E2E-ASK", {
      steps: [
        { toolCalls: [{ name: "run_command", arguments: { command: "printf 'name? '; read name; echo \"hello, $name\"" } }] },
        { chunks: [{ content: "It greeted you." }] },
      ],
    });
    await promptBox.fill("E2E-ASK: run a command that asks for a name");
    await promptBox.press("Enter");
    await allowCommand.waitFor({ timeout: 30000 });
    await allowCommand.click();
    const askTerm = page.locator(".part.panel .xterm", { has: page.locator(".xterm-rows", { hasText: "name?" }) }).first();
    await askTerm.waitFor({ timeout: 30000 });
    const askHead = await askTerm.locator(".xterm-rows").innerText();
    if (!askHead.includes("$ printf 'name? '; read name") || /sandbox|policy|roots/.test(askHead)) throw new Error(`the command's terminal shows: ${askHead}`);
    await askTerm.click();
    await page.keyboard.type("Corvid");
    await page.keyboard.press("Enter");
    await view.locator("pre.out.terminal", { hasText: "hello, Corvid" }).waitFor({ timeout: 30000 });
    await view.locator(".msg.agent", { hasText: "It greeted you." }).waitFor({ timeout: 30000 });
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    await page.screenshot({ path: SHOT.replace(/\.png$/, "-terminal.png") });
    say("a command's own terminal opened as it started, headed by its command; the typed answer reached it");
    // `@terminal` sends that command's output.
    await promptBox.fill("");
    await promptBox.pressSequentially("E2E-TERMCTX: what did it print? @termi");
    await activeMention.filter({ hasText: "terminal" }).waitFor({ timeout: 20000 });
    await promptBox.press("Enter");
    fake.script("E2E-TERMCTX", { chunks: [{ content: "It greeted Corvid." }] });
    await promptBox.press("Enter");
    await view.locator(".msg.agent", { hasText: "It greeted Corvid." }).waitFor({ timeout: 30000 });
    if (!lastUserMessage().includes("hello, Corvid") || !lastUserMessage().includes("exit code 0")) throw new Error(`@terminal sent: ${lastUserMessage().slice(0, 600)}`);
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });

    // 10e. Layout with long words and paths: a plan card lower down, a pending question about
    // a long path, at 300 and 170 px. No text runs past its card's edge; a wheel at the
    // transcript's end leaves the toolbar where it is (the plan's screen-reader text once made
    // the page itself scroll); past chats show their titles and dates.
    const longName = "quarterly_pricing_calculations_for_customer_accounts_and_invoices.py";
    fs.mkdirSync(path.join(work, "src/pricing"), { recursive: true });
    fs.writeFileSync(path.join(work, "src/pricing", longName), "RATE = 3\n");
    fake.script("E2E-LAYOUT", {
      steps: [
        { toolCalls: [{ name: "update_plan", arguments: { entries: [{ content: `Read src/pricing/${longName}`, status: "in_progress" }, { content: "Check_every_customer_account_invoice_total_against_the_quarterly_rate", status: "pending" }] } }] },
        { toolCalls: [{ name: "read_file", arguments: { path: `src/pricing/${longName}` } }] },
        { toolCalls: [{ name: "run_command", arguments: { command: `wc -l src/pricing/${longName}` } }] },
        { chunks: [{ content: `Read \`src/pricing/${longName}\`: RATE is 3.` }] },
      ],
    });
    await promptBox.fill("E2E-LAYOUT: check the pricing file");
    await promptBox.press("Enter");
    await allowCommand.waitFor({ timeout: 30000 });
    const overflowing = () =>
      view.locator("body").evaluate(() => {
        const out = [];
        for (const card of document.getElementById("transcript").children) {
          const box = card.getBoundingClientRect();
          if (!box.width) continue;
          const texts = document.createTreeWalker(card, NodeFilter.SHOW_TEXT);
          for (let n; (n = texts.nextNode()); ) {
            const el = n.parentElement;
            if (!n.textContent.trim() || el.closest("[hidden], .sr-only")) continue;
            // Text inside a box that scrolls sideways or clips (code, output, an ellipsis) may run on.
            let clipped = false;
            for (let e = el; e && e !== card && !clipped; e = e.parentElement) clipped = getComputedStyle(e).overflowX !== "visible";
            if (clipped) continue;
            const range = document.createRange();
            range.selectNodeContents(n);
            for (const r of range.getClientRects())
              if (r.right > box.right + 0.5 || r.left < box.left - 0.5) out.push({ card: card.className, text: n.textContent.slice(0, 50), right: Math.round(r.right), cardRight: Math.round(box.right) });
          }
        }
        return out;
      });
    const toolbarTop = () => view.locator(".toolbar").evaluate((t) => ({ top: t.getBoundingClientRect().top, page: document.scrollingElement.scrollTop }));
    const wheelAtEnd = async () => {
      await transcriptBox.evaluate((t) => (t.scrollTop = t.scrollHeight));
      await transcriptBox.hover();
      for (let i = 0; i < 4; i++) {
        await page.mouse.wheel(0, 3000);
        await page.waitForTimeout(150);
      }
      return toolbarTop();
    };
    const pastTitles = async () => {
      await viewAction("Open Past Chat").click();
      await view.locator("#history button.session").first().waitFor({ timeout: 20000 });
      const rows = await view.locator("#history li").evaluateAll((lis) =>
        lis.map((li) => {
          const [title, date] = [li.querySelector(".stitle"), li.querySelector(".sdate")];
          return { row: li.clientWidth, title: title.getBoundingClientRect().width, text: title.textContent, dateClipped: date.scrollWidth > date.clientWidth + 1 };
        }),
      );
      await view.locator("#history-close").click();
      return rows;
    };
    const layoutAt = async (width) => {
      await dragSidebarTo(width);
      for (let i = 0; Math.abs((await viewWidth()) - width) > 30; i++) {
        if (i > 40) throw new Error(`the sidebar did not get to ${width} px: the view is ${await viewWidth()} px wide`);
        await page.waitForTimeout(250);
      }
      await page.waitForTimeout(400);
      const before = await toolbarTop();
      const over = await overflowing();
      const after = await wheelAtEnd();
      const titles = await pastTitles();
      await page.screenshot({ path: SHOT.replace(/\.png$/, `-layout-${width}.png`) });
      if (over.length) throw new Error(`at ${await viewWidth()} px text runs past its card: ${JSON.stringify(over)}`);
      if (after.top !== before.top || after.page !== 0) throw new Error(`at ${await viewWidth()} px the wheel at the transcript's end moved the page: toolbar ${before.top} → ${after.top}, page scrolled ${after.page} px`);
      const short = titles.filter((r) => r.title < r.row * (width >= 300 ? 0.6 : 0.45) || (width >= 300 && r.dateClipped));
      if (!titles.length || short.length) throw new Error(`at ${await viewWidth()} px past chats' titles get too little room: ${JSON.stringify(titles)}`);
      return titles;
    };
    const layoutWide = await dragSidebarTo(300);
    await view.locator(".plan li", { hasText: "Check_every_customer" }).waitFor({ timeout: 10000 });
    const at300 = await layoutAt(300);
    const at170 = await layoutAt(170);
    await dragSidebarTo(layoutWide);
    for (let i = 0; (await viewWidth()) < layoutWide - 60; i++) {
      if (i > 40) throw new Error(`the sidebar did not get wide again: ${await viewWidth()} px`);
      await page.waitForTimeout(250);
    }
    await allowCommand.click();
    await view.locator(".msg.agent", { hasText: "RATE is 3." }).waitFor({ timeout: 30000 });
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    say(`layout at 300 and 170 px: long paths and words inside their cards, the wheel at the end leaves the toolbar, past chats' titles ${at300[0].title.toFixed(0)} / ${at170[0].title.toFixed(0)} px wide`);

    // 11. Set API Key: the key goes to secret storage, the restarted agent sends it to the
    // model, and it is not in settings.json.
    const KEY = "sk-e2e-secret-4f2a";
    await palette("Corvid: Set API Key");
    await page.waitForSelector(".quick-input-widget:not([style*='display: none']) input[type='password']", { timeout: 20000 });
    await page.keyboard.type(KEY);
    await page.keyboard.press("Enter");
    await page.locator(".notifications-toasts .notification-toast", { hasText: "API key saved" }).first().waitFor({ timeout: 20000 });
    fake.script("E2E-KEY", { chunks: [{ content: "Key received." }] });
    await promptBox.fill("E2E-KEY: which key?");
    await promptBox.press("Enter");
    await view.locator(".msg.agent", { hasText: "Key received." }).waitFor({ timeout: 60000 });
    const keyed = fake.requests.filter((q) => q.api === "openai").at(-1);
    if (keyed.headers.authorization !== `Bearer ${KEY}`) throw new Error(`the model got authorization ${keyed.headers.authorization}`);
    if (fs.readFileSync(settingsFile, "utf8").includes(KEY)) throw new Error("the API key was written to settings.json");
    // Nor in any other file of the user data folder (settings, workspace state) in clear text.
    const holding = [];
    const scan = (dir) => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const f = path.join(dir, e.name);
        if (e.isDirectory()) scan(f);
        else if (e.isFile() && fs.statSync(f).size < 50e6 && fs.readFileSync(f).includes(KEY)) holding.push(f);
      }
    };
    scan(data);
    if (holding.length) throw new Error(`the API key is in clear text in ${holding}`);
    say("Set API Key: the model got the key; no file of the user data folder has it");
    // The key is bound to the endpoint it was saved for: another base URL (the same server
    // under another path), set in the Settings editor, gets no key, and the first one gets it
    // again. The endpoint applies at once (the core restarts with the open chat).
    // The Settings editor searched for `query` (replacing an earlier search left in its box).
    const settingsAt = async (query) => {
      await palette("Preferences: Open Settings (UI)");
      await page.locator(".settings-editor").first().waitFor({ timeout: 20000 });
      await page.waitForTimeout(500);
      await page.keyboard.press("Control+A");
      await page.keyboard.type(query);
    };
    const setBaseUrl = async (value) => {
      await settingsAt("corvid.baseUrl");
      const input = page.locator(".settings-editor .setting-item-contents", { hasText: "OpenAI-compatible endpoint" }).locator("input").first();
      await input.waitFor({ timeout: 20000 });
      await input.fill(value);
      for (let i = 0; JSON.parse(fs.readFileSync(settingsFile, "utf8"))["corvid.baseUrl"] !== value; i++) {
        if (i > 80) throw new Error(`corvid.baseUrl did not become ${value}`);
        await page.waitForTimeout(250);
      }
      // The Settings editor's tab closed (middle click; the palette's "Close Editor" may pick
      // the recently used "Close All Editors"): the files stay open.
      await page.locator(".tab", { hasText: /^Settings/ }).first().click({ button: "middle" });
      await page.locator(".settings-editor").first().waitFor({ state: "detached", timeout: 10000 });
      await page.waitForTimeout(1500);
      await page.locator(".statusbar-item", { hasText: "Corvid: ready" }).first().waitFor({ timeout: 30000 });
      await view.locator(".msg.agent", { hasText: "Key received." }).waitFor({ timeout: 30000 });
    };
    const movedBase = fakeBase.replace(/\/v1$/, "/moved/v1");
    await setBaseUrl(movedBase);
    const beforeMoved = fake.requests.length;
    fake.script("E2E-MOVED", { chunks: [{ content: "No key here." }] });
    await promptBox.fill("E2E-MOVED: which key now?");
    await promptBox.press("Enter");
    await view.locator(".msg.agent", { hasText: "No key here." }).waitFor({ timeout: 60000 });
    const moved = fake.requests.slice(beforeMoved).filter((q) => q.api === "openai");
    if (!moved.length || moved.some((q) => (q.headers.authorization ?? "").includes(KEY))) throw new Error(`the key saved for ${fakeBase} went to ${movedBase}: ${JSON.stringify(moved.map((q) => q.headers.authorization))}`);
    await setBaseUrl(fakeBase);
    fake.script("E2E-BACK", { chunks: [{ content: "Key again." }] });
    await promptBox.fill("E2E-BACK: and now?");
    await promptBox.press("Enter");
    await view.locator(".msg.agent", { hasText: "Key again." }).waitFor({ timeout: 60000 });
    if (fake.requests.filter((q) => q.api === "openai").at(-1).headers.authorization !== `Bearer ${KEY}`) throw new Error("the key did not come back with its endpoint");
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    say("the API key goes only to the endpoint it was saved for (none to another base URL, again once back)");

    // 12. History: the view's "Open Past Chat" action lists this folder's sessions in the
    // webview; picking the first one loads it (session/load) and its replay renders like
    // the live turn did.
    await viewAction("Open Past Chat").click();
    const pastWrite = view.locator("#history button.session", { hasText: "E2E-WRITE" });
    await pastWrite.waitFor({ timeout: 20000 });
    if ((await view.locator("#history button.session").count()) < 2) throw new Error("the history should list both sessions");
    await pastWrite.click();
    await view.locator(".msg.user", { hasText: "E2E-WRITE: create hello.txt with a greeting" }).waitFor({ timeout: 30000 });
    await view.locator(".msg.agent strong", { hasText: "hello.txt" }).first().waitFor({ timeout: 30000 });
    await view.locator(".msg.agent", { hasText: "Edited hello.txt and ran the command." }).waitFor({ timeout: 30000 });
    const replayedCommand = view.locator(".tool", { has: view.locator("pre.out.terminal", { hasText: "corvid-terminal-ok" }) }).last();
    await replayedCommand.locator(".texit", { hasText: /^exit code \d+$/ }).waitFor({ timeout: 20000 });
    await replayedCommand.getByRole("button", { name: /^Open the output of/ }).waitFor({ timeout: 5000 });
    if (await view.locator("#history").isVisible()) throw new Error("the history list should close after a pick");
    const loaded = await view.locator("body").getAttribute("data-session");
    say(`history: loaded ${loaded}; earlier messages rendered`);

    // 12b. Rewind to here: in a new chat, three prompts: the first edits rew-a.txt, the second
    // creates rew-b.txt, the third edits rew-c.txt, which the user then changes in the editor.
    // Rewind on the first prompt: rew-a.txt is back, rew-b.txt gone, rew-c.txt keeps the user's
    // line and is named as a conflict; the chat is a new session holding none of the three, the
    // prompt waits in the input, and sent (edited) the model sees nothing of the rewound turns.
    await viewAction("New Chat").click();
    await view.locator(".transcript .empty").waitFor({ timeout: 30000 });
    const rewPath = (n) => path.join(work, `rew-${n}.txt`);
    fs.writeFileSync(rewPath("a"), "a0\n");
    fs.writeFileSync(rewPath("c"), "c0\n");
    const rewTurn = async (marker, step, answer) => {
      fake.script(marker, { steps: [step, { chunks: [{ content: answer }] }] });
      await promptBox.fill(`${marker}: go`);
      await promptBox.press("Enter");
      const done = view.locator(".msg.agent", { hasText: answer });
      for (let i = 0; !(await done.count()); i++) {
        if (i > 120) throw new Error(`${marker}: no answer`);
        const allow = view.locator(".permission:not(.answered) button.perm[data-option='allow_once']");
        if (await allow.count()) await allow.first().click();
        await page.waitForTimeout(250);
      }
      await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    };
    const rewEdit = (n, from, to) => ({ toolCalls: [{ name: "edit_file", arguments: { path: `rew-${n}.txt`, old_text: from, new_text: to } }] });
    await rewTurn("E2E-REW-1", rewEdit("a", "a0", "a1"), "Rew one.");
    await rewTurn("E2E-REW-2", { toolCalls: [{ name: "write_file", arguments: { path: "rew-b.txt", content: "b\n" } }] }, "Rew two.");
    await rewTurn("E2E-REW-3", rewEdit("c", "c0", "c3"), "Rew three.");
    if (fs.readFileSync(rewPath("a"), "utf8") !== "a1\n" || !fs.existsSync(rewPath("b"))) throw new Error("the three turns did not write their files");
    await view.locator("#changes button.cf-open", { hasText: "rew-c.txt" }).click();
    await page.locator(".tab.active", { hasText: "rew-c.txt" }).waitFor({ timeout: 10000 });
    await page.locator(".part.editor .editor-group-container.active .monaco-editor .view-lines").last().click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("mine\n");
    const sessionBeforeRewind = await view.locator("body").getAttribute("data-session");
    await view.locator(".msg.user", { hasText: "E2E-REW-1" }).locator("button.rewind").click();
    await view.locator(".notice", { hasText: "Conflict: rew-c.txt changed after Corvid's edit" }).waitFor({ timeout: 30000 });
    for (let i = 0; fs.readFileSync(rewPath("a"), "utf8") !== "a0\n" || fs.existsSync(rewPath("b")); i++) {
      if (i > 40) throw new Error(`rewind: rew-a.txt ${JSON.stringify(fs.readFileSync(rewPath("a"), "utf8"))}, rew-b.txt there: ${fs.existsSync(rewPath("b"))}`);
      await page.waitForTimeout(250);
    }
    const rewNotice = await view.locator(".notice", { hasText: "Rewound" }).innerText();
    if (!/set back rew-a\.txt; removed rew-b\.txt/.test(rewNotice)) throw new Error(`rewind notice: ${rewNotice}`);
    if (await view.locator(".msg.user", { hasText: "E2E-REW" }).count()) throw new Error("the rewound prompts are still in the chat");
    const sessionAfterRewind = await view.locator("body").getAttribute("data-session");
    if (!sessionAfterRewind || sessionAfterRewind === sessionBeforeRewind) throw new Error("the rewind did not continue in a fork");
    if ((await promptBox.inputValue()) !== "E2E-REW-1: go") throw new Error(`rewind put ${JSON.stringify(await promptBox.inputValue())} in the input`);
    await page.screenshot({ path: SHOT.replace(/\.png$/, "-rewind.png") });
    await page.locator(".tab", { hasText: "rew-c.txt" }).first().click();
    if (!(await page.locator(".part.editor .editor-group-container.active .view-lines").last().innerText()).includes("mine")) throw new Error("the rewind overwrote the user's line in rew-c.txt");
    // The user saves their version (later steps close every editor).
    await page.keyboard.press("Control+S");
    for (let i = 0; fs.readFileSync(rewPath("c"), "utf8") !== "c3\nmine\n"; i++) {
      if (i > 40) throw new Error(`rew-c.txt saved as ${JSON.stringify(fs.readFileSync(rewPath("c"), "utf8"))}`);
      await page.waitForTimeout(250);
    }
    // The fork offers the agent's slash commands (the source's stand in until its own arrive).
    await promptBox.fill("");
    await promptBox.pressSequentially("/");
    await view.locator("#commands").getByRole("option").first().waitFor({ timeout: 10000 });
    await promptBox.press("Escape");
    fake.script("E2E-REWAGAIN", { chunks: [{ content: "Again from the start." }] });
    await promptBox.fill("E2E-REWAGAIN: go, edited");
    await promptBox.press("Enter");
    await view.locator(".msg.agent", { hasText: "Again from the start." }).waitFor({ timeout: 30000 });
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    const rewAsk = JSON.stringify(fake.requests.filter((q) => q.api === "openai").at(-1).body.messages);
    if (/E2E-REW-[123]/.test(rewAsk) || !rewAsk.includes("rewound the conversation")) throw new Error(`after the rewind the model saw: ${rewAsk.slice(0, 2000)}`);
    say("Rewind to here on the first of three prompts: rew-a.txt back, rew-b.txt gone, rew-c.txt's user edit kept as a conflict, a fork, the prompt in the input; the model told, none of the rewound turns sent");

    // 13. New Chat starts a fresh session: an empty transcript, a new id, and the model sees
    // none of the earlier conversation.
    await viewAction("New Chat").click();
    await view.locator(".transcript .empty").waitFor({ timeout: 30000 });
    const fresh = await view.locator("body").getAttribute("data-session");
    if (!fresh || fresh === loaded) throw new Error(`New Chat kept the session ${loaded}`);
    fake.script("E2E-FRESH", { chunks: [{ content: "Fresh start." }] });
    await promptBox.fill("E2E-FRESH: hello");
    await promptBox.press("Enter");
    await view.locator(".msg.agent", { hasText: "Fresh start." }).waitFor({ timeout: 30000 });
    const freshAsk = JSON.stringify(fake.requests.filter((q) => q.api === "openai").at(-1).body.messages);
    if (freshAsk.includes("E2E-WRITE") || freshAsk.includes("E2E-KEY")) throw new Error("the new chat carried the old conversation");
    say("New Chat: a fresh session");

    // 13b. Retry sends the last prompt again (a new turn the model answers); Edit last puts it
    // back in the input.
    const openAiCalls = () => fake.requests.filter((q) => q.api === "openai").length;
    const callsBefore = openAiCalls();
    await view.locator("button#retry").click();
    await view.locator(".msg.user", { hasText: "E2E-FRESH: hello" }).nth(1).waitFor({ timeout: 30000 });
    await view.locator(".msg.agent", { hasText: "Fresh start." }).nth(1).waitFor({ timeout: 30000 });
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    if (openAiCalls() <= callsBefore) throw new Error("Retry did not reach the model");
    if (!JSON.stringify(fake.requests.filter((q) => q.api === "openai").at(-1).body.messages.at(-1)).includes("E2E-FRESH: hello")) throw new Error("Retry sent something else");
    await view.locator("button#edit-last").click();
    if ((await promptBox.inputValue()) !== "E2E-FRESH: hello") throw new Error(`Edit last put ${JSON.stringify(await promptBox.inputValue())} in the input`);
    await promptBox.fill("");
    say("Retry sent the last prompt again; Edit last put it back in the input");

    // 13c. A provider error naming CORVID_API_KEY (a 401) offers Set API Key, which opens the
    // key's input box; Retry after the failed turn sends the prompt again.
    fake.script("E2E-AUTH", { status: 401 });
    await promptBox.fill("E2E-AUTH: are you there?");
    await promptBox.press("Enter");
    const authNotice = view.locator(".notice.error", { hasText: "401" }).last();
    await authNotice.waitFor({ timeout: 30000 });
    // In VS Code's terms: the command that sets the key, not the variable the core names.
    const authText = await authNotice.innerText();
    if (authText.includes("CORVID_") || !authText.includes("the API key (Corvid: Set API Key)")) throw new Error(`the 401 notice: ${authText}`);
    const fixButtons = await authNotice.locator("button.fix").allInnerTexts();
    if (fixButtons.join("|") !== "Set API Key") throw new Error(`the 401's actions: ${fixButtons}`);
    await authNotice.getByRole("button", { name: "Set API Key" }).click();
    await page.waitForSelector(".quick-input-widget:not([style*='display: none']) input[type='password']", { timeout: 20000 });
    await page.keyboard.press("Escape");
    fake.script("E2E-AUTH", { chunks: [{ content: "Authorized now." }] });
    await view.locator("button#retry").click();
    await view.locator(".msg.agent", { hasText: "Authorized now." }).waitFor({ timeout: 30000 });
    if ((await view.locator(".msg.user", { hasText: "E2E-AUTH: are you there?" }).count()) !== 2) throw new Error("Retry after the failed turn did not send the prompt again");
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    say("a 401 named the API key in VS Code's terms and offered Set API Key (it opened the key's input); Retry after it worked");
    // A 404 (the provider knows no such model) names the settings to check, not the variables.
    fake.script("E2E-NOMODEL", { status: 404 });
    await promptBox.fill("E2E-NOMODEL: hello");
    await promptBox.press("Enter");
    const modelNotice = view.locator(".notice.error", { hasText: "404" }).last();
    await modelNotice.waitFor({ timeout: 30000 });
    const modelText = await modelNotice.innerText();
    if (/CORVID_/.test(modelText) || !modelText.includes("the corvid.model setting") || !modelText.includes("the corvid.baseUrl setting")) throw new Error(`the 404 notice: ${modelText}`);
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    say(`a 404 in VS Code's terms: ${modelText.replace(/\s+/g, " ").slice(0, 160)}`);

    // 13d. The history list: search by title, rename (session/set_title), delete (session/delete).
    await viewAction("Open Past Chat").click();
    const rows = view.locator("#history li");
    await view.locator("#history button.session", { hasText: "E2E-FRESH" }).waitFor({ timeout: 20000 });
    const allRows = await rows.count();
    // Three chats of the steps before 12b, and 12b's two: the rewound chat stays beside its fork.
    if (allRows !== 5) throw new Error(`expected five past chats, got ${allRows}: ${await rows.allInnerTexts()}`);
    if (!(await rows.filter({ hasText: "E2E-REW-1: go (rewound)" }).count()) || (await rows.filter({ hasText: "E2E-REW-1: go" }).count()) !== 2)
      throw new Error(`the rewound chat and its fork are not both listed: ${await rows.allInnerTexts()}`);
    const search = view.getByRole("searchbox", { name: "Search past chats by title" });
    await search.fill("e2e-key");
    if ((await rows.count()) !== 1 || !(await rows.first().innerText()).includes("E2E-KEY")) throw new Error(`the search for e2e-key shows ${await rows.allInnerTexts()}`);
    await search.fill("no such chat");
    await view.locator("#history .empty", { hasText: "No past chat matches" }).waitFor({ timeout: 5000 });
    await search.fill("");
    if ((await rows.count()) !== allRows) throw new Error("clearing the search did not bring every chat back");
    await view.locator("#history li", { hasText: "E2E-WRITE" }).getByRole("button", { name: /^Rename/ }).click();
    await page.waitForSelector(".quick-input-widget:not([style*='display: none']) input", { timeout: 20000 });
    await page.keyboard.press("Control+A");
    await page.keyboard.type("The renamed first chat");
    await page.keyboard.press("Enter");
    await view.locator("#history button.session", { hasText: "The renamed first chat" }).waitFor({ timeout: 20000 });
    await view.locator("#history li", { hasText: "E2E-KEY" }).getByRole("button", { name: /^Delete/ }).click();
    await page.locator(".monaco-dialog-box .monaco-button", { hasText: "Delete" }).first().click({ timeout: 20000 });
    for (let i = 0; (await view.locator("#history li", { hasText: "E2E-KEY" }).count()) !== 0; i++) {
      if (i > 40) throw new Error("the deleted chat is still listed");
      await page.waitForTimeout(250);
    }
    if ((await rows.count()) !== allRows - 1) throw new Error(`after the delete: ${await rows.allInnerTexts()}`);
    await view.locator("#history-close").click();
    say("history: search filters by title, Rename and Delete reach the agent");

    // 13e. corvid.models, added in the Settings editor: the model picker offers the new list
    // without a reload (the core restarts and the open chat is loaded again, same session).
    const chatBefore = await view.locator("body").getAttribute("data-session");
    await palette("Preferences: Open Settings (UI)");
    await page.locator(".settings-editor").first().waitFor({ timeout: 20000 });
    await page.waitForTimeout(500);
    await page.keyboard.type("corvid.models");
    const modelsSetting = page.locator(".settings-editor .setting-item-contents", { hasText: "model picker" }).first();
    await modelsSetting.getByRole("button", { name: "Add Item" }).click({ timeout: 20000 });
    await page.waitForTimeout(300);
    await page.keyboard.type("fake-model-3");
    await page.keyboard.press("Enter");
    await view.locator("select[data-config='model'] option[value='fake-model-3']").waitFor({ state: "attached", timeout: 60000 });
    // The list is the setting's (plus corvid.model), not the config file's any more.
    if ((await view.locator("select[data-config='model'] option[value='fake-model-2']").count()) !== 0) throw new Error("the model picker kept the config file's list");
    await view.locator(".msg.agent", { hasText: "Authorized now." }).waitFor({ timeout: 30000 });
    if ((await view.locator("body").getAttribute("data-session")) !== chatBefore) throw new Error("applying corvid.models opened another chat");
    await page.locator(".statusbar-item", { hasText: "Corvid: ready" }).first().waitFor({ timeout: 30000 });
    await palette("View: Close All Editors");
    say("corvid.models: the model picker shows the list set in Settings without a reload, same chat");
    // corvid.model, changed in the Settings editor: the open chat's picker follows it.
    await settingsAt("corvid.model");
    const modelInput = page.locator(".settings-editor .setting-item-contents", { hasText: "Model id." }).locator("input").first();
    await modelInput.waitFor({ timeout: 20000 });
    await modelInput.fill("fake-model-3");
    await view.locator("select[data-config='model'] option[value='fake-model-3'][selected]").waitFor({ state: "attached", timeout: 60000 });
    if ((await view.locator("body").getAttribute("data-session")) !== chatBefore) throw new Error("corvid.model opened another chat");
    await palette("View: Close All Editors");
    say("corvid.model: the open chat's model picker follows the setting");

    // 14. Show Logs opens the "Corvid" log channel in the Output panel.
    await palette("Corvid: Show Logs");
    const output = page.locator(".part.panel .monaco-editor .view-lines");
    await output.filter({ hasText: "set model = fake-model-3" }).first().waitFor({ timeout: 20000 }); // the newest line
    say("Show Logs: the Corvid log is open");

    // 14b. Reloading the window (a new extension host) brings the open chat back: its
    // session is loaded again and the transcript replays.
    const openBefore = await view.locator("body").getAttribute("data-session");
    // The context sent with a prompt (the current file's chip) is drawn again on replay.
    const freshChips = () => view.locator(".msg.user", { hasText: "E2E-FRESH: hello" }).first().locator(".chip").allInnerTexts();
    const chipsBeforeReload = await freshChips();
    if (!chipsBeforeReload.length) throw new Error("the E2E-FRESH message shows no context chip");
// The files under review (12b's rew-c.txt) are listed again after the reload.
    const reviewRows = () => view.locator("#changes .changed-file").allInnerTexts();
    const reviewBeforeReload = await reviewRows();
    if (!reviewBeforeReload.length) throw new Error("nothing is under review before the reload");
        await page.reload({ waitUntil: "domcontentloaded" });
    await page.waitForSelector(".monaco-workbench", { timeout: 90000 });
    await palette("Corvid: Focus Chat Input");
    await view.locator(".msg.agent", { hasText: "Authorized now." }).waitFor({ timeout: 60000 });
    await view.locator(".msg.user", { hasText: "E2E-FRESH: hello" }).first().waitFor({ timeout: 10000 });
    if ((await view.locator("body").getAttribute("data-session")) !== openBefore) throw new Error("the reloaded window shows another session");
    if ((await freshChips()).join("|") !== chipsBeforeReload.join("|")) throw new Error(`replayed chips ${await freshChips()}, live ${chipsBeforeReload}`);
    await view.locator("#changes .changed-file").first().waitFor({ timeout: 10000 });
    if ((await reviewRows()).join("|") !== reviewBeforeReload.join("|")) throw new Error(`under review after the reload: ${await reviewRows()}, before: ${reviewBeforeReload}`);
    // The replayed prompts keep their ids: Rewind to here survives the reload.
    if (!(await view.locator(".msg.user", { hasText: "E2E-FRESH: hello" }).first().locator("button.rewind").count())) throw new Error("a replayed prompt offers no Rewind to here");
    await palette("Corvid: Show Logs");
    await output.filter({ hasText: `restored session ${openBefore}` }).first().waitFor({ timeout: 20000 });
    say(`reload: the open chat is back (session/load), transcript replayed with its context chips (${chipsBeforeReload.join(", ")}), the review listed again (${reviewBeforeReload.join("; ").replace(/\s+/g, " ")})`);

    // 15. corvid.agent.command that cannot run: the failure is an error notification. The
    // setting is typed into VS Code's Settings editor, as a user would.
    // The extension logs each settings change with the agent it will start next.
    const settingsSeen = (agent) => output.filter({ hasText: `settings changed (agent: ${agent})` }).first().waitFor({ timeout: 20000 });
    const agentCommandInput = page.locator(".settings-editor .setting-item-contents", { hasText: "external ACP agent" }).locator("input").first();
    const setAgentCommand = async (value) => {
      if (!(await agentCommandInput.isVisible())) {
        await palette("Preferences: Open Settings (UI)");
        await page.locator(".settings-editor").first().waitFor({ timeout: 20000 });
        await page.waitForTimeout(500);
        // The editor may come back with an earlier search (corvid.models) in its box: replace it.
        await page.keyboard.press("Control+A");
        await page.keyboard.type("corvid.agent.command");
        await agentCommandInput.waitFor({ timeout: 20000 });
      }
      await agentCommandInput.fill(value);
      await settingsSeen(value || "built-in core");
    };
    await setAgentCommand("/nonexistent/corvid-agent acp");
    await palette("Corvid: New Chat", { click: false });
    const toast = page.locator(".notifications-toasts .notification-toast", { hasText: "starting the agent failed" }).first();
    await toast.waitFor({ timeout: 30000 });
    if (!(await toast.innerText()).includes("/nonexistent/corvid-agent")) throw new Error(`the error does not name the command: ${await toast.innerText()}`);
    await page.locator(".statusbar-item", { hasText: "Corvid: error" }).first().waitFor({ timeout: 10000 });
    say("a broken corvid.agent.command: error notification shown");

    // 15b. An agent that starts but cannot open a session (its config file is missing: Corvid
    // answers initialize, and session/new with the reason): the chat says why, the status stays
    // error, and a prompt tries again and gets the same reason, not "ACP connection closed".
    if (!CORVID_BIN) throw new Error("set CORVID_BIN to the corvid binary (the stdio agent checks)");
    await setAgentCommand(`env CORVID_CONFIG=/nonexistent/corvid-e2e.toml ${CORVID_BIN} acp`);
    await palette("Corvid: New Chat", { click: false });
    const notStarted = view.locator(".notice.error", { hasText: "corvid-e2e.toml" });
    await notStarted.first().waitFor({ timeout: 30000 });
    await page.locator(".statusbar-item", { hasText: "Corvid: error" }).first().waitFor({ timeout: 10000 });
    await promptBox.fill("hello?");
    await promptBox.press("Enter");
    await notStarted.nth(1).waitFor({ timeout: 30000 });
    if ((await view.locator("body").innerText()).includes("connection closed")) throw new Error("a prompt after a failed start met a closed connection");
    await page.waitForTimeout(500);
    if (!(await page.locator(".statusbar-item", { hasText: "Corvid: error" }).first().isVisible())) throw new Error("the status left error after a failed start");
    say("a start whose session/new fails: the reason in the chat, status error, a prompt tries again");

    // 16. corvid.agent.command = `corvid acp` (the real binary over stdio) runs a turn.
    await setAgentCommand(`${CORVID_BIN} acp`);
    await palette("Corvid: New Chat", { click: false });
    await page.locator(".statusbar-item", { hasText: "Corvid: ready" }).first().waitFor({ timeout: 60000 });
    fake.script("E2E-STDIO", { chunks: [{ content: "Hello over **stdio**." }] });
    await promptBox.fill("E2E-STDIO: who is answering?");
    await promptBox.press("Enter");
    await view.locator(".msg.agent strong", { hasText: "stdio" }).waitFor({ timeout: 30000 });
    // The answer came from a `corvid acp` child of code-server, not the in-process core.
    const cmdlines = descendants(csPid).map((p) => {
      try {
        return fs.readFileSync(`/proc/${p}/cmdline`, "utf8").split("\0").join(" ");
      } catch {
        return "";
      }
    });
    if (!cmdlines.some((c) => c.startsWith(`${CORVID_BIN} acp`))) throw new Error(`no \`corvid acp\` process under code-server: ${cmdlines.join(" | ")}`);
    say("corvid.agent.command: a turn through `corvid acp` over stdio");

    // 16b. MCP servers of VS Code's configuration reach the agent with the user's consent: the
    // workspace's .vscode/mcp.json (JSON with comments) names the test MCP server; a new chat asks once (a modal: Allow), the
    // model sees its tools, and a call of one comes back with the server's answer. The next
    // chat does not ask again.
    fs.mkdirSync(path.join(work, ".vscode"), { recursive: true });
    fs.writeFileSync(path.join(work, ".vscode/mcp.json"), `{\n  // the test's MCP server\n  "servers": { "e2e-echo": { "type": "stdio", "command": ${JSON.stringify(process.execPath)}, "args": [${JSON.stringify(path.join(repo, "tests/support/mcp-server.mjs"))}, "e2e-echo"], }, },\n}\n`);
    const sessionBeforeMcp = await view.locator("body").getAttribute("data-session");
    await palette("Corvid: New Chat", { click: false });
    const consent = page.locator(".monaco-dialog-box", { hasText: 'Let Corvid use the MCP server "e2e-echo"' });
    await consent.waitFor({ timeout: 30000 });
    if (!(await consent.innerText()).includes("mcp-server.mjs e2e-echo")) throw new Error(`the consent question does not say what runs: ${await consent.innerText()}`);
    await consent.locator(".monaco-button", { hasText: /^Allow$/ }).click();
    await page.locator(".statusbar-item", { hasText: "Corvid: ready" }).first().waitFor({ timeout: 60000 });
    fake.script("E2E-MCP", {
      steps: [{ toolCalls: [{ name: "mcp__e2e-echo__echo", arguments: { text: "from VS Code's settings" } }] }, { chunks: [{ content: "MCP answered." }] }],
    });
    const beforeMcp = fake.requests.length;
    await promptBox.fill("E2E-MCP: call the echo tool");
    await promptBox.press("Enter");
    const mcpAllow = view.locator(".permission:not(.answered) button.perm[data-option='allow_once']");
    const mcpAnswered = view.locator(".msg.agent", { hasText: "MCP answered." });
    await Promise.race([mcpAllow.waitFor({ timeout: 30000 }), mcpAnswered.waitFor({ timeout: 30000 })]);
    if (await mcpAllow.isVisible()) await mcpAllow.click();
    await mcpAnswered.waitFor({ timeout: 30000 });
    // Sent right after the consent, while the servers start: it waited for the new chat.
    if ((await view.locator("body").getAttribute("data-session")) === sessionBeforeMcp) throw new Error("the prompt after the MCP consent went to the old chat");
    const mcpRequests = fake.requests.slice(beforeMcp).filter((q) => q.api === "openai");
    const offeredTools = (mcpRequests[0]?.body.tools ?? []).map((t) => t.function?.name);
    if (!offeredTools.includes("mcp__e2e-echo__echo")) throw new Error(`the model was not offered the MCP server's tools: ${offeredTools}`);
    if (!JSON.stringify(mcpRequests.at(-1).body.messages).includes("e2e-echo says: from VS Code's settings")) throw new Error("the MCP tool's answer did not reach the model");
    await view.locator("body[data-busy='false']").waitFor({ timeout: 30000 });
    await palette("Corvid: New Chat", { click: false });
    await view.locator(".transcript .empty").waitFor({ timeout: 30000 });
    await page.waitForTimeout(1000);
    if ((await consent.count()) !== 0) throw new Error("the MCP consent was asked again for the same server");
    say("MCP servers from VS Code's settings: asked once, then the model called the server's tool");

    // 17. A VSIX whose addon does not load (here: removed) and no agent command: after a
    // window reload (a new extension host), the start failure is an error notification that
    // says what to do.
    for (const f of fs.readdirSync(path.join(ext, installed[0], "dist"))) if (f.endsWith(".node")) fs.rmSync(path.join(ext, installed[0], "dist", f));
    await setAgentCommand("");
    await page.reload({ waitUntil: "domcontentloaded" }); // a new window: a new extension host
    await page.waitForSelector(".monaco-workbench", { timeout: 90000 });
    const addonToast = page.locator(".notifications-toasts .notification-toast", { hasText: "built-in Corvid core could not be loaded" }).first();
    await addonToast.waitFor({ timeout: 60000 });
    if (!(await addonToast.innerText()).includes("corvid.agent.command")) throw new Error(`the error does not say what to do: ${await addonToast.innerText()}`);
    say("a missing addon: error notification shown");
  } catch (e) {
    try {
      await ctx.pages()[0].screenshot({ path: SHOT.replace(/\.png$/, "-failure.png") });
      console.error(`failure screenshot: ${SHOT.replace(/\.png$/, "-failure.png")}; code-server log: ${W}/code-server.log`);
    } catch {}
    throw e;
  } finally {
    await ctx.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
    killCodeServer();
    await fake.close();
  }
  fs.rmSync(W, { recursive: true, force: true });
  say("all VS Code end-to-end checks passed");
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error("E2E FAILED:", e);
    process.exit(1);
  },
);

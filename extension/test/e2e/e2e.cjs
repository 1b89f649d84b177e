// End-to-end: the packaged VSIX installed into a real VS Code (code-server 4.100.3) driven by
// headless Chromium through playwright-core, against the scripted fake model server.
//   node test/e2e/e2e.cjs <code-server-dir> <extension.vsix> <screenshot.png>
// Checks: install, activation (status bar), a full turn with a write needing permission
// answered by clicking Allow in the webview, the file written through the editor, Open diff
// opening a diff editor, Stop cancelling a streaming turn, Ask About Selection sending the
// selection as an embedded resource, read_file seeing unsaved editor text. code-server and all its children
// are killed by PID at exit.
const { spawn, spawnSync, execFileSync } = require("node:child_process");
const fs = require("node:fs");
const net = require("node:net");
const os = require("node:os");
const path = require("node:path");
const { pathToFileURL } = require("node:url");
const { chromium } = require("playwright-core");

const [CS, VSIX, SHOT] = process.argv.slice(2);
if (!CS || !VSIX || !SHOT) {
  console.error("usage: node e2e.cjs <code-server-dir> <vsix> <screenshot.png>");
  process.exit(2);
}
const repo = path.resolve(__dirname, "../../..");
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
  fs.writeFileSync(
    path.join(data, "User/settings.json"),
    JSON.stringify({
      "security.workspace.trust.enabled": false,
      "workbench.startupEditor": "none",
      "telemetry.telemetryLevel": "off",
      "update.mode": "none",
      "extensions.autoCheckUpdates": false,
      "extensions.autoUpdate": false,
      "workbench.colorTheme": "Default Dark Modern",
      "files.autoSave": "off",
      "corvid.baseUrl": `${fake.url.replace(/\/v1\/?$/, "")}/v1`,
      "corvid.model": "fake-model",
    }),
  );
  const config = path.join(W, "corvid.toml");
  fs.writeFileSync(config, '[discovery]\nollama_url = "http://127.0.0.1:9"\n');
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
  const env = { ...csEnv, CORVID_API_KEY: "test-key", CORVID_CONFIG: config, CORVID_DATA_DIR: path.join(W, "corvid-data") };
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

    const palette = async (title, { click = true } = {}) => {
      if (click) await page.locator(".monaco-workbench").click({ position: { x: 700, y: 300 } });
      await page.keyboard.press("F1");
      await page.waitForSelector(".quick-input-widget:not([style*='display: none']) input", { timeout: 20000 });
      await page.keyboard.type(title);
      const row = page.locator(".quick-input-list .monaco-list-row", { hasText: title.split(": ").pop() }).first();
      await row.waitFor({ timeout: 20000 });
      await page.waitForTimeout(300);
      await page.keyboard.press("Enter");
    };

    // 3. Activation: opening the view from the activity bar activates the extension; the
    // status bar shows the agent ready.
    await page.locator(".activitybar .action-item a[aria-label^='Corvid']").first().click({ timeout: 30000 });
    await page.locator(".statusbar-item", { hasText: "Corvid:" }).first().waitFor({ timeout: 60000 });
    await palette("Corvid: New Chat");
    await page.locator(".statusbar-item", { hasText: "Corvid: ready" }).first().waitFor({ timeout: 60000 });
    say("activated; agent ready");
    const view = page.frameLocator("iframe.webview.ready").first().frameLocator("#active-frame");
    const promptBox = view.locator("textarea#prompt");
    await promptBox.waitFor({ timeout: 30000 });

    // 4. A full turn: write_file needs permission; Allow is clicked in the webview.
    fake.script("E2E-WRITE", {
      steps: [
        { toolCalls: [{ name: "write_file", arguments: { path: "hello.txt", content: "Hello from Corvid in VS Code\n" } }] },
        { chunks: [{ reasoning: "The file is written; summarise." }, { content: "I created **hello.txt**:\n\n```text\nHello from Corvid in VS Code\n```\n\n- one file\n- no HTML <b>here</b>" }] },
      ],
    });
    await promptBox.fill("E2E-WRITE: create hello.txt with a greeting");
    await promptBox.press("Enter");
    const allow = view.locator("button.perm[data-option='allow_once']");
    await allow.waitFor({ timeout: 30000 });
    const optionCount = await view.locator("button.perm").count();
    if (optionCount < 2) throw new Error(`expected every permission option as a button, got ${optionCount}`);
    say(`permission shown with ${optionCount} options; clicking Allow`);
    await allow.click();
    await view.locator(".stop-reason[data-stop='end_turn']").waitFor({ timeout: 30000 });
    const agentText = await view.locator(".msg.agent").last().innerHTML();
    if (!agentText.includes("<strong>hello.txt</strong>") || agentText.includes("<b>")) throw new Error(`markdown not rendered safely: ${agentText}`);
    await view.locator(".tool.completed").first().waitFor({ timeout: 10000 });
    say("turn finished: end_turn, tool card completed");
    fs.mkdirSync(path.dirname(SHOT), { recursive: true });
    await page.waitForTimeout(500);
    await page.screenshot({ path: SHOT });
    say(`screenshot ${SHOT}`);

    // 5. Open diff opens VS Code's diff editor.
    await view.locator("button.open-diff").first().click();
    await page.locator(".monaco-diff-editor").first().waitFor({ timeout: 20000 });
    say("diff editor open");

    // 6. The write went through the editor: an unsaved, undoable edit (the tab shows it
    // modified; the disk has only the empty new file) until the user saves.
    const hello = path.join(work, "hello.txt");
    const read = () => (fs.existsSync(hello) ? fs.readFileSync(hello, "utf8") : null);
    await page.locator(".tab.dirty", { hasText: "hello.txt" }).first().waitFor({ timeout: 10000 });
    if (read() === "Hello from Corvid in VS Code\n") throw new Error("the edit should not be saved yet");
    await palette("File: Save All Files");
    for (let i = 0; read() !== "Hello from Corvid in VS Code\n"; i++) {
      if (i > 40) throw new Error(`hello.txt not written: ${read()}`);
      await page.waitForTimeout(250);
    }
    say("hello.txt: a modified document after the turn, on disk after Save All");

    // 7. Stop cancels a streaming turn.
    fake.script("E2E-SLOW", { chunks: Array.from({ length: 400 }, (_, i) => ({ content: `word${i} ` })), delayMs: 50 });
    await promptBox.fill("E2E-SLOW: talk for a long time");
    await promptBox.press("Enter");
    await view.locator(".msg.agent", { hasText: "word3" }).first().waitFor({ timeout: 30000 });
    await view.locator("button#stop").click();
    await view.locator(".stop-reason[data-stop='cancelled']").waitFor({ timeout: 20000 });
    const streamed = await view.locator(".msg.agent").last().innerText();
    if (streamed.includes("word399")) throw new Error("the turn was not cancelled");
    say("Stop cancelled the streaming turn");

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
    await palette("Corvid: Ask About Selection", { click: false }); // a click would drop the selection
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
    say("read_file saw the editor's unsaved text");
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

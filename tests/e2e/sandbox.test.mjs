// Commands in the OS sandbox, through the real binary, driven by the official SDK (2.x app
// API) and the scripted fake model, in `full` mode (nothing asks: the sandbox alone decides).
// Work inside the session's folder and TMPDIR succeeds; writes beside it and to $HOME fail,
// from grandchildren too; forbidden paths cannot be read, and what they hold reaches neither
// the tool card nor the model; a server on the host's loopback gets no request (commands have
// a loopback of their own, where namespaces allow: netns.test.mjs); CORVID_SANDBOX=off restores
// the old behaviour; `initialize` reports what is in force. Skipped (with the reason) only
// where the kernel has no Landlock.
import assert from "node:assert/strict";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import * as acp from "@agentclientprotocol/sdk";
import { startFakeModel } from "../support/fake-model.mjs";
import { startHitServer } from "../support/hit-server.mjs";
import { agentEnv, corvidBin, spawnAgent } from "../support/agent.mjs";
import { launcherRefusal } from "../support/landlock.mjs";
import { running, until } from "../support/processes.mjs";

const skip = launcherRefusal(corvidBin(), [], "/nonexistent") ?? false;

let fake;
let server;
let hits;
before(async () => {
  fake = await startFakeModel();
  server = await startHitServer();
  hits = server.hits;
});
after(async () => {
  await fake.close();
  await server.close();
});

let marker = 0;
/**
 * An agent whose $HOME holds a private key, a session in $HOME/project (mode full) and a
 * folder beside it, $HOME/elsewhere. `calls(commands)` runs each command as one run_command
 * call of a single model step and returns each result as the model read it.
 */
async function setup({ extra = {}, config = "", bin, answer = () => "allow_once" } = {}) {
  const env = agentEnv({ fake, extra, config });
  const home = realpathSync(env.HOME);
  const key = `PRIVATE-KEY-${Math.random().toString(36).slice(2)}`;
  mkdirSync(join(home, ".ssh"));
  writeFileSync(join(home, ".ssh", "id_ed25519"), `${key}\n`);
  const root = join(home, "project");
  mkdirSync(root);
  mkdirSync(join(home, "elsewhere"));

  const agent = spawnAgent({ env, bin });
  const updates = [];
  const questions = [];
  const app = acp
    .client({ name: "corvid-e2e" })
    .onNotification(acp.methods.client.session.update, ({ params }) => void updates.push(params))
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      questions.push(params);
      return { outcome: { outcome: "selected", optionId: answer(params) } };
    });
  const conn = app.connect(await agent.sdkStream(acp.ndJsonStream));
  const init = await conn.agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: "corvid-e2e", version: "1.0.0" },
  });
  const { sessionId } = await conn.agent.request(acp.methods.agent.session.new, { cwd: root, mcpServers: [] });
  const { configOptions } = await conn.agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: "mode", value: "full" });
  return {
    home,
    root,
    key,
    sessionId,
    init,
    updates,
    questions,
    configOptions,
    agent,
    /** Each entry a command line, or run_command's whole arguments. */
    async calls(commands) {
      const m = `SANDBOX-${++marker}`;
      const toolCalls = commands.map((c, i) => ({ name: "run_command", arguments: typeof c === "string" ? { command: c } : c, id: `c${i}` }));
      fake.script(m, { steps: [{ toolCalls }, { chunks: [{ content: "done" }] }] });
      const r = await conn.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: m }] });
      assert.equal(r.stopReason, "end_turn");
      return fake.requests.at(-1).body.messages.filter((msg) => msg.role === "tool").slice(-commands.length).map((msg) => msg.content);
    },
    async done() {
      conn.close();
      await agent.stop();
      assert.deepEqual(agent.violations, [], "every frame is valid ACP");
      assert.doesNotMatch(agent.stderr, /panicked/);
    },
  };
}

const ok = (result, what) => assert.match(result, /\[exit code 0\]$/, `${what}: ${result}`);
const failed = (result, what) => assert.doesNotMatch(result, /\[exit code 0\]$/, `${what} should fail: ${result}`);

test("work inside the folder and TMPDIR succeeds; writes beside it, to $HOME and from grandchildren fail", { skip }, async () => {
  const t = await setup();
  const [inside, tmp, beside, home, grandchild, doubleFork, git, tempfile] = await t.calls([
    "mkdir -p a/b && echo ok > a/b/f && sed -i s/ok/edited/ a/b/f && cat a/b/f",
    'echo x > "$TMPDIR/t" && cat "$TMPDIR/t" && echo "tmp=$TMPDIR"',
    "echo pwned > ../elsewhere/escape.txt",
    'echo pwned > "$HOME/escape.txt"',
    "setsid -w sh -c 'echo pwned > ../elsewhere/setsid.txt; echo ran > setsid-ran'",
    "(sh -c 'echo pwned > ../elsewhere/double.txt; echo ran > double-ran' &); sleep 0.5",
    "git init -q repo && cd repo && echo x > f && git add f && git -c user.name=t -c user.email=t@t commit -qm first && git log --oneline | wc -l",
    // What build tools do: a temp file where TMPDIR says.
    `python3 -c "import tempfile; f = tempfile.NamedTemporaryFile(delete=False); f.write(b'built'); print(f.name)"`,
  ]);
  ok(inside, "mkdir and write inside");
  assert.match(inside, /^edited$/m);
  ok(git, "git init and a commit inside the folder");
  assert.match(git, /^1$/m);
  ok(tempfile, "a build tool's temp file");
  const tempPath = tempfile.split("\n")[0];
  assert.equal(readFileSync(tempPath, "utf8"), "built");
  assert.equal(existsSync(join(t.root, "a", "b", "f")), true);
  ok(tmp, "write to TMPDIR");
  assert.match(tmp, /^x$/m);
  const tmpdir = tmp.match(/^tmp=(.*)$/m)?.[1];
  assert.equal(tmpdir, join(t.home, "data", "tmp", tmpdir.split("/").at(-1)), "TMPDIR is the session's own");
  assert.ok(tempPath.startsWith(`${tmpdir}/`), `the build tool's temp file is in TMPDIR: ${tempPath}`);
  failed(beside, "a write beside the folder");
  assert.match(beside, /Permission denied/);
  // The model is told it met the sandbox, and what to do about it.
  assert.match(beside, /ran in Corvid's sandbox: it may write only inside the session's folders/);
  assert.doesNotMatch(inside, /sandbox/, "no note on a command that worked");
  assert.equal(existsSync(join(t.home, "elsewhere", "escape.txt")), false);
  failed(home, "a write to $HOME");
  assert.equal(existsSync(join(t.home, "escape.txt")), false);
  // The grandchildren ran (they wrote inside), and could not write outside.
  assert.equal(existsSync(join(t.root, "setsid-ran")), true, grandchild);
  assert.equal(existsSync(join(t.home, "elsewhere", "setsid.txt")), false, grandchild);
  assert.equal(existsSync(join(t.root, "double-ran")), true, doubleFork);
  assert.equal(existsSync(join(t.home, "elsewhere", "double.txt")), false, doubleFork);
  await t.done();
});

test("forbidden paths cannot be read: the key reaches neither the tool card nor the model", { skip }, async () => {
  const t = await setup();
  const results = await t.calls([
    "cat ~/.ssh/id_ed25519",
    "cat ../.ssh/id_ed25519",
    "ls ~/.ssh",
    'cat "$HOME/config.toml"',
    'cat "$HOME/data/sessions.db" > /dev/null',
    "cat /etc/passwd > /dev/null && echo etc-readable",
  ]);
  for (const [i, r] of results.slice(0, 5).entries()) {
    failed(r, `forbidden read ${i}`);
    assert.match(r, /Permission denied/, `forbidden read ${i}`);
  }
  ok(results[5], "reading /etc (needed to run programs)");
  const everything = JSON.stringify(t.updates) + JSON.stringify(fake.requests.map((r) => r.body ?? null));
  assert.equal(everything.includes(t.key), false, "the key leaked");
  await t.done();
});

test("no network: a server on the host's loopback gets no request from curl, node or bash", { skip }, async () => {
  const t = await setup();
  const url = server.url;
  hits.length = 0;
  const results = await t.calls([
    `curl -sS -m 3 ${url}/curl`,
    `node -e "fetch('${url}/node').then((r) => console.log(r.status))"`,
    `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${server.port} && echo -e "GET /bash HTTP/1.0\\r\\n\\r\\n" >&3 && cat <&3'`,
  ]);
  for (const [i, r] of results.slice(0, 3).entries()) failed(r, `network call ${i}`);
  // No socket at all (the filter alone), or refused by the command's own empty loopback.
  assert.match(results[0], /not permitted|connect/i, results[0]);
  assert.deepEqual(hits, [], "the server was not reached");
  await t.done();
});

test("what a command leaves running ends with it, setsid'd daemons included", { skip }, async () => {
  const t = await setup();
  const tag = `${3000 + Math.floor(Math.random() * 900)}.5`;
  const [r] = await t.calls([`setsid sh -c 'sleep ${tag}' >/dev/null 2>&1 </dev/null & sleep ${tag}1 >/dev/null 2>&1 & echo started`]);
  ok(r, "the command itself");
  await until("the leftovers to be killed", () => running(`sleep ${tag}`).length === 0, 3000);
  await t.done();
});

test("a command still running when Corvid is killed with SIGKILL dies with it (grandchildren too)", { skip }, async () => {
  const t = await setup();
  const tag = `${4000 + Math.floor(Math.random() * 900)}.5`;
  const m = `SANDBOX-KILL-${++marker}`;
  fake.script(m, { steps: [{ toolCalls: [{ name: "run_command", arguments: { command: `setsid sh -c 'sleep ${tag}' & sleep ${tag}1` } }] }, { chunks: [{ content: "never" }] }] });
  t.agent.send({ jsonrpc: "2.0", id: "doomed", method: "session/prompt", params: { sessionId: t.sessionId, prompt: [{ type: "text", text: m }] } });
  await until("the command to run", () => running(`sleep ${tag}`).length === 2, 10000);
  t.agent.child.kill("SIGKILL");
  await t.agent.exited;
  await until("nothing of the command to be left", () => running(`sleep ${tag}`).length === 0, 3000);
});

test("initialize reports the sandbox in force", { skip }, async () => {
  const t = await setup();
  const meta = t.init._meta.corvid.sandbox;
  assert.equal(meta.kind, "landlock");
  assert.ok(Number.isInteger(meta.abi) && meta.abi >= 1, JSON.stringify(meta));
  assert.equal(meta.network, "off");
  assert.ok(["private", "none"].includes(meta.loopback), JSON.stringify(meta));
  assert.equal(meta.mode, "workspace-write");
  // The file tools' jail, on Linux: opened without following links, re-checked after, and
  // the directory walks held beneath what they walk by Landlock.
  assert.deepEqual(t.init._meta.corvid.jail, { noFollowOpen: true, checkedAfterOpen: true, walksConfined: true });
  await t.done();
});

test("CORVID_SANDBOX=off restores today's behaviour", async () => {
  const t = await setup({ extra: { CORVID_SANDBOX: "off" } });
  assert.equal(t.init._meta.corvid.sandbox.kind, "none");
  assert.match(t.init._meta.corvid.sandbox.reason, /off/);
  const [beside] = await t.calls(["echo pwned > ../elsewhere/escape.txt"]);
  ok(beside, "an unconfined write beside the folder");
  assert.doesNotMatch(beside, /sandbox/);
  assert.equal(existsSync(join(t.home, "elsewhere", "escape.txt")), true);
  await t.done();
});

test("an escalation always asks (in full mode too), names what it lifts, and only a yes lifts it", { skip }, async () => {
  const answers = ["reject_once", "allow_once", "allow_once", "allow_always", "allow_once"];
  const t = await setup({ answer: () => answers.shift() });
  const url = server.url;
  const reason = "fetch the fixture from the local server";
  hits.length = 0;
  const [rejected] = await t.calls([{ command: `curl -sS -m 3 ${url}/rejected`, escalate: "network", reason }]);
  assert.match(rejected, /declined/, rejected);
  assert.deepEqual(hits, [], "a rejected escalation does not run");
  const q = t.questions.at(-1);
  assert.match(q.toolCall.title, /^Run `curl .*` with network access$/);
  assert.match(q.toolCall.content[0].content.text, new RegExp(`asks for network access.*\\nReason: ${reason}`, "s"));
  assert.ok(q.options.some((o) => o.kind === "allow_always" && /with network access$/.test(o.name)), JSON.stringify(q.options));

  const [allowed] = await t.calls([{ command: `curl -sS -m 3 ${url}/allowed`, escalate: "network", reason }]);
  ok(allowed, "the allowed escalation");
  assert.deepEqual(hits, ["/allowed"]);
  // Network only: the rest of the sandbox still holds.
  const [stillConfined] = await t.calls([{ command: "echo pwned > ../elsewhere/net.txt", escalate: "network", reason: "x" }]);
  failed(stillConfined, "a write beside the folder with network allowed");
  assert.equal(existsSync(join(t.home, "elsewhere", "net.txt")), false);

  // "Always" is scoped to the command prefix and to what is lifted: a plain `curl` still has no network.
  const always = `curl -sS -m 3 ${url}/always`;
  await t.calls([{ command: always, escalate: "network", reason }]);
  assert.equal(t.questions.at(-1).options.find((o) => o.kind === "allow_always").name.includes("curl"), true);
  const asked = t.questions.length;
  const [remembered, plain] = await t.calls([
    { command: `${always} --retry 0`, escalate: "network", reason },
    `curl -sS -m 3 ${url}/plain`,
  ]);
  ok(remembered, "a remembered escalation");
  failed(plain, "a plain curl");
  assert.equal(t.questions.length, asked, "neither asked again: the rule answers one, full mode the other");
  assert.deepEqual(hits, ["/allowed", "/always", "/always"]);

  // Unsandboxed lifts everything, once allowed.
  const [outside] = await t.calls([{ command: "echo lifted > ../elsewhere/lifted.txt", escalate: "unsandboxed", reason: "write the sibling repo" }]);
  ok(outside, "an unsandboxed command");
  assert.match(t.questions.at(-1).toolCall.title, /outside the sandbox$/);
  assert.equal(readFileSync(join(t.home, "elsewhere", "lifted.txt"), "utf8"), "lifted\n");
  await t.done();
});

test("a denial tells the model how to escalate", { skip }, async () => {
  const t = await setup();
  const [denied] = await t.calls([`curl -sS -m 3 http://127.0.0.1:${server.port}/x 2>&1 | head -1; echo x > ../elsewhere/y`]);
  assert.match(denied, /"escalate": "network"/);
  await t.done();
});

test("without a launcher commands run unconfined, with one notice per session; required = true refuses them", async () => {
  // A copy of the binary under another name is not its own launcher.
  const dir = mkdtempSync(join(tmpdir(), "corvid-copy-"));
  const bin = join(dir, "corvid-copy");
  copyFileSync(corvidBin(), bin);
  chmodSync(bin, 0o755);
  try {
    const t = await setup({ bin });
    assert.equal(t.init._meta.corvid.sandbox.kind, "none");
    const [first] = await t.calls(["echo unconfined > ../elsewhere/a.txt"]);
    ok(first, "an unconfined write");
    await t.calls(["true"]);
    const notices = t.updates.filter((u) => u.update.sessionUpdate === "notice");
    assert.equal(notices.length, 1, JSON.stringify(notices));
    assert.match(notices[0].update.title, /without the sandbox/);
    assert.match(notices[0].update.description, /launcher/);
    // The mode picker says so too.
    const modes = t.configOptions.find((o) => o.id === "mode");
    assert.match(modes.options.find((o) => o.value === "full").description, /Commands are not sandboxed/);
    await t.done();

    const r = await setup({ bin, config: "[sandbox]\nrequired = true\n" });
    const [refused] = await r.calls(["echo refused > ../elsewhere/b.txt"]);
    assert.match(refused, /not run: commands are refused here/);
    assert.equal(existsSync(join(r.home, "elsewhere", "b.txt")), false);
    const notice = r.updates.find((u) => u.update.sessionUpdate === "notice");
    assert.match(notice?.update.title ?? "", /refused/);
    await r.done();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the mode descriptions say how commands are confined", { skip }, async () => {
  const t = await setup();
  const modes = t.configOptions.find((o) => o.id === "mode");
  const full = modes.options.find((o) => o.value === "full").description;
  assert.match(full, /Commands run in the sandbox: they write only in the workspace and have no network/);
  await t.done();
});

// Commands of the in-process agent (`corvid-acp`, what the VS Code extension bundles) in the
// OS sandbox: `createAgent()` runs them through this Node and `sandbox-launcher.cjs`, driven by
// the official SDK (2.x app API) and the scripted fake model, in `full` mode (nothing asks:
// the sandbox alone decides). Work inside the session's folder succeeds and writes beside it
// fail; a loopback server gets no request; what a command leaves running is killed; closing
// the agent kills a running command's tree; the editor's terminal is asked to run the same
// launcher with Electron's switch in its environment; `initialize` reports what is in force.
// $HOME is a temporary folder (set before any agent starts: the agent reads it for its
// forbidden paths). Skipped (with the reason) only where the kernel has no Landlock.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import * as acp from "@agentclientprotocol/sdk";
import { createAgent } from "corvid-acp";
import { CLOSED_URL } from "../support/agent.mjs";
import { startFakeModel } from "../support/fake-model.mjs";
import { startHitServer } from "../support/hit-server.mjs";
import { launcherRefusal } from "../support/landlock.mjs";
import { running, until } from "../support/processes.mjs";
import { tapStream } from "../support/tap.mjs";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const home = realpathSync(mkdtempSync(join(tmpdir(), "corvid-addon-home-")));
process.env.HOME = home;

const skip = launcherRefusal(process.execPath, [join(repo, "sandbox-launcher.cjs")], join(home, "probe-tmp")) ?? false;

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
 * An in-process agent with its config and data dir in $HOME, a session in a new
 * $HOME/<name>/project (mode full) with $HOME/<name>/elsewhere beside it. `calls(commands)`
 * runs each command as one run_command call of a single model step and returns each result as
 * the model read it. `terminal`: the client runs terminals (`onCreate` sees the request).
 */
async function setup({ terminal = null } = {}) {
  const dir = mkdtempSync(join(home, "s-"));
  const root = join(dir, "project");
  mkdirSync(root);
  mkdirSync(join(dir, "elsewhere"));
  const configFile = join(home, "config.toml");
  writeFileSync(configFile, `[discovery]\nollama_url = "${CLOSED_URL}"\n`);
  const stream = tapStream(createAgent({ configFile, dataDir: join(home, "data"), baseUrl: fake.url, model: "fake-model", apiKey: "k" }));
  let app = acp.client({ name: "addon-sandbox" });
  if (terminal) app = terminal.handlers(app);
  const conn = app.connect(stream);
  const init = await conn.agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: Boolean(terminal) },
    clientInfo: { name: "addon-sandbox", version: "1.0.0" },
  });
  const { sessionId } = await conn.agent.request(acp.methods.agent.session.new, { cwd: root, mcpServers: [] });
  await conn.agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: "mode", value: "full" });
  return {
    dir,
    root,
    init,
    sessionId,
    conn,
    async calls(commands) {
      const m = `ADDON-SANDBOX-${++marker}`;
      const toolCalls = commands.map((command, i) => ({ name: "run_command", arguments: { command }, id: `c${i}` }));
      fake.script(m, { steps: [{ toolCalls }, { chunks: [{ content: "done" }] }] });
      const r = await conn.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: m }] });
      assert.equal(r.stopReason, "end_turn");
      return fake.requests.at(-1).body.messages.filter((msg) => msg.role === "tool").slice(-commands.length).map((msg) => msg.content);
    },
    async done() {
      await stream.close();
      conn.close();
      assert.deepEqual(stream.violations, [], "every message is valid ACP");
    },
  };
}

const ok = (result, what) => assert.match(result, /\[exit code 0\]$/, `${what}: ${result}`);
const failed = (result, what) => assert.doesNotMatch(result, /\[exit code 0\]$/, `${what} should fail: ${result}`);

test("initialize reports the sandbox in force: the addon has a launcher now", { skip }, async () => {
  const t = await setup();
  const meta = t.init._meta.corvid.sandbox;
  assert.equal(meta.kind, "landlock", JSON.stringify(meta));
  assert.ok(Number.isInteger(meta.abi) && meta.abi >= 1, JSON.stringify(meta));
  assert.equal(meta.network, "off");
  assert.equal(meta.mode, "workspace-write");
  await t.done();
});

test("sandboxLauncher: [] names no launcher: commands run unconfined, and initialize says so", async () => {
  const configFile = join(home, "config.toml");
  writeFileSync(configFile, `[discovery]\nollama_url = "${CLOSED_URL}"\n`);
  const stream = createAgent({ configFile, dataDir: join(home, "data"), baseUrl: fake.url, model: "fake-model", sandboxLauncher: [] });
  const conn = acp.client({ name: "addon-unconfined" }).connect(stream);
  const init = await conn.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  assert.equal(init._meta.corvid.sandbox.kind, "none");
  assert.match(init._meta.corvid.sandbox.reason, /launcher/);
  await stream.close();
  conn.close();
});

test("a write inside the folder succeeds; beside it, in $HOME and from a setsid'd grandchild it fails", { skip }, async () => {
  const t = await setup();
  const [inside, beside, inHome, grandchild, env] = await t.calls([
    "mkdir -p a && echo ok > a/f && cat a/f",
    "echo pwned > ../elsewhere/escape.txt",
    'echo pwned > "$HOME/escape.txt"',
    "setsid -w sh -c 'echo pwned > ../elsewhere/setsid.txt; echo ran > setsid-ran'",
    'echo "ern=[$ELECTRON_RUN_AS_NODE] tmp=$TMPDIR"',
  ]);
  ok(inside, "a write inside");
  assert.match(inside, /^ok$/m);
  assert.equal(readFileSync(join(t.root, "a", "f"), "utf8"), "ok\n");
  failed(beside, "a write beside the folder");
  assert.match(beside, /Permission denied/);
  assert.equal(existsSync(join(t.dir, "elsewhere", "escape.txt")), false);
  failed(inHome, "a write to $HOME");
  assert.equal(existsSync(join(home, "escape.txt")), false);
  assert.equal(existsSync(join(t.root, "setsid-ran")), true, grandchild);
  assert.equal(existsSync(join(t.dir, "elsewhere", "setsid.txt")), false, grandchild);
  // The launcher's Electron switch stays with the launcher; TMPDIR is the session's own.
  assert.match(env, new RegExp(`^ern=\\[\\] tmp=${join(home, "data", "tmp")}/`, "m"));
  await t.done();
});

test("no network: a loopback server gets no request", { skip }, async () => {
  const t = await setup();
  const url = server.url;
  hits.length = 0;
  const results = await t.calls([
    `curl -sS -m 3 ${url}/curl`,
    `node -e "fetch('${url}/node').then((r) => console.log(r.status))"`,
  ]);
  for (const [i, r] of results.entries()) failed(r, `network call ${i}`);
  assert.deepEqual(hits, [], "the server was not reached");
  await t.done();
});

test("what a command leaves running ends with it, setsid'd daemons included", { skip }, async () => {
  const t = await setup();
  const tag = `${3000 + Math.floor(Math.random() * 900)}.7`;
  const [r] = await t.calls([`setsid sh -c 'sleep ${tag}' >/dev/null 2>&1 </dev/null & sleep ${tag}1 >/dev/null 2>&1 & echo started`]);
  ok(r, "the command itself");
  await until("the leftovers to be killed", () => running(`sleep ${tag}`).length === 0, 3000);
  await t.done();
});

test("closing the agent mid-command kills the command's tree, setsid'd grandchildren too", { skip }, async () => {
  const t = await setup();
  const tag = `${4000 + Math.floor(Math.random() * 900)}.7`;
  const m = `ADDON-SANDBOX-CLOSE-${++marker}`;
  fake.script(m, { steps: [{ toolCalls: [{ name: "run_command", arguments: { command: `setsid sh -c 'sleep ${tag}' & sleep ${tag}1` } }] }, { chunks: [{ content: "never" }] }] });
  const turn = t.conn.agent.request(acp.methods.agent.session.prompt, { sessionId: t.sessionId, prompt: [{ type: "text", text: m }] });
  await until("the command to run", () => running(`sleep ${tag}`).length === 2, 10000);
  await t.done();
  assert.equal((await turn).stopReason, "cancelled");
  await until("nothing of the command to be left", () => running(`sleep ${tag}`).length === 0, 3000);
});

test("the editor's terminal is asked to run the launcher with Electron's switch, and it confines", { skip }, async () => {
  const created = [];
  const terminals = new Map();
  const terminal = {
    handlers: (app) =>
      app
        .onRequest(acp.methods.client.terminal.create, ({ params }) => {
          created.push(params);
          const env = { ...process.env };
          for (const { name, value } of params.env ?? []) env[name] = value;
          const child = spawn(params.command, params.args ?? [], { cwd: params.cwd, env, detached: true });
          const term = { output: "", exit: null };
          term.exited = new Promise((r) => child.on("exit", (code, signal) => r((term.exit = { exitCode: code, signal }))));
          child.stdout.on("data", (d) => (term.output += d));
          child.stderr.on("data", (d) => (term.output += d));
          const terminalId = `term-${terminals.size + 1}`;
          terminals.set(terminalId, term);
          return { terminalId };
        })
        .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => await terminals.get(params.terminalId).exited)
        .onRequest(acp.methods.client.terminal.output, ({ params }) => {
          const term = terminals.get(params.terminalId);
          return { output: term.output, truncated: false, exitStatus: term.exit };
        })
        .onRequest(acp.methods.client.terminal.kill, () => ({}))
        .onRequest(acp.methods.client.terminal.release, () => ({})),
  };
  const t = await setup({ terminal });
  const [r] = await t.calls(["echo inside > in.txt; echo pwned > ../elsewhere/escape.txt"]);
  assert.equal(created.length, 1);
  const [create] = created;
  assert.equal(create.command, process.execPath);
  // The user's command, after a short fixed prefix; the policy in the environment.
  assert.deepEqual(create.args, [join(repo, "sandbox-launcher.cjs"), "sandbox", "--", "sh", "-c", "echo inside > in.txt; echo pwned > ../elsewhere/escape.txt"]);
  assert.ok(create.env.some((v) => v.name === "ELECTRON_RUN_AS_NODE" && v.value === "1"), JSON.stringify(create.env));
  const policy = JSON.parse(create.env.find((v) => v.name === "CORVID_SANDBOX_POLICY").value);
  assert.ok(policy.roots.some((r) => r.endsWith("project")), JSON.stringify(policy.roots));
  assert.equal(readFileSync(join(t.root, "in.txt"), "utf8"), "inside\n");
  assert.equal(existsSync(join(t.dir, "elsewhere", "escape.txt")), false, "the write beside the folder was refused");
  assert.match(r, /Permission denied/);
  await t.done();
});

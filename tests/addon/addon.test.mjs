// The in-process agent (napi addon + `corvid-acp` package) driven by the official SDKs.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import * as acp from "@agentclientprotocol/sdk";
import * as acp1 from "acp-sdk-v1";
import { createAgent } from "corvid-acp";
import { startFakeModel } from "../support/fake-model.mjs";
import { CLOSED_URL } from "../support/agent.mjs";
import { tapStream } from "../support/tap.mjs";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

/** Options for an isolated agent: its own data dir and config, the fake model. */
function options(extra = {}) {
  const dir = mkdtempSync(join(tmpdir(), "corvid-addon-"));
  const configFile = join(dir, "config.toml");
  writeFileSync(configFile, `[discovery]\nollama_url = "${CLOSED_URL}"\n`);
  return { configFile, dataDir: join(dir, "data"), baseUrl: fake.url, model: "fake-model", apiKey: "k", ...extra };
}

const INIT = { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "addon-test", version: "1" } };

test("a full prompt turn in-process through SDK 2.x, every message schema-valid", async () => {
  fake.script("INPROC-1", { chunks: [{ reasoning: "thinking" }, { content: "in-process " }, { content: "hello" }] });
  const stream = tapStream(createAgent(options()));
  const updates = [];
  const conn = acp
    .client({ name: "addon-test" })
    .onNotification(acp.methods.client.session.update, ({ params }) => void updates.push(params.update))
    .connect(stream);
  const init = await conn.agent.request(acp.methods.agent.initialize, INIT);
  assert.equal(init.agentInfo.name, "corvid");
  assert.equal(init.agentCapabilities.loadSession, true, "the store works in-process too");
  const { sessionId } = await conn.agent.request(acp.methods.agent.session.new, { cwd: tmpdir(), mcpServers: [] });
  const res = await conn.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "INPROC-1" }] });
  assert.equal(res.stopReason, "end_turn");
  const text = updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");
  assert.equal(text, "in-process hello");
  assert.ok(updates.some((u) => u.sessionUpdate === "agent_thought_chunk"));
  await stream.close();
  conn.close();
  assert.deepEqual(stream.violations, []);
});

test("tool calls in-process, with the permission request answered from JS", async () => {
  const ws = mkdtempSync(join(tmpdir(), "corvid-addon-ws-"));
  fake.script("INPROC-TOOLS", {
    steps: [
      { toolCalls: [{ name: "write_file", arguments: { path: "hello.txt", content: "from the addon\n" } }] },
      { toolCalls: [{ name: "write_file", arguments: { path: "denied.txt", content: "no" } }] },
      { chunks: [{ content: "Wrote one file." }] },
    ],
  });
  const stream = tapStream(createAgent(options()));
  const updates = [];
  const asked = [];
  const conn = acp
    .client({ name: "addon-tools" })
    .onNotification(acp.methods.client.session.update, ({ params }) => void updates.push(params.update))
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      asked.push(params);
      const optionId = params.toolCall.rawInput.path === "hello.txt" ? "allow_once" : "reject_once";
      return { outcome: { outcome: "selected", optionId } };
    })
    .connect(stream);
  await conn.agent.request("initialize", INIT);
  const { sessionId } = await conn.agent.request("session/new", { cwd: ws, mcpServers: [] });
  const res = await conn.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "INPROC-TOOLS" }] });
  assert.equal(res.stopReason, "end_turn");
  assert.equal(asked.length, 2);
  assert.equal(readFileSync(join(ws, "hello.txt"), "utf8"), "from the addon\n");
  assert.equal(existsSync(join(ws, "denied.txt")), false);
  const finals = updates.filter((u) => u.sessionUpdate === "tool_call_update" && (u.status === "completed" || u.status === "failed"));
  assert.deepEqual(finals.map((u) => u.status), ["completed", "failed"]);
  assert.equal(finals[0].content[0].type, "diff");
  await stream.close();
  assert.deepEqual(stream.violations, []);
});

test("SDK 1.x ClientSideConnection works over the same stream", async () => {
  const stream = tapStream(createAgent(options()));
  const seen = [];
  const conn = new acp1.ClientSideConnection(
    () => ({ sessionUpdate: async (p) => void seen.push(p), requestPermission: async () => ({ outcome: { outcome: "cancelled" } }) }),
    stream,
  );
  assert.equal((await conn.initialize(INIT)).protocolVersion, 1);
  const { sessionId } = await conn.newSession({ cwd: tmpdir(), mcpServers: [] });
  assert.equal((await conn.prompt({ sessionId, prompt: [{ type: "text", text: "v1 in-process" }] })).stopReason, "end_turn");
  assert.ok(seen.some((p) => p.update.sessionUpdate === "agent_message_chunk"));
  await stream.close();
  assert.deepEqual(stream.violations, []);
});

test("two agents in one process are isolated", async () => {
  fake.script("ISO-A", { chunks: Array.from({ length: 20 }, () => ({ content: "A" })), delayMs: 5 });
  fake.script("ISO-B", { chunks: Array.from({ length: 20 }, () => ({ content: "B" })), delayMs: 5 });
  const [sa, sb] = [tapStream(createAgent(options())), tapStream(createAgent(options()))];
  const [ua, ub] = [[], []];
  const ca = acp.client({ name: "a" }).onNotification(acp.methods.client.session.update, ({ params }) => void ua.push(params)).connect(sa);
  const cb = acp.client({ name: "b" }).onNotification(acp.methods.client.session.update, ({ params }) => void ub.push(params)).connect(sb);
  await Promise.all([ca.agent.request("initialize", INIT), cb.agent.request("initialize", INIT)]);
  const [a, b] = await Promise.all([
    ca.agent.request("session/new", { cwd: tmpdir(), mcpServers: [] }),
    cb.agent.request("session/new", { cwd: tmpdir(), mcpServers: [] }),
  ]);
  await Promise.all([
    ca.agent.request("session/prompt", { sessionId: a.sessionId, prompt: [{ type: "text", text: "ISO-A" }] }),
    cb.agent.request("session/prompt", { sessionId: b.sessionId, prompt: [{ type: "text", text: "ISO-B" }] }),
  ]);
  assert.ok(ua.every((p) => p.sessionId === a.sessionId) && ub.every((p) => p.sessionId === b.sessionId));
  const textA = ua.filter((p) => p.update.sessionUpdate === "agent_message_chunk").map((p) => p.update.content.text).join("");
  assert.equal(textA, "A".repeat(20));
  // Agent B knows nothing of agent A's session.
  await assert.rejects(cb.agent.request("session/prompt", { sessionId: a.sessionId, prompt: [{ type: "text", text: "x" }] }), (e) => e.code === -32002);
  await Promise.all([sa.close(), sb.close()]);
  assert.deepEqual([...sa.violations, ...sb.violations], []);
});

test("a throwing log callback does not crash the agent or the process", async () => {
  let calls = 0;
  const stream = createAgent(
    options({
      logLevel: "corvid_core=debug",
      onLog: () => {
        calls++;
        throw new Error("user callback exploded");
      },
    }),
  );
  const conn = acp.client({ name: "thrower" }).connect(stream);
  await conn.agent.request("initialize", INIT);
  const { sessionId } = await conn.agent.request("session/new", { cwd: tmpdir(), mcpServers: [] });
  const res = await conn.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "still alive" }] });
  assert.equal(res.stopReason, "end_turn");
  assert.ok(calls > 0, "the log callback was called");
  await stream.close();
});

/** Runs a script in a fresh Node process (so "exits on its own" can be observed). */
function runScript(source, { timeoutMs = 15000 } = {}) {
  // Inside the package, so `import "corvid-acp"` resolves to this checkout (self-reference).
  mkdirSync(join(repo, "tests", ".tmp"), { recursive: true });
  const file = join(mkdtempSync(join(repo, "tests", ".tmp", "script-")), "script.mjs");
  writeFileSync(file, source);
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [file], { cwd: repo, env: { ...process.env, FAKE_URL: fake.url }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`script did not exit within ${timeoutMs} ms; stdout: ${stdout} stderr: ${stderr}`));
    }, timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

const scriptPrelude = `
import { createAgent } from "corvid-acp";
import * as acp from "@agentclientprotocol/sdk";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
const dir = mkdtempSync(join(tmpdir(), "corvid-s-"));
writeFileSync(join(dir, "c.toml"), '[discovery]\\nollama_url = "${CLOSED_URL}"\\n');
const opts = { configFile: join(dir, "c.toml"), dataDir: join(dir, "d"), baseUrl: process.env.FAKE_URL, model: "fake-model", logLevel: "debug" };
`;

test("close() with a turn in flight: no hang, the turn ends cancelled, the process exits on its own", async () => {
  fake.script("CLOSE-INFLIGHT", { chunks: Array.from({ length: 500 }, () => ({ content: "." })), delayMs: 10 });
  const { code, stdout, stderr } = await runScript(`${scriptPrelude}
const stream = createAgent(opts);
let chunks = 0;
const conn = acp.client({ name: "s" }).onNotification(acp.methods.client.session.update, () => void chunks++).connect(stream);
await conn.agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
const { sessionId } = await conn.agent.request("session/new", { cwd: tmpdir(), mcpServers: [] });
const turn = conn.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "CLOSE-INFLIGHT" }] });
while (chunks < 5) await new Promise((r) => setTimeout(r, 10));
const t0 = performance.now();
await stream.close();
const res = await turn.catch((e) => ({ error: String(e) }));
console.log(JSON.stringify({ res, closeMs: Math.round(performance.now() - t0) }));
// No process.exit(): the process must be able to end by itself.
`);
  assert.equal(code, 0, stderr);
  const out = JSON.parse(stdout.trim().split("\n").at(-1));
  assert.equal(out.res.stopReason, "cancelled");
  // close() waits at most 3 s for serve() to finish before giving up on it; staying under that
  // shows serve() really finished (typically a few ms; a loaded 2-core CI machine has taken 2 s).
  assert.ok(out.closeMs < 2900, `close took ${out.closeMs} ms`);
  console.log(`# close() with a turn in flight took ${out.closeMs} ms`);
});

test("an idle agent that was never closed does not keep the process alive", async () => {
  const { code, stdout } = await runScript(`${scriptPrelude}
const stream = createAgent(opts);
const conn = acp.client({ name: "s" }).connect(stream);
const init = await conn.agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
console.log("initialized", init.protocolVersion);
// No close(): once nothing is outstanding, Node must be free to exit.
`);
  assert.equal(code, 0);
  assert.equal(stdout.trim(), "initialized 1");
});

test("the addon never writes to stdout, even at debug level without a log callback", async () => {
  const { code, stdout } = await runScript(`${scriptPrelude}
const stream = createAgent(opts);
const conn = acp.client({ name: "s" }).connect(stream);
await conn.agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
const { sessionId } = await conn.agent.request("session/new", { cwd: tmpdir(), mcpServers: [] });
await conn.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "quiet please" }] });
await stream.close();
process.stdout.write("ONLY-THIS");
`);
  assert.equal(code, 0);
  assert.equal(stdout, "ONLY-THIS");
});

test("100 create/close cycles keep RSS growth bounded", async () => {
  const { code, stdout, stderr } = await runScript(
    `${scriptPrelude}
async function cycle() {
  const stream = createAgent(opts);
  const conn = acp.client({ name: "s" }).connect(stream);
  await conn.agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  await conn.agent.request("session/new", { cwd: tmpdir(), mcpServers: [] });
  await stream.close();
  conn.close();
}
for (let i = 0; i < 10; i++) await cycle(); // warm-up: allocator pools, the store's first open
global.gc?.();
const before = process.memoryUsage().rss;
for (let i = 0; i < 100; i++) await cycle();
global.gc?.();
const after = process.memoryUsage().rss;
console.log(JSON.stringify({ before, after, growthMb: (after - before) / 1048576 }));
`,
    { timeoutMs: 60000 },
  );
  assert.equal(code, 0, stderr);
  const { growthMb } = JSON.parse(stdout.trim().split("\n").at(-1));
  console.log(`# RSS growth over 100 create/close cycles: ${growthMb.toFixed(1)} MB`);
  assert.ok(growthMb < 20, `RSS grew ${growthMb.toFixed(1)} MB over 100 cycles (bound: 20 MB)`);
});


test("a busy main thread holds the agent back, not its memory: messages wait in a bounded queue, then the turn waits; all arrive in order", async () => {
  // 30 MB of reply streamed while the host's main thread is blocked for 3 s. With an unbounded
  // callback queue the process grew by ~170 MB here (every message waiting in native memory);
  // bounded, by under 20 MB, however long the wait.
  const count = 30000;
  fake.script("INPROC-BUSY", { repeat: { content: "x".repeat(1000), count } });
  const child = spawn(process.execPath, [join(repo, "tests", "support", "busy-host.mjs"), JSON.stringify(options()), "INPROC-BUSY"], {
    cwd: repo,
    env: { ...process.env, BUSY_MS: "3000" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  const code = await new Promise((r) => child.on("exit", r));
  assert.equal(code, 0, err);
  const report = JSON.parse(out.trim());
  assert.equal(report.stop, "end_turn");
  assert.equal(report.chunks, count, "every chunk arrived");
  assert.equal(report.chunksBeforeAnswer, count, "every chunk came before the prompt's answer");
  assert.ok(report.grownMB < 60, `RSS grew by ${report.grownMB} MB while the main thread was busy`);
});

test("close() closes the store as `corvid acp` does: the write-ahead log is checkpointed and removed", async () => {
  // A log left behind would be read back in full by the next agent on this data dir.
  fake.script("INPROC-CLEAN", { chunks: [{ content: "stored" }] });
  const opts = options();
  const stream = tapStream(createAgent(opts));
  const conn = acp.client({ name: "addon-test" }).connect(stream);
  await conn.agent.request(acp.methods.agent.initialize, INIT);
  const { sessionId } = await conn.agent.request(acp.methods.agent.session.new, { cwd: tmpdir(), mcpServers: [] });
  await conn.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "INPROC-CLEAN" }] });
  const wal = join(opts.dataDir, "sessions.db-wal");
  assert.ok(existsSync(wal), "a running agent writes through the log");
  await stream.close();
  conn.close();
  assert.equal(existsSync(wal), false, "no log is left behind");
});

// Wire-level conformance of `corvid acp`, driven with raw NDJSON lines.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../support/agent.mjs";
import { sqlRows } from "../support/sqlite.mjs";

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

async function withAgent(fn, opts = {}) {
  const agent = spawnAgent({ env: agentEnv({ fake, ...opts }) });
  try {
    await fn(agent);
    assert.deepEqual(agent.violations, [], "every frame is valid ACP");
  } finally {
    await agent.stop();
  }
}

const init = (agent, id = 0, protocolVersion = 1) =>
  agent.request(id, "initialize", { protocolVersion, clientCapabilities: {}, clientInfo: { name: "raw", version: "1" } });

test("initialize answers protocol version 1 whatever was asked", () =>
  withAgent(async (agent) => {
    for (const [i, v] of [0, 1, 2, 999].entries()) {
      const r = await init(agent, i + 1, v);
      assert.equal(r.result.protocolVersion, 1, `asked ${v}`);
      assert.equal(r.result.agentInfo.name, "corvid");
      assert.match(r.result.agentInfo.version, /^\d+\.\d+\.\d+/);
    }
    const r = await init(agent, 9);
    assert.deepEqual(r.result.authMethods, [], "a configured provider needs no auth");
    assert.equal(r.result.agentCapabilities.loadSession, true);
    assert.deepEqual(r.result.agentCapabilities.sessionCapabilities, {
      close: {}, additionalDirectories: {}, list: {}, resume: {}, delete: {}, fork: {}, archive: {}, status: {}, title: {}, systemPrompt: {},
    });
  }));

test("a version Corvid does not speak gets a version back, never an error, whatever its shape", async () => {
  // 65535: the largest version the schema's uint16 allows.
  for (const asked of [999, 65535]) {
    // v1's shape (as conformance suites send it): v1's answer.
    await withAgent(async (agent) => {
      const r = await init(agent, 1, asked);
      assert.equal(r.result?.protocolVersion, 1, `asked ${asked}: ${JSON.stringify(r.error)}`);
    });
    // v2's shape: the latest Corvid speaks.
    await withAgent(async (agent) => {
      const r = await agent.request(1, "initialize", { protocolVersion: asked, info: { name: "future", version: "1" }, capabilities: {} });
      assert.equal(r.result?.protocolVersion, 2, `asked ${asked}: ${JSON.stringify(r.error)}`);
    });
  }
});

test("a malformed line gets -32700 with id null and the connection keeps working", () =>
  withAgent(async (agent) => {
    agent.write('{"jsonrpc":"2.0","id":1,"method":"initialize"');
    const err = await agent.waitFor((f) => f.error?.code === -32700);
    assert.equal(err.id, null);
    agent.write(Buffer.from([0xff, 0xfe, 0x7b, 0x0a]).toString("latin1"), { raw: true });
    const r = await init(agent, 2);
    assert.equal(r.result.protocolVersion, 1);
    // Each error is answered from a task of its own (the dispatch loop never waits for room
    // in the outgoing queue), so the second one may arrive after the initialize answer.
    const parseErrors = () => agent.frames.filter((f) => f.error?.code === -32700);
    await agent.waitFor(() => parseErrors().length === 2, 5000, "the second -32700");
    assert.equal(parseErrors().length, 2);
  }));

test("non-request JSON gets -32600", () =>
  withAgent(async (agent) => {
    agent.write("[1,2,3]");
    agent.write('{"jsonrpc":"2.0","id":"x","method":17}');
    agent.write('"hello"');
    await agent.waitFor((f) => f.id === "x" && f.error?.code === -32600);
    await agent.waitFor(() => agent.frames.filter((g) => g.error?.code === -32600).length === 3, 5000, "three -32600 errors");
    assert.equal((await init(agent, 5)).result.protocolVersion, 1);
  }));

test("an oversize line is rejected without killing the connection", () =>
  withAgent(async (agent) => {
    const big = JSON.stringify({ jsonrpc: "2.0", id: 41, method: "initialize", params: { protocolVersion: 1, pad: "x".repeat(5000) } });
    agent.write(big);
    const err = await agent.waitFor((f) => f.id === 41);
    assert.equal(err.error.code, -32600);
    assert.match(err.error.message, /exceeds the limit of 2048 bytes/);
    assert.equal((await init(agent, 42)).result.protocolVersion, 1);
  }, { config: "[limits]\nmax_message_bytes = 2048\n" }));

test("a 20 MiB line against the default 16 MiB limit", () =>
  withAgent(async (agent) => {
    const pad = "y".repeat(20 * 1024 * 1024);
    agent.write(`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":1,"pad":"${pad}"}}`);
    const err = await agent.waitFor((f) => f.id === 7, 20000);
    assert.equal(err.error.code, -32600);
    assert.match(err.error.message, /exceeds the limit of 16777216 bytes/);
    assert.equal((await init(agent, 8)).result.protocolVersion, 1);
  }));

test("unknown methods get -32601, unknown notifications are ignored", () =>
  withAgent(async (agent) => {
    const r = await agent.request(1, "no/such/method", {});
    assert.equal(r.error.code, -32601);
    assert.equal((await agent.request(2, "session/set_model", { sessionId: "s", modelId: "m" })).error.code, -32601);
    assert.equal((await agent.request(3, "_vendor.example/thing", {})).error.code, -32601);
    const before = agent.frames.length;
    agent.send({ jsonrpc: "2.0", method: "some/notification", params: {} });
    agent.send({ jsonrpc: "2.0", method: "_vendor.example/notice", params: {} });
    assert.equal((await init(agent, 4)).result.protocolVersion, 1);
    assert.equal(agent.frames.length, before + 1, "only the initialize response arrived");
  }));

test("bad params get -32602 naming the field", () =>
  withAgent(async (agent) => {
    await init(agent);
    const cases = [
      ["initialize", { protocolVersion: "1.0.0" }, /initialize: protocolVersion/],
      ["session/new", { mcpServers: [] }, /session\/new: missing field `cwd`/],
      ["session/new", { cwd: "relative/dir", mcpServers: [] }, /session\/new: cwd must be an absolute path/],
      ["session/new", { cwd: "/definitely/not/here", mcpServers: [] }, /session\/new: cwd does not exist/],
      ["session/new", { cwd: 42, mcpServers: [] }, /session\/new: cwd: invalid type/],
      ["session/prompt", { sessionId: "s" }, /session\/prompt: missing field `prompt`/],
      ["session/prompt", { sessionId: "s", prompt: [{ type: "text" }] }, /session\/prompt: prompt\[0\]/],
    ];
    let id = 10;
    for (const [method, params, pattern] of cases) {
      const r = await agent.request(++id, method, params);
      assert.equal(r.error?.code, -32602, `${method} ${JSON.stringify(params)} → ${JSON.stringify(r)}`);
      assert.match(r.error.message, pattern);
    }
    const file = join(mkdtempSync(join(tmpdir(), "corvid-f-")), "file.txt");
    writeFileSync(file, "x");
    const r = await agent.request(99, "session/new", { cwd: file, mcpServers: [] });
    assert.match(r.error.message, /cwd is not a directory/);
  }));

test("unknown session ids get -32002 with the sessionId in data", () =>
  withAgent(async (agent) => {
    await init(agent);
    const r = await agent.request(1, "session/prompt", { sessionId: "nope", prompt: [{ type: "text", text: "hi" }] });
    assert.equal(r.error.code, -32002);
    assert.deepEqual(r.error.data, { sessionId: "nope" });
    agent.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "nope" } });
    assert.equal((await agent.request(2, "session/close", { sessionId: "nope" })).error.code, -32002);
  }));

test("a second prompt on a busy session gets a clear error; the first turn is unaffected", () =>
  withAgent(async (agent) => {
    fake.script("BUSY-TURN", { chunks: [{ content: "a" }, { content: "b" }, { content: "c" }], delayMs: 150 });
    await init(agent);
    const { result } = await agent.request(1, "session/new", { cwd: tmpdir(), mcpServers: [] });
    const sessionId = result.sessionId;
    agent.send({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "BUSY-TURN" }] } });
    const busy = await agent.request(3, "session/prompt", { sessionId, prompt: [{ type: "text", text: "again" }] });
    assert.equal(busy.error.code, -32001);
    assert.match(busy.error.message, /busy/);
    assert.deepEqual(busy.error.data, { sessionId });
    const first = await agent.waitFor((f) => f.id === 2);
    assert.equal(first.result.stopReason, "end_turn");
    const after = await agent.request(4, "session/prompt", { sessionId, prompt: [{ type: "text", text: "now fine" }] });
    assert.equal(after.result.stopReason, "end_turn");
  }));

test("requests piped in right before end of input are still answered (echo … | corvid acp)", async () => {
  const agent = spawnAgent({ env: agentEnv({ fake }) });
  // All in one write and then EOF, as a shell pipe delivers them.
  const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } };
  const created = { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: tmpdir(), mcpServers: [] } };
  agent.write(`${JSON.stringify(init)}\n${JSON.stringify(created)}\n`, { raw: true });
  agent.child.stdin.end();
  const { code } = await agent.exited;
  assert.equal(code, 0);
  const first = agent.frames.find((f) => f.id === 1);
  assert.equal(first?.result?.protocolVersion, 1, JSON.stringify(first));
  const second = agent.frames.find((f) => f.id === 2);
  assert.match(second?.result?.sessionId ?? "", /./, JSON.stringify(second));
  assert.deepEqual(agent.violations, []);
});

test("closing stdin mid-turn exits 0 within 1 s", async () => {
  fake.script("SLOW-STDIN", { chunks: Array.from({ length: 100 }, () => ({ content: "." })), delayMs: 100 });
  const agent = spawnAgent({ env: agentEnv({ fake }) });
  await init(agent);
  const { result } = await agent.request(1, "session/new", { cwd: tmpdir(), mcpServers: [] });
  agent.send({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: { sessionId: result.sessionId, prompt: [{ type: "text", text: "SLOW-STDIN" }] } });
  await agent.waitFor((f) => f.method === "session/update");
  const t0 = performance.now();
  agent.child.stdin.end();
  const { code, at } = await agent.exited;
  assert.equal(code, 0);
  // The agent's own shutdown deadline is 1 s; the margin absorbs a loaded CI machine (the
  // typical figure is in the benchmark, not here).
  assert.ok(at - t0 < 3000, `exited after ${Math.round(at - t0)} ms`);
  assert.deepEqual(agent.violations, []);
});

// SIGHUP is what Emacs sends to its subprocesses (and a closed terminal to its jobs).
for (const signal of ["SIGTERM", "SIGHUP"]) {
  test(`${signal} mid-turn cancels the turn, stores it as cancelled and exits 0 within 1 s`, async () => {
    const marker = `SLOW-${signal}`;
    fake.script(marker, { chunks: Array.from({ length: 100 }, () => ({ content: "." })), delayMs: 100 });
    const env = agentEnv({ fake });
    const agent = spawnAgent({ env });
    await init(agent);
    const { result } = await agent.request(1, "session/new", { cwd: tmpdir(), mcpServers: [] });
    agent.send({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: { sessionId: result.sessionId, prompt: [{ type: "text", text: marker }] } });
    // The turn's own output, not session/new's available_commands_update: on a loaded machine
    // the signal could otherwise arrive before the prompt was even read (then nothing answers it).
    await agent.waitFor((f) => f.params?.update?.sessionUpdate === "agent_message_chunk");
    const t0 = performance.now();
    agent.child.kill(signal);
    const { code, signal: killedBy, at } = await agent.exited;
    assert.equal(killedBy ?? null, null, `killed by ${killedBy}`);
    assert.equal(code, 0);
    // The agent's own shutdown deadline is 1 s; the margin absorbs a loaded CI machine (the
    // typical figure is in the benchmark, not here).
    assert.ok(at - t0 < 3000, `exited after ${Math.round(at - t0)} ms`);
    const response = agent.frames.find((f) => f.id === 2);
    assert.equal(response?.result?.stopReason, "cancelled", "the running turn was answered as cancelled");
    assert.deepEqual(agent.violations, []);
    const db = join(env.CORVID_DATA_DIR, "sessions.db");
    assert.deepEqual(sqlRows(db, "select status, stop_reason from turns"), [["finished", "cancelled"]]);
  });
}

test("nothing but frames on stdout, even with debug logging on", () =>
  withAgent(async (agent) => {
    await init(agent);
    await agent.request(1, "session/new", { cwd: tmpdir(), mcpServers: [] });
    await agent.waitForStderr(/session created/);
    assert.ok(agent.frames.every((f) => f.jsonrpc === "2.0"), "stdout held frames only");
  }));

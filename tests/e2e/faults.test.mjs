// Faults mid-turn: a panic inside a turn (through the test-only CORVID_TEST_FAULT hook), a
// model stream that stalls, resets or sends garbage, a client that disconnects. Each must end
// the turn cleanly, persisted, with a clear message, and leave the process and the session
// usable. (A client that never answers a permission request: tools.test.mjs.)
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent, textOf } from "../support/agent.mjs";

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

const INIT = { protocolVersion: 1, clientCapabilities: {} };
const text = (t) => [{ type: "text", text: t }];

/** Python's sqlite3 reads the store file (an independent reader). */
function sql(env, query) {
  const db = join(env.CORVID_DATA_DIR, "sessions.db");
  const out = execFileSync("python3", ["-c", "import sqlite3,sys,json; c=sqlite3.connect(sys.argv[1]); print(json.dumps(c.execute(sys.argv[2]).fetchall()))", db, query], {
    encoding: "utf8",
  });
  return JSON.parse(out);
}

async function start(env) {
  const agent = spawnAgent({ env });
  await agent.request("init", "initialize", INIT);
  return agent;
}

async function finish(agent) {
  await agent.stop();
  assert.deepEqual(agent.violations, [], "every frame is valid ACP");
  // The default panic hook prints "panicked at <place>:" and the message on the next line.
  for (const [, message] of agent.stderr.matchAll(/panicked at [^\n]*\n([^\n]*)/g)) {
    assert.equal(message, "test fault: panic-in-turn", "no panic other than the injected one");
  }
}

async function newSession(agent, id, cwd) {
  return (await agent.request(id, "session/new", { cwd, mcpServers: [] })).result.sessionId;
}

/** Loads `sessionId` in a fresh process and returns the replayed updates. */
async function replay(env, sessionId, cwd) {
  const agent = await start(env);
  const r = await agent.request(1, "session/load", { sessionId, cwd, mcpServers: [] });
  assert.ok(r.result, JSON.stringify(r));
  const updates = agent.updates(sessionId);
  await finish(agent);
  return updates;
}

test("a panic inside a turn fails that turn only: -32603, stored as failed, the session and others go on", async () => {
  const env = agentEnv({ fake, extra: { CORVID_TEST_FAULT: "panic-in-turn" } });
  const cwd = mkdtempSync(join(tmpdir(), "corvid-panic-"));
  fake.script("PANIC-NOW", { chunks: [{ content: "Working on it… " }, { content: "CORVID-TEST-PANIC" }, { content: " never seen" }] });
  fake.script("SLOW-OTHER", { chunks: Array.from({ length: 20 }, (_, i) => ({ content: `o${i} ` })), delayMs: 25 });
  fake.script("AFTER-PANIC", { chunks: [{ content: "still here" }] });
  const agent = await start(env);
  const a = await newSession(agent, 1, cwd);
  const b = await newSession(agent, 2, cwd);
  // Another session's turn is running while the first one panics.
  agent.send({ jsonrpc: "2.0", id: 3, method: "session/prompt", params: { sessionId: b, prompt: text("SLOW-OTHER") } });
  await agent.waitFor((f) => f.method === "session/update" && f.params.sessionId === b && f.params.update.content?.text === "o0 ");
  const failed = await agent.request(4, "session/prompt", { sessionId: a, prompt: text("PANIC-NOW please") });
  assert.equal(failed.error?.code, -32603, JSON.stringify(failed));
  assert.match(failed.error.message, /session\/prompt: the turn failed: test fault: panic-in-turn/);
  const said = textOf(agent.updates(a), "agent_message_chunk");
  assert.match(said, /^Working on it… /);
  assert.match(said, /Corvid hit an internal error and ended this turn \(test fault: panic-in-turn\)/);
  assert.doesNotMatch(said, /never seen/);

  const other = await agent.waitFor((f) => f.id === 3, 10000);
  assert.equal(other.result?.stopReason, "end_turn", "the other session's turn is unaffected");
  const again = await agent.request(5, "session/prompt", { sessionId: a, prompt: text("AFTER-PANIC") });
  assert.equal(again.result?.stopReason, "end_turn", "the session takes the next prompt");
  assert.deepEqual(
    sql(env, `SELECT turn, status, stop_reason FROM turns WHERE session_id = '${a}' ORDER BY turn`),
    [
      [1, "failed", null],
      [2, "finished", "end_turn"],
    ],
  );
  await finish(agent);
  assert.match(agent.stderr, /a prompt turn panicked/);

  // Another process replays the failed turn with its note, and nothing is left running.
  const replayed = textOf(await replay(env, a, cwd), "agent_message_chunk");
  assert.match(replayed, /Working on it… [\s\S]*internal error[\s\S]*still here/);
  assert.doesNotMatch(replayed, /interrupted/, "a failed turn is closed, not left for crash recovery");
});

test("a model stream that stalls mid-turn fails after the stall timeout, saying so; stored, and the session goes on", async () => {
  const env = agentEnv({ fake, config: "[provider]\nstall_timeout_secs = 1\nmax_retries = 0\n" });
  const cwd = mkdtempSync(join(tmpdir(), "corvid-stall-"));
  fake.script("STALL-MID", { chunks: [{ content: "half an answer" }], stall: true });
  fake.script("AFTER-STALL", { chunks: [{ content: "recovered" }] });
  const agent = await start(env);
  const s = await newSession(agent, 1, cwd);
  const r = await agent.request(2, "session/prompt", { sessionId: s, prompt: text("STALL-MID") }, 10000);
  assert.equal(r.error?.code, -32603, JSON.stringify(r));
  assert.match(r.error.message, /model provider sent nothing for 1 s; giving up/);
  assert.equal(textOf(agent.updates(s), "agent_message_chunk"), "half an answer");
  assert.equal((await agent.request(3, "session/prompt", { sessionId: s, prompt: text("AFTER-STALL") })).result?.stopReason, "end_turn");
  // The partial answer stays in the model's context.
  const ctx = fake.requests.at(-1).body.messages.filter((m) => m.role !== "system");
  assert.deepEqual(ctx.map((m) => m.role), ["user", "assistant", "user"]);
  assert.equal(ctx[1].content, "half an answer");
  assert.deepEqual(sql(env, "SELECT status FROM turns ORDER BY turn"), [["failed"], ["finished"]]);
  await finish(agent);
});

test("a connection reset and garbage mid-stream: clear errors, stored as failed turns with the partial answer", async () => {
  const env = agentEnv({ fake, config: "[provider]\nmax_retries = 0\n" });
  const cwd = mkdtempSync(join(tmpdir(), "corvid-reset-"));
  fake.script("RESET-MID", { chunks: [{ content: "before the reset" }], reset: true });
  fake.script("GARBAGE-MID", { garbage: true });
  const agent = await start(env);
  const s = await newSession(agent, 1, cwd);
  const reset = await agent.request(2, "session/prompt", { sessionId: s, prompt: text("RESET-MID") });
  assert.equal(reset.error?.code, -32603, JSON.stringify(reset));
  assert.match(reset.error.message, /model provider/);
  assert.match(reset.error.message, /stream|connection|closed|reset/i);
  const garbage = await agent.request(3, "session/prompt", { sessionId: s, prompt: text("GARBAGE-MID") });
  assert.equal(garbage.error?.code, -32603);
  assert.match(garbage.error.message, /invalid stream event/);
  assert.deepEqual(sql(env, "SELECT status, stop_reason FROM turns ORDER BY turn"), [["failed", null], ["failed", null]]);
  await finish(agent);
  const replayed = textOf(await replay(env, s, cwd), "agent_message_chunk");
  assert.equal(replayed, "before the resetpartial ");
});

test("the client disconnects mid-turn: the turn is stored as cancelled; another process loads it and goes on", async () => {
  const env = agentEnv({ fake });
  const cwd = mkdtempSync(join(tmpdir(), "corvid-eof-"));
  fake.script("LONG-TURN", { chunks: Array.from({ length: 200 }, (_, i) => ({ content: `w${i} ` })), delayMs: 10 });
  const agent = await start(env);
  const s = await newSession(agent, 1, cwd);
  agent.send({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: { sessionId: s, prompt: text("LONG-TURN") } });
  await agent.waitFor((f) => f.method === "session/update" && f.params.update.content?.text === "w5 ");
  agent.child.stdin.end();
  const { code } = await agent.exited;
  assert.equal(code, 0);
  const cancelled = agent.frames.find((f) => f.id === 2);
  assert.equal(cancelled?.result?.stopReason, "cancelled", "the turn is answered cancelled on the way out");
  assert.deepEqual(agent.violations, []);
  assert.deepEqual(sql(env, "SELECT status, stop_reason FROM turns"), [["finished", "cancelled"]]);

  const received = textOf(agent.updates(s), "agent_message_chunk");
  fake.script("AFTER-EOF", { chunks: [{ content: "resumed" }] });
  const again = await start(env);
  await again.request(1, "session/load", { sessionId: s, cwd, mcpServers: [] });
  assert.equal(textOf(again.updates(s), "agent_message_chunk"), received, "the partial answer is replayed as sent");
  assert.equal((await again.request(2, "session/prompt", { sessionId: s, prompt: text("AFTER-EOF") })).result?.stopReason, "end_turn");
  const ctx = fake.requests.at(-1).body.messages.filter((m) => m.role !== "system");
  assert.equal(ctx[1].role, "assistant");
  assert.equal(ctx[1].content, received, "the model sees what the user saw");
  await finish(again);
});

// ACP v2 (preview) against the real binary over stdio: the shared scenarios
// (tests/support/v2-scenarios.mjs), plus what only a process shows (the version a spawned
// agent answers, sessions shared with v1 connections through one store). v2 is answered by
// default (`[acp] protocol_v2 = false` or CORVID_PROTOCOL_V2=0 turns it off). Scripted fake
// model over loopback HTTP, a real SQLite file.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import * as acp from "@agentclientprotocol/sdk/experimental/v2";
import * as acp1 from "@agentclientprotocol/sdk";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../support/agent.mjs";
import { v2Validator } from "../support/schema.mjs";
import { connect as connectWith, fullSession, idleWith, marker, registerV2Scenarios, text, workspace } from "../support/v2-scenarios.mjs";

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

/** The binary over stdio; a place is an agent environment (config, data dir, model). */
const binary = {
  name: "binary",
  place: ({ model }) => agentEnv(model ? { fake } : {}),
  async open(env) {
    const agent = spawnAgent({ env, validator: v2Validator() });
    return {
      stream: await agent.sdkStream(acp.ndJsonStream),
      frames: agent.frames,
      violations: agent.violations,
      logs: () => agent.stderr,
      stop: () => agent.stop(),
    };
  },
};

registerV2Scenarios(binary, () => fake);

const connect = (opts = {}) => connectWith(binary, { ...opts, place: opts.env ?? opts.place });

test("v2 is on by default (asking for 3 gets 2, for 1 gets 1); CORVID_PROTOCOL_V2=0 answers 1 to everything", async () => {
  const init = (version) => ({ protocolVersion: version, info: { name: "x", version: "1" }, capabilities: {}, clientCapabilities: {} });
  for (const [asked, answered] of [[3, 2], [2, 2], [1, 1], [0, 1]]) {
    const agent = spawnAgent({ env: agentEnv({ fake }) });
    const r = await agent.request("i", "initialize", init(asked));
    assert.equal(r.result.protocolVersion, answered, `asked ${asked}`);
    await agent.stop();
  }
  const off = spawnAgent({ env: agentEnv({ fake, extra: { CORVID_PROTOCOL_V2: "0" } }) });
  assert.equal((await off.request("i", "initialize", init(2))).result.protocolVersion, 1);
  await off.stop();
});

test("a session made over v1 resumes over v2 with its history replayed in v2's words; list, close, delete", async () => {
  const env = agentEnv({ fake });
  const cwd = workspace();
  const m = marker("V1");
  fake.script(m, { chunks: [{ content: "from a v1 turn" }] });
  // The v1 side, same store.
  const v1 = spawnAgent({ env });
  await v1.request("i", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  const { sessionId } = (await v1.request("n", "session/new", { cwd, mcpServers: [] })).result;
  const r = await v1.request("p", "session/prompt", { sessionId, prompt: [{ type: "text", text: `${m} hello` }] }, 10000);
  assert.equal(r.result.stopReason, "end_turn");
  await v1.stop();
  assert.deepEqual(v1.violations, []);

  const c = await connect({ env });
  const listed = await c.ctx.request(acp.methods.agent.session.list, { cwd });
  assert.deepEqual(listed.sessions.map((x) => x.sessionId), [sessionId]);
  const resumed = await c.ctx.request(acp.methods.agent.session.resume, { sessionId, cwd, replayFrom: { type: "start" } });
  assert.ok(resumed.configOptions.some((o) => o.configId === "mode"));
  const ups = c.of(sessionId);
  const user = ups.find((u) => u.sessionUpdate === "user_message");
  assert.equal(user.content[0].text, `${m} hello`, "the stored user chunks replay as one user_message");
  // The reply, stored as chunks, replays whole (issue 44; it was replayed as its chunks).
  assert.deepEqual(ups.filter((u) => u.sessionUpdate === "agent_message").map((u) => u.content), [[{ type: "text", text: "from a v1 turn" }]]);
  assert.ok(!ups.some((u) => u.sessionUpdate === "agent_message_chunk"));
  assert.ok(!ups.some((u) => u.sessionUpdate === "user_message_chunk"));
  // The resumed session takes a v2 prompt.
  const m2 = marker("AFTER");
  fake.script(m2, { chunks: [{ content: "and from v2" }] });
  // On the wire (the SDK may run notification handlers after it resolves the answer).
  const frames = c.frames;
  const snapshotAt = frames.findIndex((f) => f.params?.update?.sessionUpdate === "state_update");
  const answerAt = frames.findIndex((f) => f.result?.configOptions && !f.result.sessionId);
  assert.ok(snapshotAt >= 0 && snapshotAt < answerAt, `a resume sends the current state before its answer (${snapshotAt}, ${answerAt})`);
  assert.equal(frames[snapshotAt].params.update.state, "idle");
  await c.prompt(sessionId, m2);
  await c.until(sessionId, (u) => u.sessionUpdate === "agent_message_chunk" && u.content.text === "and from v2");
  await c.until(sessionId, () => c.of(sessionId).filter(idleWith("end_turn")).length >= 2, 10000, "the v2 turn's idle");
  await c.ctx.request(acp.methods.agent.session.close, { sessionId });
  await c.ctx.request(acp.methods.agent.session.delete, { sessionId });
  const after = await c.ctx.request(acp.methods.agent.session.list, { cwd });
  assert.deepEqual(after.sessions, []);
  await c.done();
});

test("a v1 connection never sees v2 frames with v2 on", async () => {
  const env = agentEnv({ fake });
  const agent = spawnAgent({ env });
  const r = await agent.request("i", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  assert.equal(r.result.protocolVersion, 1);
  const { sessionId } = (await agent.request("n", "session/new", { cwd: workspace(), mcpServers: [] })).result;
  const m = marker("V1ONLY");
  fake.script(m, { chunks: [{ content: "plain" }] });
  await agent.request("p", "session/prompt", { sessionId, prompt: [{ type: "text", text: m }] }, 10000);
  await agent.stop();
  assert.deepEqual(agent.violations, [], "valid v1");
  assert.ok(!agent.updates(sessionId).some((u) => u.sessionUpdate === "state_update" || u.sessionUpdate === "user_message"));
  assert.equal(typeof acp1.PROTOCOL_VERSION, "number");
});

test("a session whose command ran over v2 loads over v1: no terminal frames, the card shows the output as text", async () => {
  const env = agentEnv({ fake });
  const cwd = workspace();
  const c = await connect({ env });
  const s = await fullSession(c, cwd);
  const m = marker("CROSS");
  fake.script(m, { steps: [{ toolCalls: [{ name: "run_command", arguments: { command: "echo cross-version" } }] }, { chunks: [{ content: "done" }] }] });
  await c.prompt(s.sessionId, m);
  await c.until(s.sessionId, idleWith("end_turn"), 10000, "idle end_turn");
  await c.done();

  const v1 = spawnAgent({ env });
  await v1.request("i", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  const r = await v1.request("l", "session/load", { sessionId: s.sessionId, cwd, mcpServers: [] }, 10000);
  assert.ok(r.result, JSON.stringify(r.error));
  await v1.stop();
  assert.deepEqual(v1.violations, [], "valid v1");
  const ups = v1.updates(s.sessionId);
  assert.ok(!ups.some((u) => u.sessionUpdate.startsWith("terminal_")), "v1 has no agent-owned terminals");
  assert.ok(!JSON.stringify(ups).includes('"type":"terminal"'), "no card names a terminal the v1 client never made");
  const final = ups.filter((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed").at(-1);
  assert.equal(final.content[0].content.text, "cross-version\n");
  assert.equal(text(ups, "agent_message_chunk"), "done");
});

test("kill -9 while a command runs: on resume the terminal has exited (no cancel left) and its card failed", async () => {
  const env = agentEnv({ fake });
  const cwd = workspace();
  const a = spawnAgent({ env, validator: v2Validator() });
  await a.request("i", "initialize", { protocolVersion: 2, info: { name: "crash", version: "1" }, capabilities: {} });
  const { sessionId } = (await a.request("n", "session/new", { cwd })).result;
  await a.request("m", "session/set_config_option", { sessionId, configId: "mode", value: "full" });
  const m = marker("CRASHCMD");
  fake.script(m, { steps: [{ toolCalls: [{ name: "run_command", arguments: { command: "echo begun; sleep 30" } }] }, { chunks: [{ content: "never" }] }] });
  await a.request("p", "session/prompt", { sessionId, prompt: [{ type: "text", text: m }] });
  await a.waitFor((f) => f.params?.update?.sessionUpdate === "terminal_output_chunk");
  a.child.kill("SIGKILL");
  await a.exited;
  assert.deepEqual(a.violations, []);

  const c = await connect({ env });
  await c.ctx.request(acp.methods.agent.session.resume, { sessionId, cwd, replayFrom: { type: "start" } });
  await c.until(sessionId, (u) => u.sessionUpdate === "state_update", 10000, "the state after the replay");
  const ups = c.of(sessionId);
  const terminal = ups.filter((u) => u.sessionUpdate === "terminal_update");
  assert.equal(terminal.length, 2, "announced, then ended by the restore");
  assert.deepEqual(terminal[1].exitStatus, { exitCode: null, signal: null }, "how it ended is not known");
  assert.equal(terminal[1].capabilities, null, "a dead command cannot be cancelled");
  assert.ok(ups.some((u) => u.sessionUpdate === "tool_call_update" && u.status === "failed"), "the card failed");
  await assert.rejects(
    c.ctx.request(acp.methods.agent.terminal.cancel, { sessionId, terminalId: terminal[0].terminalId }),
    (e) => e.code === -32602,
  );
  await c.done();
});

test("kill -9 while a background command runs after its turn: on resume its terminal has exited", async () => {
  const env = agentEnv({ fake });
  const cwd = workspace();
  const a = spawnAgent({ env, validator: v2Validator() });
  await a.request("i", "initialize", { protocolVersion: 2, info: { name: "crash-bg", version: "1" }, capabilities: {} });
  const { sessionId } = (await a.request("n", "session/new", { cwd })).result;
  await a.request("m", "session/set_config_option", { sessionId, configId: "mode", value: "full" });
  const m = marker("CRASHBG");
  fake.script(m, { steps: [{ toolCalls: [{ name: "run_command", arguments: { command: "echo serving; sleep 20", background: true } }] }, { chunks: [{ content: "started" }] }] });
  await a.request("p", "session/prompt", { sessionId, prompt: [{ type: "text", text: m }] });
  await a.waitFor((f) => f.params?.update?.sessionUpdate === "state_update" && f.params.update.state === "idle", 15000, "the turn's end");
  const started = a.updates(sessionId).find((u) => u.sessionUpdate === "terminal_update" && u.command);
  assert.ok(started, "the background terminal was announced");
  assert.ok(!a.updates(sessionId).some((u) => u.sessionUpdate === "terminal_update" && u.exitStatus), "still running at the crash");
  a.child.kill("SIGKILL");
  await a.exited;
  assert.deepEqual(a.violations, []);

  for (const round of [1, 2]) {
    // Closed once in the store: a second resume replays the same end, and adds none.
    const c = await connect({ env });
    await c.ctx.request(acp.methods.agent.session.resume, { sessionId, cwd, replayFrom: { type: "start" } });
    await c.until(sessionId, (u) => u.sessionUpdate === "state_update", 10000, "the state after the replay");
    const terminal = c.of(sessionId).filter((u) => u.sessionUpdate === "terminal_update" && u.terminalId === started.terminalId);
    assert.equal(terminal.length, 2, `round ${round}: announced, then ended by the restore`);
    assert.deepEqual(terminal[1].exitStatus, { exitCode: null, signal: null }, "how it ended is not known");
    await assert.rejects(
      c.ctx.request(acp.methods.agent.terminal.cancel, { sessionId, terminalId: started.terminalId }),
      (e) => e.code === -32602,
    );
    await c.done();
  }
});

test("a v2 client that closes stdin right after its prompt's {messageId} still gets the turn's final idle with its stopReason before the agent exits", async () => {
  const m = marker("EOF-V2");
  fake.script(m, { chunks: Array.from({ length: 100 }, () => ({ content: "." })), delayMs: 100 });
  const agent = spawnAgent({ env: agentEnv({ fake }), validator: v2Validator() });
  const r = await agent.request("i", "initialize", { protocolVersion: 2, info: { name: "x", version: "1" }, capabilities: {}, clientCapabilities: {} });
  assert.equal(r.result.protocolVersion, 2);
  const { sessionId } = (await agent.request("n", "session/new", { cwd: workspace() })).result;
  const answered = await agent.request("p", "session/prompt", { sessionId, prompt: [{ type: "text", text: m }] }, 10000);
  assert.match(answered.result?.messageId ?? "", /./, JSON.stringify(answered));
  agent.child.stdin.end();
  const { code } = await agent.exited;
  assert.equal(code, 0);
  const after = agent.frames.slice(agent.frames.indexOf(answered) + 1);
  const idles = after.filter((f) => f.method === "session/update" && f.params.update.sessionUpdate === "state_update" && f.params.update.state === "idle");
  assert.equal(idles.length, 1, JSON.stringify(after.slice(-5)));
  assert.equal(idles[0].params.update.stopReason, "cancelled");
  assert.equal(after.at(-1), idles[0], "nothing after the turn's idle");
  assert.deepEqual(agent.violations, []);
});

// ACP v2 (preview) against the real binary, driven by the official SDK's `experimental/v2`
// client (SDK 2.4.0), every frame validated against that SDK's v2 schema (`$defs` per method).
// v2 is answered only with `[acp] protocol_v2 = true` (here CORVID_PROTOCOL_V2=1) until every
// v2 method is served (issue 17). Scripted fake model over loopback HTTP, a real SQLite file.
import assert from "node:assert/strict";
import { mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import * as acp from "@agentclientprotocol/sdk/experimental/v2";
import * as acp1 from "@agentclientprotocol/sdk";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../support/agent.mjs";
import { v2Validator } from "../support/schema.mjs";

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

let n = 0;
const marker = (name) => `V2-${name}-${++n}`;
const workspace = () => realpathSync(mkdtempSync(join(tmpdir(), "corvid-v2-")));

/**
 * Spawns Corvid with v2 on, connects the SDK's v2 client, initializes. `answer(params)`
 * answers permission requests (an optionId, or null for cancelled).
 */
async function connect({ env = agentEnv({ fake, extra: { CORVID_PROTOCOL_V2: "1" } }), answer = () => null } = {}) {
  const agent = spawnAgent({ env, validator: v2Validator() });
  const updates = [];
  const permissions = [];
  const app = acp
    .client({ name: "corvid-v2-e2e" })
    .onNotification(acp.methods.client.session.update, ({ params }) => void updates.push(params))
    .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
      permissions.push(params);
      const optionId = await answer(params);
      return { outcome: optionId === null ? { outcome: "cancelled" } : { outcome: "selected", optionId } };
    });
  const conn = app.connect(await agent.sdkStream(acp.ndJsonStream));
  const init = await conn.agent.request(acp.methods.agent.initialize, {
    protocolVersion: 2,
    info: { name: "corvid-v2-e2e", version: "1.0.0" },
    capabilities: {},
  });
  const ctx = conn.agent;
  return {
    agent,
    init,
    ctx,
    updates,
    permissions,
    env,
    of: (sessionId) => updates.filter((u) => u.sessionId === sessionId).map((u) => u.update),
    /** Resolves with the first update of `sessionId` (seen or future) matching `pred`. */
    async until(sessionId, pred, ms = 10000, what = "update") {
      const t0 = performance.now();
      for (;;) {
        const found = updates.find((u) => u.sessionId === sessionId && pred(u.update));
        if (found) return found.update;
        if (performance.now() - t0 > ms) throw new Error(`no ${what} within ${ms} ms; stderr:\n${agent.stderr.slice(-1500)}`);
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    newSession: (cwd = workspace()) => ctx.request(acp.methods.agent.session.new, { cwd }),
    prompt: (sessionId, text) => ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] }),
    async done() {
      conn.close();
      await agent.stop();
      assert.deepEqual(agent.violations, [], "every frame is valid ACP v2");
      assert.doesNotMatch(agent.stderr, /panicked/);
    },
  };
}

const idleWith = (stop) => (u) => u.sessionUpdate === "state_update" && u.state === "idle" && u.stopReason === stop;
const text = (ups, kind) => ups.filter((u) => u.sessionUpdate === kind).map((u) => u.content.text).join("");

test("v2 is off by default: asking for 2 gets 1", async () => {
  const agent = spawnAgent({ env: agentEnv({ fake }) });
  const r = await agent.request("i", "initialize", { protocolVersion: 2, clientCapabilities: {} });
  assert.equal(r.result.protocolVersion, 1);
  await agent.stop();
});

test("handshake; prompt → messageId → user_message echo → streamed answer → idle/end_turn", async () => {
  const c = await connect();
  assert.equal(c.init.protocolVersion, 2);
  assert.equal(c.init.info.name, "corvid");
  assert.ok(c.init.capabilities.session.prompt, "prompt capabilities under session");
  assert.equal(c.init._meta.steering, undefined, "v2 inserts mid-turn prompts itself: no _session/steering");
  const m = marker("STREAM");
  fake.script(m, { chunks: [{ reasoning: "Thinking." }, { content: "Hello" }, { content: ", v2!" }] });
  const s = await c.newSession();
  assert.match(s.sessionId, /^[0-9a-f-]{36}$/);
  assert.ok(s.configOptions.some((o) => o.configId === "model"), JSON.stringify(s.configOptions));
  assert.ok(s.availableCommands.every((cmd) => cmd.type === "command"));
  const res = await c.prompt(s.sessionId, `${m} please`);
  assert.match(res.messageId, /^[0-9a-f-]{36}$/);
  await c.until(s.sessionId, idleWith("end_turn"), 10000, "idle end_turn");
  const ups = c.of(s.sessionId);
  const kinds = ups.map((u) => (u.sessionUpdate === "state_update" ? `state:${u.state}` : u.sessionUpdate));
  const echo = ups.find((u) => u.sessionUpdate === "user_message");
  assert.equal(echo.messageId, res.messageId, "the echo carries the prompt's messageId");
  assert.equal(echo.content[0].text, `${m} please`);
  assert.ok(kinds.indexOf("user_message") < kinds.indexOf("state:running"), kinds.join(","));
  assert.ok(kinds.indexOf("state:running") < kinds.indexOf("agent_message_chunk"), kinds.join(","));
  assert.equal(kinds.at(-1), "state:idle", "idle is the turn's last word");
  assert.equal(text(ups, "agent_message_chunk"), "Hello, v2!");
  assert.equal(text(ups, "agent_thought_chunk"), "Thinking.");
  await c.done();
});

test("a permission turn: requires_action while asked, running once allowed; the edit lands as a v2 diff", async () => {
  const c = await connect({ answer: (p) => p.options.find((o) => o.kind === "allow_once").optionId });
  const cwd = workspace();
  const s = await c.newSession(cwd);
  const m = marker("WRITE");
  fake.script(m, {
    steps: [{ toolCalls: [{ name: "write_file", arguments: { path: "a.txt", content: "one\ntwo\n" } }] }, { chunks: [{ content: "Written." }] }],
  });
  await c.prompt(s.sessionId, m);
  await c.until(s.sessionId, idleWith("end_turn"), 10000, "idle end_turn");
  assert.equal(c.permissions.length, 1);
  const asked = c.permissions[0];
  assert.match(asked.title, /a\.txt/);
  assert.equal(asked.subject.type, "tool_call");
  const states = c.of(s.sessionId).filter((u) => u.sessionUpdate === "state_update").map((u) => u.state);
  assert.deepEqual(states, ["running", "requires_action", "running", "idle"]);
  const diff = c
    .of(s.sessionId)
    .filter((u) => u.sessionUpdate === "tool_call_update")
    .flatMap((u) => u.content ?? [])
    .find((x) => x.type === "diff");
  assert.deepEqual(diff.changes, [{ operation: "add", path: join(cwd, "a.txt"), fileType: "text" }]);
  assert.match(diff.patch.text, /^diff --git .*\nnew file mode 100644\n--- \/dev\/null\n\+\+\+ .*a\.txt\n@@ -0,0 \+1,2 @@\n\+one\n\+two\n$/m);
  await c.done();
});

test("a prompt sent while a turn runs is inserted: both get a messageId, the model reads the second in the same turn", async () => {
  const c = await connect();
  const s = await c.newSession();
  const first = marker("LONG");
  const second = marker("INSERTED");
  fake.script(first, { chunks: Array.from({ length: 30 }, (_, i) => ({ content: `w${i} ` })), delayMs: 15 });
  fake.script(second, { chunks: [{ content: "answered the inserted one" }] });
  const before = fake.requests.length;
  const a = await c.prompt(s.sessionId, first);
  await c.until(s.sessionId, (u) => u.sessionUpdate === "agent_message_chunk");
  const b = await c.prompt(s.sessionId, `${second}: and this too`);
  assert.notEqual(a.messageId, b.messageId);
  await c.until(s.sessionId, (u) => u.sessionUpdate === "agent_message_chunk" && u.content.text.includes("inserted one"), 10000);
  await c.until(s.sessionId, idleWith("end_turn"));
  const echoes = c.of(s.sessionId).filter((u) => u.sessionUpdate === "user_message").map((u) => u.messageId);
  assert.deepEqual(echoes, [a.messageId, b.messageId]);
  const idles = c.of(s.sessionId).filter(idleWith("end_turn"));
  assert.equal(idles.length, 1, "one turn took both prompts");
  const lastRequest = fake.requests.slice(before).filter((q) => q.api === "openai").at(-1);
  assert.match(JSON.stringify(lastRequest.body.messages), new RegExp(second));
  await c.done();
});

test("session/cancel ends the turn with idle/cancelled and nothing after it", async () => {
  const c = await connect();
  const s = await c.newSession();
  const m = marker("SLOW");
  fake.script(m, { chunks: Array.from({ length: 200 }, (_, i) => ({ content: `x${i} ` })), delayMs: 20 });
  await c.prompt(s.sessionId, m);
  await c.until(s.sessionId, (u) => u.sessionUpdate === "agent_message_chunk");
  await c.ctx.notify(acp.methods.agent.session.cancel, { sessionId: s.sessionId });
  await c.until(s.sessionId, idleWith("cancelled"), 10000, "idle cancelled");
  await new Promise((r) => setTimeout(r, 300));
  const ups = c.of(s.sessionId);
  assert.equal(ups.at(-1).state, "idle", "nothing is sent after the turn's end");
  assert.ok(!text(ups, "agent_message_chunk").includes("x199"));
  await c.done();
});

test("tool_call/cancel stops one running command: the card ends cancelled, the model is told, the turn goes on", async () => {
  const c = await connect();
  const s = await c.newSession();
  await c.ctx.request(acp.methods.agent.session.setConfigOption, { sessionId: s.sessionId, configId: "mode", value: "full" });
  const m = marker("STOPME");
  fake.script(m, {
    steps: [{ toolCalls: [{ name: "run_command", arguments: { command: "sleep 30" } }] }, { chunks: [{ content: "Understood, stopped." }] }],
  });
  const before = fake.requests.length;
  const t0 = performance.now();
  await c.prompt(s.sessionId, m);
  const running = await c.until(s.sessionId, (u) => u.sessionUpdate === "tool_call_update" && u.status === "in_progress");
  assert.deepEqual(running.capabilities, { cancel: {} }, "a running call advertises cancel");
  assert.deepEqual(await c.ctx.request(acp.methods.agent.toolCall.cancel, { sessionId: s.sessionId, toolCallId: running.toolCallId }), {});
  const ended = await c.until(s.sessionId, (u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === running.toolCallId && u.status === "cancelled");
  assert.equal(ended.capabilities, null, "a final call can no longer be cancelled");
  await c.until(s.sessionId, idleWith("end_turn"), 10000, "the turn goes on to end_turn");
  assert.ok(performance.now() - t0 < 10000, "the command was stopped, not waited for");
  assert.equal(text(c.of(s.sessionId), "agent_message_chunk"), "Understood, stopped.");
  const told = JSON.stringify(fake.requests.slice(before).filter((q) => q.api === "openai").at(-1).body.messages.at(-1));
  assert.match(told, /stopped this tool call/);
  // Already final: -32602.
  await assert.rejects(c.ctx.request(acp.methods.agent.toolCall.cancel, { sessionId: s.sessionId, toolCallId: running.toolCallId }), (e) => e.code === -32602);
  await c.done();
});

test("a session made over v1 resumes over v2 with its history replayed in v2's words; list, close, delete", async () => {
  const env = agentEnv({ fake, extra: { CORVID_PROTOCOL_V2: "1" } });
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
  assert.equal(text(ups, "agent_message_chunk"), "from a v1 turn");
  assert.ok(!ups.some((u) => u.sessionUpdate === "user_message_chunk"));
  // The resumed session takes a v2 prompt.
  const m2 = marker("AFTER");
  fake.script(m2, { chunks: [{ content: "and from v2" }] });
  // On the wire (the SDK may run notification handlers after it resolves the answer).
  const frames = c.agent.frames;
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

test("MCP servers in v2's shape (stdio with its `type`): connected and their tools offered", async () => {
  const c = await connect();
  const server = join(dirname(fileURLToPath(import.meta.url)), "..", "support", "mcp-server.mjs");
  const s = await c.ctx.request(acp.methods.agent.session.new, {
    cwd: workspace(),
    mcpServers: [{ type: "stdio", name: "alpha", command: process.execPath, args: [server, "alpha"], env: [] }],
  });
  const alpha = s._meta.corvid.mcpServers.find((x) => x.name === "alpha");
  assert.equal(alpha.state, "connected", JSON.stringify(s._meta));
  const m = marker("MCP");
  fake.script(m, { chunks: [{ content: "ok" }] });
  await c.prompt(s.sessionId, m);
  await c.until(s.sessionId, idleWith("end_turn"));
  const tools = fake.requests.filter((q) => q.api === "openai").at(-1).body.tools.map((t) => t.function.name);
  assert.ok(tools.includes("mcp__alpha__echo"), tools.join(","));
  await c.done();
});

test("v2 without a provider: auth methods in v2's words; session/new is -32000; auth/login retries", async () => {
  const c = await connect({ env: agentEnv({ extra: { CORVID_PROTOCOL_V2: "1" } }) });
  const setup = c.init.authMethods.find((a) => a.methodId === "corvid-setup");
  assert.equal(setup.type, "agent");
  await assert.rejects(c.newSession(), (e) => e.code === -32000);
  await assert.rejects(c.ctx.request(acp.methods.agent.auth.login, { methodId: "corvid-setup" }), (e) => e.code === -32000);
  await c.done();
});

test("a v1 connection never sees v2 frames with v2 on", async () => {
  const env = agentEnv({ fake, extra: { CORVID_PROTOCOL_V2: "1" } });
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

// `_session/steering` (the contract of claude-agent-acp and codex-acp): a message sent into the
// running turn joins it at its next model request, during a streamed answer and during a tool
// call; the request is answered once the message is taken in; it is stored and replayed like
// any user message. Against an idle session it is refused (-32602, use session/prompt); a turn
// cancelled before taking it in answers it with an error. Real binary, scripted fake model.
import assert from "node:assert/strict";
import { mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../support/agent.mjs";

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

let n = 0;
async function start() {
  const env = agentEnv({ fake });
  const agent = spawnAgent({ env });
  const init = await agent.request("init", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), "corvid-steer-")));
  const { sessionId } = (await agent.request("new", "session/new", { cwd, mcpServers: [] })).result;
  await agent.request("mode", "session/set_config_option", { sessionId, configId: "mode", value: "full" });
  return {
    agent,
    env,
    cwd,
    init,
    sessionId,
    /** Starts a prompt without waiting; returns its id. */
    prompt(text) {
      const id = `p${++n}`;
      agent.send({ jsonrpc: "2.0", id, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text }] } });
      return id;
    },
    steer(text, ms = 10000) {
      return agent.request(`s${++n}`, "_session/steering", { sessionId, prompt: [{ type: "text", text }] }, ms);
    },
    response(id, ms = 10000) {
      return agent.waitFor((f) => f.id === id && !("method" in f), ms, `response ${id}`);
    },
    async done() {
      await agent.stop();
      assert.deepEqual(agent.violations, [], "every frame is valid ACP");
      assert.doesNotMatch(agent.stderr, /panicked/);
    },
  };
}

const userTexts = (body) => body.messages.filter((m) => m.role === "user").map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));

test("initialize advertises steering; an idle session refuses it with -32602 naming session/prompt", async () => {
  const t = await start();
  assert.deepEqual(t.init.result._meta.steering, { supported: true });
  const r = await t.steer("anything");
  assert.equal(r.error?.code, -32602, JSON.stringify(r));
  assert.match(r.error.message, /no turn is running.*session\/prompt/);
  const unknown = await t.agent.request("u", "_session/steering", { sessionId: "nope", prompt: [{ type: "text", text: "x" }] });
  assert.equal(unknown.error?.code, -32002);
  const bad = await t.agent.request("b", "_session/steering", { sessionId: t.sessionId });
  assert.equal(bad.error?.code, -32602);
  await t.done();
});

test("a message sent while the model streams joins the turn: the next request reads it; stored and replayed", async () => {
  const t = await start();
  const m = `STEER-STREAM-${++n}`;
  fake.script(m, { chunks: Array.from({ length: 40 }, (_, i) => ({ content: `w${i} ` })), delayMs: 15 });
  const s = `STEER-IN-${++n}`;
  fake.script(s, { chunks: [{ content: "steered answer" }] });
  const before = fake.requests.length;
  const id = t.prompt(m);
  await t.agent.waitFor((f) => f.method === "session/update" && f.params.update.sessionUpdate === "agent_message_chunk", 5000);
  const answered = await t.steer(`${s}: also mention the tests`);
  assert.deepEqual(answered.result, {}, JSON.stringify(answered));
  const r = await t.response(id);
  assert.equal(r.result.stopReason, "end_turn");
  const requests = fake.requests.slice(before);
  assert.equal(requests.length, 2, "the turn made one more request for the message");
  assert.deepEqual(userTexts(requests[1].body).slice(-2), [m, `${s}: also mention the tests`]);
  assert.equal(requests[1].body.messages.at(-2).role, "assistant", "after what the model had said");
  // Not echoed live (the client has it, as with a prompt)…
  assert.equal(t.agent.updates(t.sessionId).filter((u) => u.sessionUpdate === "user_message_chunk").length, 0);
  await t.done();

  // …and replayed like any user message, where it landed: between the two answers.
  const again = spawnAgent({ env: t.env });
  await again.request("init", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  await again.request("load", "session/load", { sessionId: t.sessionId, cwd: t.cwd, mcpServers: [] }, 10000);
  const replayed = again.updates(t.sessionId);
  const users = replayed.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content.text);
  assert.deepEqual(users, [m, `${s}: also mention the tests`]);
  const kinds = replayed.map((u) => u.sessionUpdate + (u.content?.text === `${s}: also mention the tests` ? "*" : ""));
  const steerAt = kinds.indexOf("user_message_chunk*");
  assert.ok(steerAt > kinds.indexOf("agent_message_chunk") && steerAt < kinds.lastIndexOf("agent_message_chunk"), kinds.join());
  assert.match(replayed.filter((u) => u.sessionUpdate === "agent_message_chunk").at(-1).content.text, /steered answer/);
  await again.stop();
});

test("a message sent during a tool call is read by the request after the tool result", async () => {
  const t = await start();
  const m = `STEER-TOOL-${++n}`;
  fake.script(m, { steps: [{ toolCalls: [{ name: "run_command", arguments: { command: "sleep 0.6; echo slept" } }] }, { chunks: [{ content: "never: the steer's script answers" }] }] });
  const s = `STEER-AFTER-TOOL-${++n}`;
  fake.script(s, { chunks: [{ content: "took it" }] });
  const before = fake.requests.length;
  const id = t.prompt(m);
  await t.agent.waitFor((f) => f.method === "session/update" && f.params.update.sessionUpdate === "tool_call_update" && f.params.update.status === "in_progress", 5000);
  const answered = await t.steer(`${s}: use python3`);
  assert.deepEqual(answered.result, {});
  assert.equal((await t.response(id)).result.stopReason, "end_turn");
  const second = fake.requests.slice(before)[1].body.messages;
  assert.equal(second.at(-2).role, "tool");
  assert.match(second.at(-2).content, /slept/);
  assert.equal(second.at(-1).role, "user");
  assert.equal(second.at(-1).content, `${s}: use python3`);
  await t.done();
});

test("a turn cancelled before it takes the message in answers it with an error, not silence", async () => {
  const t = await start();
  const m = `STEER-CANCEL-${++n}`;
  fake.script(m, { steps: [{ toolCalls: [{ name: "run_command", arguments: { command: "sleep 30" } }] }, { chunks: [{ content: "never" }] }] });
  const id = t.prompt(m);
  await t.agent.waitFor((f) => f.method === "session/update" && f.params.update.status === "in_progress", 5000);
  const steered = t.steer("too late");
  await new Promise((r) => setTimeout(r, 100));
  t.agent.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: t.sessionId } });
  assert.equal((await t.response(id)).result.stopReason, "cancelled");
  const r = await steered;
  assert.equal(r.error?.code, -32005, JSON.stringify(r));
  assert.match(r.error.message, /ended before it took the message in/);
  await t.done();
});

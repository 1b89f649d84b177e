// A load or resume ends with its response (issue 44): the replay, the slash commands (once) and
// anything else the client needs come before it, and nothing of the session follows until a
// new prompt. v2 replays each stored agent reply whole (`agent_message`) and each thought whole
// (`agent_thought`), not as their chunks.
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../support/agent.mjs";
import { v2Validator } from "../support/schema.mjs";

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

/** How long the client listens after the response for anything more of the session. */
const QUIET_MS = 300;
const V1_INIT = { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "replay-ends", version: "1" } };
const V2_INIT = { protocolVersion: 2, info: { name: "replay-ends", version: "1" }, capabilities: {} };
const text = (t) => [{ type: "text", text: t }];
const isUpdateOf = (id) => (f) => f.method === "session/update" && f.params.sessionId === id;
const kind = (f) => f.params.update.sessionUpdate;

async function finish(agent) {
  await agent.stop();
  assert.deepEqual(agent.violations, [], "every frame is valid ACP");
}

/**
 * Sends `method` and checks what the client gets for the session around the response: exactly
 * one `available_commands_update`, before the response, and nothing more of the session for
 * QUIET_MS after it. Returns the session's updates before the response.
 */
async function restoreEndsWithResponse(agent, id, method, params, sessionId) {
  const r = await agent.request(id, method, params, 10000);
  assert.ok(r.result, `${method}: ${JSON.stringify(r.error)}`);
  const at = agent.frames.indexOf(r);
  await delay(QUIET_MS);
  const later = agent.frames.slice(at + 1).filter(isUpdateOf(sessionId));
  assert.deepEqual(later.map(kind), [], `nothing of the session after the ${method} response`);
  const before = agent.frames.slice(0, at).filter(isUpdateOf(sessionId));
  assert.equal(before.filter((f) => kind(f) === "available_commands_update").length, 1, `${method}: one commands list: ${before.map(kind)}`);
  assert.ok(
    before.find((f) => kind(f) === "available_commands_update").params.update.availableCommands.some((c) => c.name === "compact"),
    "today's commands",
  );
  return before.map((f) => f.params.update);
}

test("v1: after the session/load and session/resume responses nothing of the session arrives; the commands come once, before", async () => {
  const env = agentEnv({ fake });
  const cwd = mkdtempSync(join(tmpdir(), "corvid-replay-ends-"));
  fake.script("ENDS-V1", { chunks: [{ content: "One " }, { content: "two " }, { content: "three." }] });
  const live = spawnAgent({ env });
  await live.request("i", "initialize", V1_INIT);
  const { sessionId } = (await live.request("n", "session/new", { cwd, mcpServers: [] })).result;
  assert.equal((await live.request("p", "session/prompt", { sessionId, prompt: text("ENDS-V1") })).result.stopReason, "end_turn");
  await finish(live);

  const loader = spawnAgent({ env });
  await loader.request("i", "initialize", V1_INIT);
  const replayed = await restoreEndsWithResponse(loader, "l", "session/load", { sessionId, cwd, mcpServers: [] }, sessionId);
  assert.ok(replayed.length > 1, "the history was replayed");
  // The list stands where the session's first one stood: v1's replay is still what was sent live.
  assert.equal(replayed[0].sessionUpdate, "available_commands_update");
  assert.equal(replayed.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join(""), "One two three.");
  // The next prompt's updates are live again.
  fake.script("ENDS-V1-AGAIN", { chunks: [{ content: "again" }] });
  await loader.request("p", "session/prompt", { sessionId, prompt: text("ENDS-V1-AGAIN") });
  assert.ok(loader.updates(sessionId).some((u) => u.sessionUpdate === "agent_message_chunk" && u.content.text === "again"));
  await finish(loader);

  const resumer = spawnAgent({ env });
  await resumer.request("i", "initialize", V1_INIT);
  const resumed = await restoreEndsWithResponse(resumer, "r", "session/resume", { sessionId, cwd, mcpServers: [] }, sessionId);
  assert.deepEqual(resumed.map((u) => u.sessionUpdate), ["available_commands_update"], "a resume replays nothing");
  await finish(resumer);
});

test("v2: session/resume ends with its response, with or without replay; the replay sends each stored agent reply whole", async () => {
  const env = agentEnv({ fake });
  const cwd = mkdtempSync(join(tmpdir(), "corvid-replay-ends-v2-"));
  const pieces = ["Stre", "amed ", "in ", "many ", "pieces."];
  fake.script("ENDS-V2-A", { chunks: [{ reasoning: "Let me " }, { reasoning: "think." }, ...pieces.map((content) => ({ content }))] });
  fake.script("ENDS-V2-B", { steps: [{ toolCalls: [{ name: "update_plan", arguments: { entries: [{ content: "x", status: "pending" }] } }] }, { chunks: [{ content: "After " }, { content: "the plan." }] }] });
  const live = spawnAgent({ env, validator: v2Validator() });
  await live.request("i", "initialize", V2_INIT);
  const { sessionId } = (await live.request("n", "session/new", { cwd })).result;
  await live.request("m", "session/set_config_option", { sessionId, configId: "mode", value: "full" });
  const idles = () => live.updates(sessionId).filter((u) => u.sessionUpdate === "state_update" && u.state === "idle").length;
  for (const [i, m] of ["ENDS-V2-A", "ENDS-V2-B"].entries()) {
    await live.request(`p${i}`, "session/prompt", { sessionId, prompt: text(m) });
    await live.waitFor(() => idles() === i + 1, 10000, `the end of turn ${i + 1}`);
  }
  // Live, the replies streamed in chunks: the text each message id was sent, in order.
  const liveReplies = new Map();
  for (const u of live.updates(sessionId).filter((u) => u.sessionUpdate === "agent_message_chunk")) {
    liveReplies.set(u.messageId, (liveReplies.get(u.messageId) ?? "") + u.content.text);
  }
  assert.deepEqual([...liveReplies.values()], ["Streamed in many pieces.", "After the plan."]);
  assert.ok(live.updates(sessionId).filter((u) => u.sessionUpdate === "agent_message_chunk").length >= pieces.length + 2);
  await finish(live);

  const replayer = spawnAgent({ env, validator: v2Validator() });
  await replayer.request("i", "initialize", V2_INIT);
  const replayed = await restoreEndsWithResponse(replayer, "r", "session/resume", { sessionId, cwd, replayFrom: { type: "start" } }, sessionId);
  assert.deepEqual(replayed.filter((u) => u.sessionUpdate === "agent_message_chunk"), [], "no reply goes out in chunks");
  assert.ok(live.updates(sessionId).filter((u) => u.sessionUpdate === "agent_thought_chunk").length >= 2, "live, the thought streamed in chunks");
  assert.deepEqual(replayed.filter((u) => u.sessionUpdate === "agent_thought_chunk"), [], "no thought goes out in chunks");
  assert.deepEqual(
    replayed.filter((u) => u.sessionUpdate === "agent_thought").map((u) => u.content),
    [[{ type: "text", text: "Let me think." }]],
    "the thought replays as one agent_thought",
  );
  const whole = replayed.filter((u) => u.sessionUpdate === "agent_message");
  assert.deepEqual(
    whole.map((u) => [u.messageId, u.content]),
    [...liveReplies].map(([id, t]) => [id, [{ type: "text", text: t }]]),
    "one agent_message per stored reply, its id and its whole text",
  );
  // In its place: the first reply between its user message and the second one, the second after its plan.
  const kinds = replayed.map((u) => u.sessionUpdate).filter((k) => ["user_message", "agent_thought", "agent_message", "plan_update"].includes(k));
  assert.deepEqual(kinds, ["user_message", "agent_thought", "agent_message", "user_message", "plan_update", "agent_message"]);
  assert.equal(replayed.at(-1).sessionUpdate, "state_update", "the state closes the replay");
  await finish(replayer);

  const resumer = spawnAgent({ env, validator: v2Validator() });
  await resumer.request("i", "initialize", V2_INIT);
  const resumed = await restoreEndsWithResponse(resumer, "r", "session/resume", { sessionId, cwd }, sessionId);
  assert.deepEqual(resumed.map((u) => u.sessionUpdate), ["available_commands_update", "state_update"]);
  await finish(resumer);
});

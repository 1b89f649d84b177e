// `corvid acp` driven by the official TypeScript SDK 2.x app API (client().connect).
import assert from "node:assert/strict";
import { tmpdir } from "node:os";
import { after, before, test } from "node:test";
import * as acp from "@agentclientprotocol/sdk";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent, textOf } from "../support/agent.mjs";

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

/** Spawns the agent, connects the SDK client, runs `fn(conn, agent)`, then checks every frame. */
async function session(fn) {
  const agent = spawnAgent({ env: agentEnv({ fake }) });
  const updates = [];
  const app = acp
    .client({ name: "corvid-e2e" })
    .onNotification(acp.methods.client.session.update, ({ params }) => void updates.push(params));
  const conn = app.connect(await agent.sdkStream(acp.ndJsonStream));
  try {
    const init = await conn.agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      clientInfo: { name: "corvid-e2e", version: "1.0.0" },
    });
    assert.equal(init.protocolVersion, 1);
    await fn(conn.agent, agent, updates);
    assert.deepEqual(agent.violations, [], "every frame is valid ACP");
  } finally {
    conn.close();
    await agent.stop();
  }
}

const newSession = (ctx) => ctx.request(acp.methods.agent.session.new, { cwd: tmpdir(), mcpServers: [] });
const prompt = (ctx, sessionId, text) =>
  ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });

test("handshake, new session with a model picker, streamed text and thoughts", () =>
  session(async (ctx, agent) => {
    fake.script("STREAM-1", {
      chunks: [{ reasoning: "Let me " }, { reasoning: "think." }, { content: "Hello" }, { content: ", " }, { content: "world!" }],
    });
    const s = await newSession(ctx);
    assert.match(s.sessionId, /^[0-9a-f-]{36}$/);
    const model = s.configOptions.find((o) => o.id === "model");
    assert.equal(model.category, "model");
    assert.equal(model.type, "select");
    assert.equal(model.currentValue, "fake-model");
    assert.deepEqual(model.options.map((o) => o.value), ["fake-model"]);

    const res = await prompt(ctx, s.sessionId, "STREAM-1 please");
    assert.equal(res.stopReason, "end_turn");
    const ups = agent.updates(s.sessionId);
    assert.equal(textOf(ups, "agent_message_chunk"), "Hello, world!");
    assert.equal(textOf(ups, "agent_thought_chunk"), "Let me think.");
    const messageIds = new Set(ups.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.messageId));
    const thoughtIds = new Set(ups.filter((u) => u.sessionUpdate === "agent_thought_chunk").map((u) => u.messageId));
    assert.equal(messageIds.size, 1, "all chunks of one message share a messageId");
    assert.equal(thoughtIds.size, 1);
    assert.notDeepEqual([...messageIds], [...thoughtIds]);

    // The provider got the user's text, the configured model and the API key.
    const req = fake.requests.at(-1);
    assert.equal(req.body.model, "fake-model");
    assert.equal(req.body.stream, true);
    assert.equal(req.headers.authorization, "Bearer test-key");
    assert.equal(req.body.messages.at(-1).content, "STREAM-1 please");

    // The next turn carries the conversation so far, and gets a fresh messageId.
    await prompt(ctx, s.sessionId, "second");
    const history = fake.requests.at(-1).body.messages.filter((m) => m.role !== "system").map((m) => [m.role, m.content]);
    assert.deepEqual(history, [
      ["user", "STREAM-1 please"],
      ["assistant", "Hello, world!"],
      ["user", "second"],
    ]);
    const ids2 = new Set(agent.updates(s.sessionId).filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.messageId));
    assert.equal(ids2.size, 2);
  }));

test("cancel mid-stream: one cancelled stopReason and no late updates", () =>
  session(async (ctx, agent) => {
    fake.script("LONG-CANCEL", { chunks: Array.from({ length: 200 }, (_, i) => ({ content: `w${i} ` })), delayMs: 10 });
    const s = await newSession(ctx);
    const pending = prompt(ctx, s.sessionId, "LONG-CANCEL");
    await agent.waitFor((f) => f.method === "session/update" && f.params.update.content?.text === "w3 ");
    await ctx.notify(acp.methods.agent.session.cancel, { sessionId: s.sessionId });
    const res = await pending;
    assert.equal(res.stopReason, "cancelled");
    const responseIndex = agent.frames.findIndex((f) => f.result?.stopReason === "cancelled");
    const countAtResponse = agent.updates(s.sessionId).length;
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(agent.updates(s.sessionId).length, countAtResponse, "no update after the response");
    assert.ok(agent.frames.slice(responseIndex + 1).every((f) => f.method !== "session/update"));
    assert.ok(countAtResponse < 200, "the stream was cut short");
    assert.equal(agent.frames.filter((f) => f.result?.stopReason).length, 1, "exactly one stopReason");
    // The session is usable again right away.
    assert.equal((await prompt(ctx, s.sessionId, "after cancel")).stopReason, "end_turn");
  }));

test("two sessions prompting at once do not cross-talk; cancelling one leaves the other", () =>
  session(async (ctx, agent) => {
    fake.script("ALPHA", { chunks: Array.from({ length: 20 }, () => ({ content: "a" })), delayMs: 15 });
    fake.script("BRAVO", { chunks: Array.from({ length: 20 }, () => ({ content: "b" })), delayMs: 15 });
    fake.script("CHARLIE", { chunks: Array.from({ length: 200 }, () => ({ content: "c" })), delayMs: 10 });
    const [a, b, c] = await Promise.all([newSession(ctx), newSession(ctx), newSession(ctx)]);
    const pc = prompt(ctx, c.sessionId, "CHARLIE");
    const [ra, rb] = await Promise.all([prompt(ctx, a.sessionId, "ALPHA"), prompt(ctx, b.sessionId, "BRAVO")]);
    await ctx.notify(acp.methods.agent.session.cancel, { sessionId: c.sessionId });
    assert.equal(ra.stopReason, "end_turn");
    assert.equal(rb.stopReason, "end_turn");
    assert.equal((await pc).stopReason, "cancelled");
    assert.equal(textOf(agent.updates(a.sessionId), "agent_message_chunk"), "a".repeat(20));
    assert.equal(textOf(agent.updates(b.sessionId), "agent_message_chunk"), "b".repeat(20));
    assert.match(textOf(agent.updates(c.sessionId), "agent_message_chunk"), /^c+$/);
  }));

test("set_config_option switches the model; bad values name the field", () =>
  session(async (ctx) => {
    const s = await newSession(ctx);
    await assert.rejects(
      ctx.request(acp.methods.agent.session.setConfigOption, { sessionId: s.sessionId, configId: "model", value: "nope" }),
      (e) => e.code === -32602 && /value: `nope` is not one of the models/.test(e.message),
    );
    await assert.rejects(
      ctx.request(acp.methods.agent.session.setConfigOption, { sessionId: s.sessionId, configId: "speed", value: "x" }),
      (e) => e.code === -32602 && /configId: unknown config option `speed`/.test(e.message),
    );
  }));

test("session/close cancels the running turn and forgets the session", () =>
  session(async (ctx, agent) => {
    fake.script("CLOSE-ME", { chunks: Array.from({ length: 100 }, () => ({ content: "z" })), delayMs: 20 });
    const s = await newSession(ctx);
    const pending = prompt(ctx, s.sessionId, "CLOSE-ME");
    await agent.waitFor((f) => f.method === "session/update");
    await ctx.request(acp.methods.agent.session.close, { sessionId: s.sessionId });
    assert.equal((await pending).stopReason, "cancelled");
    await assert.rejects(prompt(ctx, s.sessionId, "hello?"), (e) => e.code === -32002);
  }));

test("$/cancel_request on a prompt ends the turn as cancelled", () =>
  session(async (ctx, agent) => {
    fake.script("REQ-CANCEL", { chunks: Array.from({ length: 100 }, () => ({ content: "r" })), delayMs: 20 });
    const s = await newSession(ctx);
    const ac = new AbortController();
    const pending = ctx.request(
      acp.methods.agent.session.prompt,
      { sessionId: s.sessionId, prompt: [{ type: "text", text: "REQ-CANCEL" }] },
      { cancellationSignal: ac.signal },
    );
    await agent.waitFor((f) => f.method === "session/update");
    ac.abort();
    // Corvid treats a cancelled prompt request like session/cancel: a normal `cancelled` result.
    assert.equal((await pending).stopReason, "cancelled");
    assert.equal(agent.frames.filter((f) => f.result?.stopReason).length, 1);
  }));

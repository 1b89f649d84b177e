// The Anthropic Messages provider through the real binary, against the fake model server's
// `/v1/messages` (the same script specs as the OpenAI tests). Every frame is schema-validated.
import assert from "node:assert/strict";
import { mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent, textOf, withInitializedAgent } from "../support/agent.mjs";

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

const MODELS = ["claude-sonnet-4-5", "claude-3-5-haiku-latest"];

function anthropicEnv({ model = MODELS[0], extra = {}, config = "" } = {}) {
  return agentEnv({
    fake,
    model,
    config: `[provider]\nmodels = ${JSON.stringify(MODELS)}\n${config}`,
    extra: { CORVID_PROVIDER: "anthropic", ...extra },
  });
}

const withAgent = withInitializedAgent;

async function newSession(agent, cwd = tmpdir(), id = 1) {
  const s = await agent.request(id, "session/new", { cwd, mcpServers: [] });
  assert.ok(s.result, JSON.stringify(s));
  return s.result;
}

let n = 0;
function prompt(agent, sessionId, text) {
  return agent.request(`p${++n}`, "session/prompt", { sessionId, prompt: [{ type: "text", text }] }, 15000);
}

/** Requests the fake received for a marker, in order. */
const requestsFor = (marker) =>
  fake.requests.filter((r) => r.api === "anthropic" && JSON.stringify(r.body.messages).includes(marker));

test("streamed thinking and text become thought and message chunks; headers and key fallback", () =>
  withAgent(anthropicEnv({ extra: { CORVID_API_KEY: "", ANTHROPIC_API_KEY: "ant-key", OPENAI_API_KEY: "openai-key" } }), async (agent) => {
    const { sessionId } = await newSession(agent);
    fake.script("ANT-HELLO", { chunks: [{ reasoning: "Let me think" }, { reasoning: " it over." }, { content: "Hello" }, { content: " there" }] });
    const r = await prompt(agent, sessionId, "ANT-HELLO");
    assert.equal(r.result.stopReason, "end_turn");
    const updates = agent.updates(sessionId);
    assert.equal(textOf(updates, "agent_thought_chunk"), "Let me think it over.");
    assert.equal(textOf(updates, "agent_message_chunk"), "Hello there");
    assert.deepEqual(updates.filter((u) => u.sessionUpdate === "usage_update").at(-1), { sessionUpdate: "usage_update", used: 15, size: 200000, cost: { amount: 0.000105, currency: "USD" }, _meta: { corvid: { sessionTokens: 15 } } }, "the model catalog's window and prices (10 × $3 + 5 × $15 per million)");

    const [req] = requestsFor("ANT-HELLO");
    assert.equal(req.headers["x-api-key"], "ant-key", "ANTHROPIC_API_KEY is the fallback key");
    assert.equal(req.headers["anthropic-version"], "2023-06-01");
    assert.equal(req.headers.authorization, undefined);
    assert.match(req.headers["content-type"], /application\/json/);
    assert.equal(req.body.model, "claude-sonnet-4-5");
    assert.equal(req.body.stream, true);
    assert.equal(req.body.max_tokens, 64000, "the model catalog's output limit for claude-sonnet-4-5");
    assert.equal(req.body.thinking, undefined, "thinking is off by default");
    const mark = { type: "ephemeral" };
    assert.equal(req.body.system.length, 1, "the system prompt is one block…");
    assert.deepEqual(req.body.system[0].cache_control, mark, "…that carries the prefix's cache mark");
    assert.deepEqual(req.body.messages, [{ role: "user", content: [{ type: "text", text: "ANT-HELLO", cache_control: mark }] }]);
    const readFile = req.body.tools.find((t) => t.name === "read_file");
    assert.equal(readFile.input_schema.type, "object");
    assert.equal(typeof readFile.description, "string");
  }));

test("a tool loop sends tool_use back with its tool_result in one user message", async () => {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), "corvid-ant-")));
  writeFileSync(join(cwd, "notes.txt"), "hello from notes\n");
  await withAgent(anthropicEnv(), async (agent) => {
    const { sessionId } = await newSession(agent, cwd);
    fake.script("ANT-TOOLS", {
      steps: [
        { chunks: [{ content: "Let me read it." }], toolCalls: [{ name: "read_file", id: "toolu_01", arguments: { path: "notes.txt" } }] },
        { chunks: [{ content: "It says hello." }] },
      ],
    });
    const r = await prompt(agent, sessionId, "ANT-TOOLS");
    assert.equal(r.result.stopReason, "end_turn");
    const tool = agent.updates(sessionId).filter((u) => u.toolCallId);
    assert.equal(tool[0].title, "Read notes.txt");
    assert.equal(tool.at(-1).status, "completed");
    assert.equal(textOf(agent.updates(sessionId), "agent_message_chunk"), "Let me read it.It says hello.");

    const reqs = requestsFor("ANT-TOOLS");
    assert.equal(reqs.length, 2);
    const messages = reqs[1].body.messages;
    assert.deepEqual(messages.map((m) => m.role), ["user", "assistant", "user"], "roles alternate");
    assert.deepEqual(messages[1].content, [
      { type: "text", text: "Let me read it." },
      { type: "tool_use", id: "toolu_01", name: "read_file", input: { path: "notes.txt" }, cache_control: { type: "ephemeral" } },
    ]);
    assert.equal(messages[2].content.length, 1);
    assert.equal(messages[2].content[0].type, "tool_result");
    assert.equal(messages[2].content[0].tool_use_id, "toolu_01");
    assert.match(messages[2].content[0].content, /hello from notes/);

    // The next prompt: the history still alternates and has no blank text blocks.
    fake.script("ANT-NEXT", { chunks: [{ content: "ok" }] });
    await prompt(agent, sessionId, "ANT-NEXT");
    const next = requestsFor("ANT-NEXT")[0].body.messages;
    assert.deepEqual(next.map((m) => m.role), ["user", "assistant", "user", "assistant", "user"]);
    for (const m of next) for (const b of m.content) if (b.type === "text") assert.ok(b.text.trim().length > 0);
  });
});

test("stop reasons: max_tokens and refusal", () =>
  withAgent(anthropicEnv(), async (agent) => {
    const { sessionId } = await newSession(agent);
    fake.script("ANT-LONG", { chunks: [{ content: "..." }], finish: "max_tokens" });
    assert.equal((await prompt(agent, sessionId, "ANT-LONG")).result.stopReason, "max_tokens");
    fake.script("ANT-REFUSE", { chunks: [], finish: "refusal" });
    assert.equal((await prompt(agent, sessionId, "ANT-REFUSE")).result.stopReason, "refusal");
  }));

test("401 names the key; 529 overloaded is retried; a mid-stream error is reported", () =>
  withAgent(anthropicEnv(), async (agent) => {
    const { sessionId } = await newSession(agent);
    fake.script("ANT-401", { status: 401, body: { type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } } });
    const r = await prompt(agent, sessionId, "ANT-401");
    assert.equal(r.error.code, -32603);
    assert.match(r.error.message, /401 Unauthorized.*invalid x-api-key.*check CORVID_API_KEY \(or ANTHROPIC_API_KEY\)/);
    assert.equal(r.error.data.httpStatus, 401);
    assert.equal(fake.attemptsFor("ANT-401"), 1, "401 is not retried");

    fake.script("ANT-529", { failTimes: 1, failStatus: 529, chunks: [{ content: "back" }] });
    const r2 = await prompt(agent, sessionId, "ANT-529");
    assert.equal(r2.result.stopReason, "end_turn");
    assert.equal(fake.attemptsFor("ANT-529"), 2);

    fake.script("ANT-MIDSTREAM", { chunks: [{ content: "par" }], streamError: "Overloaded" });
    const r3 = await prompt(agent, sessionId, "ANT-MIDSTREAM");
    assert.match(r3.error.message, /error mid-stream: Overloaded \(overloaded_error\)/);
  }));

test("retries honour Retry-After as seconds and as an HTTP date; four 529s in a row are survived", () =>
  withAgent(anthropicEnv(), async (agent) => {
    const { sessionId } = await newSession(agent);
    const gaps = (marker) => {
      const at = requestsFor(marker).map((r) => r.at);
      return at.slice(1).map((t, i) => t - at[i]);
    };
    fake.script("ANT-AFTER-SECS", { failTimes: 1, failStatus: 429, failHeaders: { "retry-after": "1" }, chunks: [{ content: "ok" }] });
    assert.equal((await prompt(agent, sessionId, "ANT-AFTER-SECS")).result.stopReason, "end_turn");
    assert.ok(gaps("ANT-AFTER-SECS")[0] >= 950, `waited ${gaps("ANT-AFTER-SECS")} ms for Retry-After: 1`);

    // A date two seconds ahead (HTTP dates have whole seconds: the wait is 1 to 2 s).
    const date = () => new Date(Math.ceil(Date.now() / 1000) * 1000 + 2000).toUTCString();
    fake.script("ANT-AFTER-DATE", { failTimes: 1, failStatus: 503, failHeaders: () => ({ "retry-after": date() }), chunks: [{ content: "ok" }] });
    assert.equal((await prompt(agent, sessionId, "ANT-AFTER-DATE")).result.stopReason, "end_turn");
    const [gap] = gaps("ANT-AFTER-DATE");
    assert.ok(gap >= 950 && gap < 4000, `waited ${gap} ms for a date 2 s ahead (the old code waited 0.25 s)`);

    fake.script("ANT-529x4", { failTimes: 4, failStatus: 529, failHeaders: { "retry-after-ms": "20" }, chunks: [{ content: "finally" }] });
    const r = await prompt(agent, sessionId, "ANT-529x4");
    assert.equal(r.result?.stopReason, "end_turn", JSON.stringify(r.error));
    assert.equal(fake.attemptsFor("ANT-529x4"), 5);
    assert.ok(gaps("ANT-529x4").every((g) => g < 1000), `retry-after-ms was honoured: ${gaps("ANT-529x4")}`);
  }));

test("a stream that fails before anything was shown is asked again; one that fails later says how far it got", () =>
  withAgent(anthropicEnv(), async (agent) => {
    const { sessionId } = await newSession(agent);
    fake.script("ANT-EARLY-FAIL", { failTimes: 0, chunks: [], streamError: "Overloaded" });
    const r = await prompt(agent, sessionId, "ANT-EARLY-FAIL");
    assert.match(r.error.message, /Overloaded/);
    assert.equal(fake.attemptsFor("ANT-EARLY-FAIL"), 7, "the default 6 retries, then the error");
    fake.script("ANT-LATE-FAIL", { chunks: [{ content: "four" }], streamError: "Overloaded" });
    const r2 = await prompt(agent, sessionId, "ANT-LATE-FAIL");
    assert.match(r2.error.message, /broke off after 4 characters had arrived: .*Overloaded/);
    assert.equal(fake.attemptsFor("ANT-LATE-FAIL"), 1, "what was shown is not asked for twice");
  }));

test("an Anthropic base URL without /v1 works, from CORVID_BASE_URL or ANTHROPIC_BASE_URL", async () => {
  for (const extra of [{ CORVID_BASE_URL: fake.root }, { CORVID_BASE_URL: "", ANTHROPIC_BASE_URL: `${fake.root}/` }]) {
    await withAgent(anthropicEnv({ extra }), async (agent) => {
      const { sessionId } = await newSession(agent);
      fake.script("ANT-ROOT", { chunks: [{ content: "found" }] });
      const r = await prompt(agent, sessionId, "ANT-ROOT");
      assert.equal(r.result?.stopReason, "end_turn", JSON.stringify(r.error));
      assert.equal(textOf(agent.updates(sessionId), "agent_message_chunk"), "found");
    });
  }
});

test("prompt caching: every request of a two-turn tool loop marks the prefix and the newest messages; reads are billed at their rate", async () => {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), "corvid-ant-cache-")));
  for (const f of ["a", "b", "c", "d"]) writeFileSync(join(cwd, `${f}.txt`), `${f}\n`.repeat(200));
  fake.billCache(true);
  try {
    await withAgent(anthropicEnv(), async (agent) => {
      const { sessionId } = await newSession(agent, cwd);
      const read = (path, id) => ({ toolCalls: [{ name: "read_file", id, arguments: { path } }] });
      fake.script("ANT-CACHE-1", { steps: [read("a.txt", "toolu_a"), read("b.txt", "toolu_b"), { chunks: [{ content: "read two" }] }] });
      assert.equal((await prompt(agent, sessionId, "ANT-CACHE-1")).result.stopReason, "end_turn");
      fake.script("ANT-CACHE-2", { steps: [read("c.txt", "toolu_c"), read("d.txt", "toolu_d"), { chunks: [{ content: "read four" }] }] });
      assert.equal((await prompt(agent, sessionId, "ANT-CACHE-2")).result.stopReason, "end_turn");

      const reqs = fake.requests.filter((r) => r.api === "anthropic" && r.usage && JSON.stringify(r.body.messages).includes("ANT-CACHE-1"));
      assert.equal(reqs.length, 6);
      for (const [i, { body }] of reqs.entries()) {
        const marks = JSON.stringify(body).match(/"cache_control"/g).length;
        assert.ok(marks <= 4, `request ${i}: ${marks} marks (the API allows 4)`);
        assert.ok(body.system[0].cache_control, `request ${i}: the prefix (tools and system) is marked`);
        const newest = body.messages.at(-1).content.at(-1);
        assert.ok(newest.cache_control, `request ${i}: the newest message is marked`);
      }
      // From the second request on, the prefix comes from the cache.
      for (const r of reqs.slice(1)) assert.ok(r.usage.cache_read_input_tokens > 1000, JSON.stringify(r.usage));
      const usages = agent.updates(sessionId).filter((u) => u.sessionUpdate === "usage_update");
      assert.equal(usages.length, 6);
      assert.equal(usages.at(-1)._meta.corvid.cacheReadTokens, reqs.at(-1).usage.cache_read_input_tokens);
      // claude-sonnet-4-5: $3 input, $3.75 cache write, $0.30 cache read, $15 output per million.
      const billed = reqs.reduce((sum, { usage: u }) => sum + (u.input_tokens * 3 + u.cache_creation_input_tokens * 3.75 + u.cache_read_input_tokens * 0.3 + 5 * 15) / 1e6, 0);
      const uncached = reqs.reduce((sum, { usage: u }) => sum + ((u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens) * 3 + 5 * 15) / 1e6, 0);
      const cost = usages.at(-1).cost.amount;
      assert.ok(Math.abs(cost - billed) < 1e-9, `cost ${cost} is what the cache billed, ${billed}`);
      assert.ok(cost < uncached * 0.6, `caching paid ${cost} against ${uncached} uncached`);
    });
  } finally {
    fake.billCache(false);
  }
});

test("thought_level: offered for thinking models only, sets the thinking budget, persists", async () => {
  const env = anthropicEnv();
  let sessionId;
  await withAgent(env, async (agent) => {
    const s = await newSession(agent);
    sessionId = s.sessionId;
    const level = s.configOptions.find((o) => o.id === "thought_level");
    assert.ok(level, "offered for claude-sonnet-4-5");
    assert.equal(level.category, "thought_level");
    assert.equal(level.type, "select");
    assert.equal(level.currentValue, "off");
    assert.deepEqual(level.options.map((o) => o.value), ["off", "low", "medium", "high"]);

    const bad = await agent.request(2, "session/set_config_option", { sessionId, configId: "thought_level", value: "extreme" });
    assert.equal(bad.error.code, -32602);
    assert.match(bad.error.message, /value: `extreme` is not a thought level/);

    const set = await agent.request(3, "session/set_config_option", { sessionId, configId: "thought_level", value: "high" });
    assert.equal(set.result.configOptions.find((o) => o.id === "thought_level").currentValue, "high");

    // Thinking in a tool loop: the signed thinking block goes back with the tool_use.
    fake.script("ANT-THINK", {
      steps: [
        { chunks: [{ reasoning: "I should list files." }], toolCalls: [{ name: "list_directory", id: "toolu_02", arguments: { path: "." } }] },
        { chunks: [{ reasoning: "Done." }, { content: "Listed." }] },
      ],
    });
    const r = await prompt(agent, sessionId, "ANT-THINK");
    assert.equal(r.result.stopReason, "end_turn");
    const [first, second] = requestsFor("ANT-THINK");
    assert.deepEqual(first.body.thinking, { type: "enabled", budget_tokens: 24576 });
    assert.ok(first.body.max_tokens > 24576);
    assert.deepEqual(second.body.thinking, { type: "enabled", budget_tokens: 24576 });
    assert.deepEqual(second.body.messages[1].content[0], { type: "thinking", thinking: "I should list files.", signature: "sig-0" });
    assert.equal(second.body.messages[1].content[1].type, "tool_use");

    // A model without extended thinking: the option disappears and cannot be set.
    const other = await agent.request(4, "session/set_config_option", { sessionId, configId: "model", value: "claude-3-5-haiku-latest" });
    assert.equal(other.result.configOptions.find((o) => o.id === "thought_level"), undefined);
    const refused = await agent.request(5, "session/set_config_option", { sessionId, configId: "thought_level", value: "low" });
    assert.equal(refused.error.code, -32602);
    assert.match(refused.error.message, /thought_level/);
    fake.script("ANT-NOTHINK", { chunks: [{ content: "plain" }] });
    await prompt(agent, sessionId, "ANT-NOTHINK");
    assert.equal(requestsFor("ANT-NOTHINK")[0].body.thinking, undefined);
    await agent.request(6, "session/set_config_option", { sessionId, configId: "model", value: "claude-sonnet-4-5" });
  });
  // A new process resumes the session with its thought level.
  await withAgent(env, async (agent) => {
    const r = await agent.request(1, "session/resume", { sessionId, cwd: tmpdir(), mcpServers: [] });
    assert.equal(r.result.configOptions.find((o) => o.id === "thought_level").currentValue, "high");
  });
});

test("a non-thinking default model offers no thought_level; openai offers none", async () => {
  await withAgent(anthropicEnv({ model: "claude-3-5-haiku-latest" }), async (agent) => {
    const s = await newSession(agent);
    assert.equal(s.configOptions.find((o) => o.id === "thought_level"), undefined);
  });
  await withAgent(agentEnv({ fake, model: "claude-sonnet-4-5" }), async (agent) => {
    const s = await newSession(agent);
    assert.equal(s.configOptions.find((o) => o.id === "thought_level"), undefined, "OpenAI-compatible endpoints get no thought level");
  });
});

test("without CORVID_MODEL the model list comes from {base}/models with Anthropic headers", () =>
  withAgent(agentEnv({ fake, model: null, extra: { CORVID_PROVIDER: "anthropic" } }), async (agent) => {
    const s = await newSession(agent);
    assert.equal(s.configOptions.find((o) => o.id === "model").currentValue, "fake-model");
    const list = fake.requests.filter((r) => r.api === "models").at(-1);
    assert.equal(list.headers["x-api-key"], "test-key");
    assert.equal(list.headers["anthropic-version"], "2023-06-01");
  }));

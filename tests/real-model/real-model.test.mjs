// Corvid against a REAL model server: llama.cpp's own HTTP server (the `xllamacpp` wheel) with
// SmolLM2-135M-Instruct, installed by scripts/real-model.sh (README → "Real model server").
// Everything else in the test suite talks to scripted fakes; these tests find what fakes hide.
//
// One server for the whole file (serve.py: a chat template with tool support, temperature 0 by
// default since Corvid sends none), behind a recording proxy (llama-server.mjs) so each test can
// compare what the server really sent with what Corvid made of it. Every agent frame is
// validated against the ACP schema (spawnAgent).
//
// A 135M model calls tools only when the conversation already holds earlier tool-call turns
// (few-shot): the tool-loop tests write those turns with the scripted fake model first, then load
// the session in a new agent pointed at the real server and ask for another file.
//
// Each real turn takes a few seconds on an idle 2-core machine (mostly prompt processing of
// Corvid's ~2000-token system prompt and tools; llama.cpp caches the common prefix between
// requests, which is why every session uses the same working directory).
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { agentEnv, spawnAgent, textOf } from "../support/agent.mjs";
import { startFakeModel } from "../support/fake-model.mjs";
import { freePort, modelPath, sseData, startLlamaServer, startRecorder } from "./llama-server.mjs";

/** One prompt turn against the real model (seconds when idle; generous for a busy machine). */
const TURN_MS = 180_000;
const TEST = { timeout: 300_000 };
const MODEL = "smollm2"; // serve.py's alias; llama.cpp does not check the request's model
// The server's window: not the catalog's 8192 for smollm2, so a usage_update's size shows that
// Corvid took the window from llama.cpp's /props.
const CTX = 6144;

let fake, proxy, workspace;
let starting = null; // the one llama.cpp server, once started
before(async () => {
  modelPath(); // fails at once, saying how to install, when scripts/real-model.sh has not run
  fake = await startFakeModel();
  proxy = await startRecorder();
  // One working directory for every session: Corvid's system prompt names it, and the same
  // prompt prefix lets llama.cpp reuse its cache from one test to the next.
  workspace = realpathSync(mkdtempSync(join(tmpdir(), "corvid-real-model-")));
  mkdirSync(join(workspace, "src"));
  writeFileSync(join(workspace, "Cargo.toml"), '[package]\nname = "demo"\nversion = "0.1.0"\n');
  writeFileSync(join(workspace, "src", "lib.rs"), "pub fn add(a: i32, b: i32) -> i32 { a + b }\n");
  writeFileSync(join(workspace, "src", "main.rs"), 'fn main() {\n    println!("Hello, world!");\n}\n');
});
after(async () => {
  const server = await starting?.catch(() => null);
  await server?.stop();
  await proxy?.close();
  await fake?.close();
});

/** Starts the suite's server (once); resolves at once (the model may still be loading). */
function startServer() {
  starting ??= freePort().then((port) => {
    const server = startLlamaServer({ port, env: { CTX: String(CTX) } });
    proxy.target = server.root;
    return server;
  });
  return starting;
}
/** The suite's server, ready to answer. */
async function server() {
  const s = await startServer();
  await s.ready();
  return s;
}

/** An environment for `provider` against the real server (through the proxy), on `base`'s data. */
const realEnv = (provider, base = agentEnv(), extra = {}) => ({
  ...base,
  CORVID_PROVIDER: provider,
  CORVID_BASE_URL: proxy.url,
  CORVID_API_KEY: "unused",
  CORVID_MODEL: MODEL,
  ...extra,
});

async function startAgent(env) {
  const agent = spawnAgent({ env, cwd: workspace });
  await agent.request("init", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  return agent;
}

async function newSession(agent) {
  const s = await agent.request("new", "session/new", { cwd: workspace, mcpServers: [] }, 30_000);
  assert.ok(s.result, JSON.stringify(s));
  return s.result.sessionId;
}

let nextId = 0;
/**
 * Sends one prompt and waits for its response. Returns the response, this turn's session
 * updates, and the model requests it made (through the proxy, each answered in full).
 */
async function prompt(agent, sessionId, content, ms = TURN_MS) {
  const blocks = typeof content === "string" ? [{ type: "text", text: content }] : content;
  const fromFrame = agent.frames.length;
  const fromCall = proxy.exchanges.length;
  const t0 = performance.now();
  const response = await agent.request(`p${++nextId}`, "session/prompt", { sessionId, prompt: blocks }, ms);
  const seconds = (performance.now() - t0) / 1000;
  const updates = agent.frames
    .slice(fromFrame)
    .filter((f) => f.method === "session/update" && f.params.sessionId === sessionId)
    .map((f) => f.params.update);
  // The model requests (not the window probes: GET /props, Ollama's POST /api/show).
  const calls = proxy.exchanges.slice(fromCall).filter((e) => e.method === "POST" && /\/v1\/(chat\/completions|messages|responses)$/.test(e.path));
  await Promise.all(calls.map((c) => c.done));
  return { response, updates, calls, seconds };
}

/**
 * What the turn cost on the server, for the test's diagnostics: per model request, the prompt
 * tokens llama.cpp processed (beyond its cache) and took from its cache, and the time.
 */
function cost(turn) {
  const per = turn.calls.map((c) => {
    const timings = sseData(c.response).findLast((d) => d.timings)?.timings;
    return timings ? `${timings.prompt_n}+${timings.cache_n} cached prompt tokens in ${(timings.prompt_ms / 1000).toFixed(1)} s, ${timings.predicted_n} out in ${(timings.predicted_ms / 1000).toFixed(1)} s` : `${c.status}`;
  });
  return `turn ${turn.seconds.toFixed(1)} s (${per.join("; ")})`;
}

/** Stops the agent and checks that every frame it sent was valid ACP. */
async function finish(agent) {
  await agent.stop();
  assert.deepEqual(agent.violations, [], "every frame is valid ACP");
}

/** A failure message with the context to debug a real model: the answer, the agent's log. */
const context = (agent, turn) =>
  `response: ${JSON.stringify(turn.response)}\nanswer: ${JSON.stringify(textOf(turn.updates, "agent_message_chunk"))}\n` +
  `model requests: ${turn.calls.map((c) => `${c.path} → ${c.status ?? c.error}`).join(", ")}\n` +
  `last model response: ${turn.calls.at(-1)?.response.slice(0, 1500)}\nagent stderr (tail):\n${agent.stderr.slice(-3000)}`;

/** The Anthropic SSE events of a raw stream: `[{ event, data }]`. */
function anthropicEvents(text) {
  return text
    .split("\n\n")
    .map((block) => {
      const event = block.match(/^event: (.*)$/m)?.[1];
      const data = block.match(/^data: (.*)$/m)?.[1];
      return event && data ? { event, data: JSON.parse(data) } : null;
    })
    .filter(Boolean);
}

/**
 * Writes conversation history with the scripted fake model: a session in the workspace whose
 * turns are `[userText, steps]` (fake-model step specs), on `provider`. Returns the agent
 * environment (its data dir holds the session) and the session id.
 */
async function historyWithFake(provider, turns) {
  const env = agentEnv({ fake, extra: { CORVID_PROVIDER: provider } });
  const agent = await startAgent(env);
  const sessionId = await newSession(agent);
  for (const [text, steps] of turns) {
    fake.script(text, { steps });
    const r = await agent.request(`h${++nextId}`, "session/prompt", { sessionId, prompt: [{ type: "text", text }] }, 15_000);
    assert.equal(r.result?.stopReason, "end_turn", JSON.stringify(r));
  }
  await finish(agent);
  return { env, sessionId };
}

/** Loads `sessionId` (written by historyWithFake) in a new agent pointed at the real server. */
async function loadOnRealServer(provider, env, sessionId, extra = {}) {
  await server();
  const agent = await startAgent(realEnv(provider, env, extra));
  const loaded = await agent.request("load", "session/load", { sessionId, cwd: workspace, mcpServers: [] }, 30_000);
  assert.ok(loaded.result, JSON.stringify(loaded));
  return agent;
}

// ── the quirk that needs a server that is still starting: run first ───────────────────────────

test("a prompt sent while the model still loads (503 Loading model) is retried until it is answered", TEST, async (t) => {
  if (starting) return t.skip("the server was already started by another test");
  // The agent and its session exist before the server does; the prompt goes out the moment the
  // server's HTTP side listens, while the model is still loading.
  const agent = await startAgent(realEnv("openai"));
  const sessionId = await newSession(agent);
  const s = await startServer();
  await s.health(503, 60_000); // listening, loading
  const fromCall = proxy.exchanges.length;
  const turn = await prompt(agent, sessionId, "Say hello.");
  const t0 = proxy.exchanges[fromCall].at;
  t.diagnostic(`${cost(turn)}; to the server: ${proxy.exchanges.slice(fromCall).map((c) => `+${((c.at - t0) / 1000).toFixed(2)} s ${c.method} ${c.path} → ${c.status}`).join(", ")}`);
  // Corvid's window probe (GET /props) got the 503 too: the turn ran on the catalog's window.
  assert.equal(turn.updates.filter((u) => u.sessionUpdate === "usage_update").at(-1)?.size, 8192, "the catalog's window for smollm2");
  assert.equal(turn.response.result?.stopReason, "end_turn", context(agent, turn));
  assert.ok(turn.calls.length >= 2, context(agent, turn));
  const [first, ...rest] = turn.calls;
  assert.equal(first.status, 503, `the first request found the model loading\n${context(agent, turn)}`);
  assert.match(first.response, /Loading model/);
  assert.equal(rest.at(-1).status, 200);
  assert.ok(rest.slice(0, -1).every((c) => c.status === 503), "only 503s before the answer");
  await agent.waitForStderr(/model request failed; retrying/);
  assert.ok(textOf(turn.updates, "agent_message_chunk").trim(), "an answer after the retries");
  await s.ready();
  // A probe the server could not answer is not kept: a later turn (5 s on) asks again and gets
  // the window the server was started with.
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, 5_100 - (performance.now() - t0))));
  const next = await prompt(agent, sessionId, "Say hi.");
  assert.equal(next.response.result?.stopReason, "end_turn", context(agent, next));
  assert.equal(next.updates.filter((u) => u.sessionUpdate === "usage_update").at(-1)?.size, CTX, "llama.cpp's n_ctx");
  await finish(agent);
});

// ── a streamed answer through each API ──────────────────────────────────────────────────────

test("Chat Completions: a streamed answer; the usage in the final `choices: []` chunk becomes usage_update", TEST, async (t) => {
  await server();
  const agent = await startAgent(realEnv("openai"));
  const sessionId = await newSession(agent);
  const turn = await prompt(agent, sessionId, "Say hello.");
  t.diagnostic(cost(turn));
  assert.equal(turn.response.result?.stopReason, "end_turn", context(agent, turn));
  const chunks = turn.updates.filter((u) => u.sessionUpdate === "agent_message_chunk");
  assert.ok(chunks.some((u) => u.content.type === "text" && u.content.text.length > 0), context(agent, turn));

  // What the server sent: one streamed request, the answer in content deltas, then a chunk with
  // only finish_reason, then the usage in a chunk without choices.
  assert.equal(turn.calls.length, 1);
  const [call] = turn.calls;
  assert.equal(call.path, "/v1/chat/completions");
  assert.equal(call.body.stream, true);
  assert.equal(call.status, 200);
  assert.match(call.headers["content-type"], /text\/event-stream/);
  const data = sseData(call.response);
  const sent = data.flatMap((d) => d.choices ?? []).map((c) => c.delta?.content ?? "").join("");
  assert.equal(textOf(turn.updates, "agent_message_chunk"), sent, "Corvid passed on exactly the streamed text");
  const usageChunk = data.find((d) => Array.isArray(d.choices) && d.choices.length === 0 && d.usage);
  assert.ok(usageChunk, `the server sent its usage in a \`choices: []\` chunk:\n${call.response.slice(-1500)}`);
  const { usage } = usageChunk;

  const usageUpdate = turn.updates.filter((u) => u.sessionUpdate === "usage_update").at(-1);
  assert.ok(usageUpdate, "a usage_update");
  assert.equal(usageUpdate.used, usage.total_tokens, "the context in use is the server's count");
  assert.equal(usageUpdate.size, CTX, "the window from llama.cpp's /props");
  assert.equal(usageUpdate._meta?.corvid?.cacheReadTokens ?? 0, usage.prompt_tokens_details?.cached_tokens ?? 0, "llama.cpp's cached prompt tokens");
  assert.deepEqual(turn.response.result._meta.corvid.usage, { totalTokens: usage.total_tokens, inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens });
  await finish(agent);
});

test("Anthropic Messages: a streamed answer, with input tokens counted as llama.cpp reports them", TEST, async (t) => {
  await server();
  const agent = await startAgent(realEnv("anthropic"));
  const sessionId = await newSession(agent);
  const turn = await prompt(agent, sessionId, "Say hello.");
  t.diagnostic(cost(turn));
  assert.equal(turn.response.result?.stopReason, "end_turn", context(agent, turn));
  const chunks = turn.updates.filter((u) => u.sessionUpdate === "agent_message_chunk");
  assert.ok(chunks.some((u) => u.content.type === "text" && u.content.text.length > 0), context(agent, turn));

  assert.equal(turn.calls.length, 1);
  const [call] = turn.calls;
  assert.equal(call.path, "/v1/messages");
  assert.equal(call.body.stream, true);
  assert.equal(call.status, 200, context(agent, turn));
  const events = anthropicEvents(call.response);
  const sent = events.filter((e) => e.data.delta?.type === "text_delta").map((e) => e.data.delta.text).join("");
  assert.equal(textOf(turn.updates, "agent_message_chunk"), sent, "Corvid passed on exactly the streamed text");
  // llama.cpp's input_tokens leaves out the tokens it took from its cache (they are in
  // cache_read_input_tokens, as with Anthropic's own caching): the turn's input is both.
  const start = events.find((e) => e.event === "message_start")?.data.message.usage;
  const delta = events.find((e) => e.event === "message_delta")?.data.usage;
  assert.ok(start && delta, call.response.slice(0, 1500));
  // A v1 client gets the turn's usage under `_meta` (the stable PromptResponse has no `usage`).
  const { usage } = turn.response.result._meta.corvid;
  assert.equal(usage.inputTokens, start.input_tokens + (start.cache_read_input_tokens ?? 0));
  assert.equal(usage.outputTokens, delta.output_tokens);
  const usageUpdate = turn.updates.filter((u) => u.sessionUpdate === "usage_update").at(-1);
  assert.equal(usageUpdate._meta?.corvid?.cacheReadTokens ?? 0, start.cache_read_input_tokens ?? 0);
  assert.equal(usageUpdate.size, CTX);
  await finish(agent);
});

test("OpenAI Responses: a streamed answer from /v1/responses; usage with cached_tokens becomes usage_update", TEST, async (t) => {
  await server();
  const agent = await startAgent(realEnv("openai-responses"));
  const sessionId = await newSession(agent);
  const turn = await prompt(agent, sessionId, "Say hello.");
  t.diagnostic(cost(turn));
  assert.equal(turn.response.result?.stopReason, "end_turn", context(agent, turn));

  assert.equal(turn.calls.length, 1);
  const [call] = turn.calls;
  assert.equal(call.path, "/v1/responses");
  assert.equal(call.body.stream, true);
  assert.equal(call.body.store, false);
  assert.equal(call.body.prompt_cache_key, sessionId, "the session id keys the provider's cache");
  assert.equal(call.status, 200, context(agent, turn));
  const data = sseData(call.response);
  const sent = data.filter((d) => d.type === "response.output_text.delta").map((d) => d.delta).join("");
  assert.ok(sent.length > 0, call.response.slice(0, 1500));
  assert.equal(textOf(turn.updates, "agent_message_chunk"), sent, "Corvid passed on exactly the streamed text");
  const usage = data.find((d) => d.type === "response.completed")?.response.usage;
  assert.ok(usage, call.response.slice(-1500));
  assert.deepEqual(turn.response.result._meta.corvid.usage, { totalTokens: usage.total_tokens, inputTokens: usage.input_tokens, outputTokens: usage.output_tokens });
  const usageUpdate = turn.updates.filter((u) => u.sessionUpdate === "usage_update").at(-1);
  assert.equal(usageUpdate.size, CTX);
  // Corvid leaves the cache counts out when the provider read and wrote nothing from its cache.
  assert.equal(usageUpdate._meta?.corvid?.cacheReadTokens ?? 0, usage.input_tokens_details?.cached_tokens ?? 0);
  await finish(agent);
});

// ── a real tool loop through each API ───────────────────────────────────────────────────────

/** Two earlier turns that read a file each: the model's few-shot examples. */
const readTurns = [
  [
    "Read the file Cargo.toml.",
    [{ toolCalls: [{ name: "read_file", arguments: { path: "Cargo.toml" } }] }, { chunks: [{ content: "Cargo.toml declares a package named demo, version 0.1.0." }] }],
  ],
  [
    "Read the file src/lib.rs.",
    [{ toolCalls: [{ name: "read_file", arguments: { path: "src/lib.rs" } }] }, { chunks: [{ content: "src/lib.rs defines a function add that returns the sum of two i32 values." }] }],
  ],
];

/** The tool call of the turn: announced as a read, then completed with the file's content. */
function assertReadMainRs(agent, turn) {
  const call = turn.updates.find((u) => u.sessionUpdate === "tool_call");
  assert.ok(call, `the model called a tool\n${context(agent, turn)}`);
  assert.equal(call.kind, "read");
  assert.equal(call.title, "Read src/main.rs");
  assert.deepEqual(call.rawInput, { path: "src/main.rs" });
  assert.deepEqual(call.locations, [{ path: join(workspace, "src", "main.rs"), line: 1 }]);
  const done = turn.updates.find((u) => u.toolCallId === call.toolCallId && u.status === "completed");
  assert.ok(done, "the read completed");
  assert.match(done.content[0].content.text, /println!\("Hello, world!"\)/);
  assert.equal(turn.response.result?.stopReason, "end_turn", context(agent, turn));
  assert.ok(textOf(turn.updates, "agent_message_chunk").trim(), `an answer after the tool result\n${context(agent, turn)}`);
}

test("Chat Completions: the model calls read_file, Corvid runs it and sends the result back", TEST, async (t) => {
  const { env, sessionId } = await historyWithFake("openai", readTurns);
  const agent = await loadOnRealServer("openai", env, sessionId);
  const turn = await prompt(agent, sessionId, "Read the file src/main.rs.");
  t.diagnostic(`${cost(turn)}; answer: ${JSON.stringify(textOf(turn.updates, "agent_message_chunk"))}`);
  assertReadMainRs(agent, turn);

  // The wire: the history's tool calls went out; the model's call came as tool_calls deltas with
  // llama.cpp's own random id; the result went back under that id.
  assert.equal(turn.calls.length, 2, context(agent, turn));
  const [first, second] = turn.calls;
  assert.equal(first.body.messages.filter((m) => m.role === "assistant" && m.tool_calls?.length).length, 2, "the earlier tool calls were sent");
  const data = sseData(first.response);
  const deltas = data.flatMap((d) => d.choices ?? []).flatMap((c) => c.delta?.tool_calls ?? []);
  const id = deltas.find((d) => d.id)?.id;
  assert.ok(id, first.response.slice(0, 2000));
  assert.ok(data.some((d) => d.choices?.[0]?.finish_reason === "tool_calls"));
  const result = second.body.messages.find((m) => m.role === "tool" && m.tool_call_id === id);
  assert.ok(result, `the result went back under the server's id ${id}: ${JSON.stringify(second.body.messages.slice(-2))}`);
  assert.match(JSON.stringify(result.content), /Hello, world!/);
  await finish(agent);
});

test("Anthropic Messages: the model calls read_file (tool_use), Corvid runs it and sends the tool_result back", TEST, async (t) => {
  const { env, sessionId } = await historyWithFake("anthropic", readTurns);
  const agent = await loadOnRealServer("anthropic", env, sessionId);
  const turn = await prompt(agent, sessionId, "Read the file src/main.rs.");
  t.diagnostic(`${cost(turn)}; answer: ${JSON.stringify(textOf(turn.updates, "agent_message_chunk"))}`);
  assertReadMainRs(agent, turn);

  assert.equal(turn.calls.length, 2, context(agent, turn));
  const [first, second] = turn.calls;
  const events = anthropicEvents(first.response);
  // llama.cpp's tool_use block has no `input` field; the input comes as input_json_delta pieces.
  const use = events.find((e) => e.event === "content_block_start" && e.data.content_block.type === "tool_use")?.data.content_block;
  assert.ok(use, first.response.slice(0, 2000));
  assert.equal(use.name, "read_file");
  assert.equal(events.find((e) => e.event === "message_delta")?.data.delta.stop_reason, "tool_use");
  const results = second.body.messages.flatMap((m) => (m.role === "user" && Array.isArray(m.content) ? m.content : [])).filter((b) => b.type === "tool_result");
  const result = results.find((b) => b.tool_use_id === use.id);
  assert.ok(result, `the tool_result went back under the server's id ${use.id}`);
  assert.match(JSON.stringify(result.content), /Hello, world!/);
  await finish(agent);
});

test("OpenAI Responses: the model calls read_file (function_call), Corvid sends function_call_output back", TEST, async (t) => {
  const { env, sessionId } = await historyWithFake("openai-responses", readTurns);
  const agent = await loadOnRealServer("openai-responses", env, sessionId);
  const turn = await prompt(agent, sessionId, "Read the file src/main.rs.");
  t.diagnostic(`${cost(turn)}; answer: ${JSON.stringify(textOf(turn.updates, "agent_message_chunk"))}`);
  assertReadMainRs(agent, turn);

  assert.equal(turn.calls.length, 2, context(agent, turn));
  const [first, second] = turn.calls;
  assert.equal(first.body.input.filter((i) => i.type === "function_call").length, 2, "the earlier tool calls were sent as items");
  const data = sseData(first.response);
  const item = data.find((d) => d.type === "response.output_item.done" && d.item.type === "function_call")?.item;
  assert.ok(item, first.response.slice(0, 2000));
  assert.equal(item.name, "read_file");
  const output = second.body.input.find((i) => i.type === "function_call_output" && i.call_id === item.call_id);
  assert.ok(output, `the output went back under the server's call_id ${item.call_id}: ${JSON.stringify(second.body.input.slice(-2))}`);
  assert.match(JSON.stringify(output.output), /Hello, world!/);
  await finish(agent);
});

// ── a stream whose first event is missing ───────────────────────────────────────────────────

// When the answer starts with a multi-byte character (an emoji), llama.cpp sends no
// `{"role":"assistant"}` chunk (Chat Completions) and no message_start (Messages): the stream
// begins with the content. Earlier answers that start with 🦀 make the model start with it too.
const crabTurns = [
  ["Say hi.", [{ chunks: [{ content: "🦀 Hi!" }] }]],
  ["Say hello.", [{ chunks: [{ content: "🦀 Hello!" }] }]],
];

test("Chat Completions: a stream without the role chunk (the answer starts with an emoji)", TEST, async (t) => {
  const { env, sessionId } = await historyWithFake("openai", crabTurns);
  const agent = await loadOnRealServer("openai", env, sessionId);
  const turn = await prompt(agent, sessionId, "Say hey.");
  const text = textOf(turn.updates, "agent_message_chunk");
  t.diagnostic(`${cost(turn)}; answer: ${JSON.stringify(text)}`);
  assert.equal(turn.calls.length, 1);
  const data = sseData(turn.calls[0].response);
  assert.ok(data.length > 0 && !data.some((d) => d.choices?.[0]?.delta?.role), `the server sent no role chunk\n${context(agent, turn)}`);
  assert.equal(turn.response.result?.stopReason, "end_turn", context(agent, turn));
  assert.ok(text.startsWith("🦀"), context(agent, turn));
  assert.equal(text, data.flatMap((d) => d.choices ?? []).map((c) => c.delta?.content ?? "").join(""));
  await finish(agent);
});

test("Anthropic Messages: a stream without message_start (the answer starts with an emoji)", TEST, async (t) => {
  const { env, sessionId } = await historyWithFake("anthropic", crabTurns);
  const agent = await loadOnRealServer("anthropic", env, sessionId);
  const turn = await prompt(agent, sessionId, "Say hey.");
  const text = textOf(turn.updates, "agent_message_chunk");
  t.diagnostic(`${cost(turn)}; answer: ${JSON.stringify(text)}`);
  assert.equal(turn.calls.length, 1);
  const events = anthropicEvents(turn.calls[0].response);
  assert.equal(events[0]?.event, "content_block_start", `the stream starts without message_start\n${context(agent, turn)}`);
  assert.equal(turn.response.result?.stopReason, "end_turn", context(agent, turn));
  assert.ok(text.startsWith("🦀"), context(agent, turn));
  assert.equal(text, events.filter((e) => e.data.delta?.type === "text_delta").map((e) => e.data.delta.text).join(""));
  await finish(agent);
});

// ── an error as plain JSON on a streamed request ────────────────────────────────────────────

// A model configured to take images on a server without a vision projector: llama.cpp answers
// the streamed request with HTTP 500 and a plain JSON body (no SSE). Corvid retries 5xx, then
// must end the turn with an error that says what the server said, not hang.
const PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP4z8DwHwAFAAH/q842iQAAAABJRU5ErkJggg==";

for (const provider of ["openai", "anthropic"]) {
  test(`${provider === "openai" ? "Chat Completions" : "Anthropic Messages"}: an error as plain JSON on a streamed request ends the turn with a clear error`, TEST, async (t) => {
    await server();
    // One retry (the default is 6, over about 16 s of backoff).
    const agent = await startAgent(realEnv(provider, agentEnv({ config: `[provider]\nmax_retries = 1\n\n[models.${MODEL}]\nimages = true\n` })));
    const sessionId = await newSession(agent);
    const turn = await prompt(
      agent,
      sessionId,
      [
        { type: "text", text: "What is in this picture?" },
        { type: "image", mimeType: "image/png", data: PNG_1X1 },
      ],
      60_000,
    );
    t.diagnostic(`turn: ${turn.seconds.toFixed(1)} s; ${turn.calls.length} requests; response: ${JSON.stringify(turn.response).slice(0, 400)}`);
    assert.ok(turn.calls.length >= 1);
    for (const call of turn.calls) {
      assert.equal(call.body.stream, true);
      assert.equal(call.status, 500);
      assert.match(call.headers["content-type"], /application\/json/);
      assert.match(call.response, /image input is not supported/);
    }
    assert.ok(turn.response.error, `the prompt fails with a JSON-RPC error\n${context(agent, turn)}`);
    assert.match(turn.response.error.message, /image input is not supported/, "the server's own message reaches the client");
    await finish(agent);
  });
}

// A scripted model server on 127.0.0.1 (random port) that speaks OpenAI-compatible Chat
// Completions (`POST /v1/chat/completions`), the Anthropic Messages API (`POST /v1/messages`)
// and the OpenAI Responses API (`POST /v1/responses`, what Codex speaks; used by the peer
// benchmark), from the same script specs.
//
// Tests register replies keyed by a marker that appears in the latest user message;
// a prompt without a known marker gets an echo. Every request body and its headers are
// recorded (`requests[i].api` is "openai" or "anthropic") so tests can assert what the
// model was sent.
import http from "node:http";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function startFakeModel({ models = ["fake-model", "fake-model-2"] } = {}) {
  const replies = new Map(); // marker -> reply spec
  const attempts = new Map(); // marker -> count of requests seen
  const requests = [];
  const sockets = new Set();
  // A context window the server enforces (tokens, counted as the body's bytes / 4), or null.
  let contextLimit = null;
  /** The last registered marker the user's text contains, or null. */
  const markerIn = (text) => {
    let marker = null;
    for (const key of replies.keys()) if (text.includes(key)) marker = key;
    return marker;
  };

  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, "http://x");
    if (req.method === "GET" && url.pathname.endsWith("/models")) {
      requests.push({ api: "models", headers: req.headers });
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ object: "list", data: models.map((id) => ({ id, object: "model" })) }));
      return;
    }
    const api = url.pathname.endsWith("/chat/completions")
      ? "openai"
      : url.pathname.endsWith("/messages")
        ? "anthropic"
        : url.pathname.endsWith("/responses")
          ? "responses"
          : null;
    if (req.method !== "POST" || !api) {
      res.writeHead(404).end();
      return;
    }
    let raw = "";
    for await (const chunk of req) raw += chunk;
    const body = JSON.parse(raw);
    requests.push({ api, body, headers: req.headers, bytes: raw.length });
    if (contextLimit !== null && raw.length / 4 > contextLimit) {
      // Refused as real servers do: OpenAI's wording (with the window) or Anthropic's (without).
      const tokens = Math.ceil(raw.length / 4);
      requests.at(-1).refused = true;
      const error =
        api === "anthropic"
          ? { type: "error", error: { type: "invalid_request_error", message: `prompt is too long: ${tokens} tokens > ${contextLimit} maximum` } }
          : { error: { message: `This model's maximum context length is ${contextLimit} tokens. However, your messages resulted in ${tokens} tokens.`, type: "invalid_request_error", code: "context_length_exceeded" } };
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify(error));
      return;
    }
    if (api === "responses") {
      await serveResponses(body, res);
      return;
    }
    // Anthropic: the user's text is a text block; user messages holding only tool results
    // do not count as the user speaking.
    const userText = (m) =>
      m.role !== "user" ? null : typeof m.content === "string" ? m.content : m.content.filter((b) => b.type === "text").map((b) => b.text).join("") || null;
    const lastUserIndex = body.messages.findLastIndex((m) => userText(m) !== null);
    const lastUser = lastUserIndex >= 0 ? userText(body.messages[lastUserIndex]) : "";
    const marker = markerIn(lastUser);
    const n = (attempts.get(marker) ?? 0) + 1;
    attempts.set(marker, n);
    let spec = marker ? replies.get(marker) : { chunks: [{ content: `You said: ${lastUser}` }] };
    if (spec.steps) {
      // Multi-step turns: the step is the number of assistant messages since the user spoke.
      const step = body.messages.slice(lastUserIndex + 1).filter((m) => m.role === "assistant").length;
      spec = spec.steps[Math.min(step, spec.steps.length - 1)];
    }
    if (spec.failTimes && n <= spec.failTimes) spec = { status: spec.failStatus ?? 500 };
    await (api === "anthropic" ? serveAnthropic : serve)(spec, res, body.model);
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });

  async function serve(spec, res, model) {
    if (spec.status) {
      res.writeHead(spec.status, { "content-type": "application/json", ...(spec.headers ?? {}) });
      res.end(JSON.stringify(spec.body ?? { error: { message: `fake error ${spec.status}` } }));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    if (spec.hang) return; // headers only, then silence
    const frame = (delta, finish = null) =>
      `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    // Every complete response reports 10 prompt + 5 completion tokens.
    const usage = `data: ${JSON.stringify({ id: "c1", choices: [], usage: { prompt_tokens: 10, completion_tokens: 5 } })}\n\n`;
    if (spec.toolCalls) {
      // Tool calls arrive as deltas: id and name first, then the arguments in two pieces.
      spec.toolCalls.forEach((call, index) => {
        const args = typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments ?? {});
        const half = Math.floor(args.length / 2);
        res.write(frame({ tool_calls: [{ index, id: call.id ?? `call_${index}`, type: "function", function: { name: call.name, arguments: "" } }] }));
        res.write(frame({ tool_calls: [{ index, function: { arguments: args.slice(0, half) } }] }));
        res.write(frame({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] }));
      });
      res.write(frame({}, "tool_calls"));
      res.write(usage);
      res.end("data: [DONE]\n\n");
      return;
    }
    if (spec.garbage) {
      res.write(frame({ content: "partial " }));
      res.end("data: {this is not json\n\n");
      return;
    }
    if (spec.repeat) {
      // Bulk mode for benchmarks: many small chunks, written in large batches.
      const { content, count } = spec.repeat;
      let batch = "";
      for (let i = 0; i < count; i++) {
        batch += frame({ content });
        if (batch.length > 65536) {
          if (!res.write(batch)) await new Promise((r) => res.once("drain", r));
          batch = "";
        }
      }
      res.write(batch);
    } else {
      for (const c of spec.chunks ?? []) {
        if (res.destroyed) return;
        if (spec.delayMs) await sleep(spec.delayMs);
        const delta = c.reasoning !== undefined ? { reasoning_content: c.reasoning } : { content: c.content };
        res.write(frame(delta));
      }
    }
    if (spec.truncate) {
      res.end();
      return;
    }
    // Mid-stream faults after the chunks: `stall` keeps the stream open and silent;
    // `reset` kills the connection (TCP RST) without ending the HTTP response.
    if (spec.stall) return;
    if (spec.reset) {
      // Give the client time to read the chunks first: a reset discards unread data.
      await sleep(100);
      res.socket?.resetAndDestroy?.() ?? res.destroy();
      return;
    }
    res.write(frame({}, spec.finish ?? "stop"));
    res.write(usage);
    res.end("data: [DONE]\n\n");
  }

  // The same spec as an Anthropic Messages stream: `chunks` become thinking (reasoning) and
  // text blocks, `toolCalls` tool_use blocks whose input arrives as input_json_delta pieces,
  // `finish` a stop_reason (OpenAI names are mapped), `streamError` an `event: error`.
  async function serveAnthropic(spec, res, model) {
    if (spec.status) {
      res.writeHead(spec.status, { "content-type": "application/json", ...(spec.headers ?? {}) });
      res.end(JSON.stringify(spec.body ?? { type: "error", error: { type: "api_error", message: `fake error ${spec.status}` } }));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    if (spec.hang) return;
    const ev = (type, data = {}) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
    const usage = spec.usage ?? { input_tokens: 10, output_tokens: 5 };
    res.write(ev("message_start", { message: { id: "msg_1", type: "message", role: "assistant", model, content: [], stop_reason: null, usage: { input_tokens: usage.input_tokens, output_tokens: 1 } } }));
    res.write(ev("ping"));
    let index = 0;
    let open = null;
    const close = () => {
      if (!open) return;
      if (open === "thinking") res.write(ev("content_block_delta", { index, delta: { type: "signature_delta", signature: `sig-${index}` } }));
      res.write(ev("content_block_stop", { index }));
      index++;
      open = null;
    };
    if (spec.garbage) {
      res.write(ev("content_block_start", { index, content_block: { type: "text", text: "" } }));
      res.write(ev("content_block_delta", { index, delta: { type: "text_delta", text: "partial " } }));
      res.end("event: content_block_delta\ndata: {this is not json\n\n");
      return;
    }
    for (const c of spec.chunks ?? []) {
      if (res.destroyed) return;
      if (spec.delayMs) await sleep(spec.delayMs);
      const kind = c.reasoning !== undefined ? "thinking" : "text";
      if (open !== kind) {
        close();
        res.write(ev("content_block_start", { index, content_block: kind === "thinking" ? { type: "thinking", thinking: "" } : { type: "text", text: "" } }));
        open = kind;
      }
      const delta = kind === "thinking" ? { type: "thinking_delta", thinking: c.reasoning } : { type: "text_delta", text: c.content };
      res.write(ev("content_block_delta", { index, delta }));
    }
    close();
    if (spec.streamError) {
      res.end(ev("error", { error: { type: "overloaded_error", message: spec.streamError } }));
      return;
    }
    if (spec.truncate) {
      res.end();
      return;
    }
    const stopNames = { stop: "end_turn", length: "max_tokens", content_filter: "refusal", tool_calls: "tool_use" };
    let stop = stopNames[spec.finish] ?? spec.finish ?? "end_turn";
    for (const call of spec.toolCalls ?? []) {
      const args = typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments ?? {});
      const third = Math.ceil(args.length / 3);
      res.write(ev("content_block_start", { index, content_block: { type: "tool_use", id: call.id ?? `toolu_${index}`, name: call.name, input: {} } }));
      for (let i = 0; i < 3; i++) {
        res.write(ev("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: args.slice(i * third, (i + 1) * third) } }));
      }
      res.write(ev("content_block_stop", { index }));
      index++;
      stop = "tool_use";
    }
    res.write(ev("message_delta", { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } }));
    res.end(ev("message_stop"));
  }

  // The Responses API: `input` items instead of messages. Only plain answers are scripted here
  // (`chunks` of content; tool calls are not needed by the peer benchmark).
  async function serveResponses(body, res) {
    const texts = (item) =>
      item.role === "user" && Array.isArray(item.content)
        ? item.content.filter((c) => c.type === "input_text").map((c) => c.text).join("")
        : typeof item.content === "string" && item.role === "user"
          ? item.content
          : "";
    const lastUser = (body.input ?? []).map(texts).filter(Boolean).at(-1) ?? "";
    const marker = markerIn(lastUser);
    const spec = marker ? replies.get(marker) : { chunks: [{ content: `You said: ${lastUser}` }] };
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    const ev = (type, data = {}) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
    const id = `resp_${requests.length}`;
    const itemId = `msg_${requests.length}`;
    res.write(ev("response.created", { response: { id, object: "response", status: "in_progress", output: [] } }));
    res.write(ev("response.output_item.added", { output_index: 0, item: { id: itemId, type: "message", role: "assistant", status: "in_progress", content: [] } }));
    let text = "";
    for (const c of spec.chunks ?? []) {
      if (res.destroyed) return;
      if (spec.delayMs) await sleep(spec.delayMs);
      if (c.content === undefined) continue;
      text += c.content;
      res.write(ev("response.output_text.delta", { item_id: itemId, output_index: 0, content_index: 0, delta: c.content }));
    }
    const item = { id: itemId, type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text, annotations: [] }] };
    res.write(ev("response.output_item.done", { output_index: 0, item }));
    const usage = { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 };
    res.end(ev("response.completed", { response: { id, object: "response", status: "completed", output: [item], usage } }));
  }

  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/v1`,
    root: `http://127.0.0.1:${port}`,
    requests,
    /** Reply with `spec` to any prompt containing `marker`. */
    script(marker, spec) {
      replies.set(marker, spec);
      attempts.delete(marker);
    },
    attemptsFor: (marker) => attempts.get(marker) ?? 0,
    /** Refuse every request longer than `tokens` (bytes / 4) as too long; null lifts it. */
    limitContext(tokens) {
      contextLimit = tokens;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

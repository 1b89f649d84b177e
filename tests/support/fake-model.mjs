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
  // Anthropic's prompt cache, when on (`billCache`): prefix (as JSON) → its tokens.
  let promptCache = null;
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
    requests.push({ api, body, headers: req.headers, bytes: raw.length, at: Date.now() });
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
    // Chat Completions: the user message that carries tool results' images is not the user
    // speaking either (Corvid's, after the results).
    const toolImages = (m) => Array.isArray(m.content) && m.content.some((b) => b.type === "image_url") && m.content.some((b) => b.type === "text" && b.text.startsWith("[Images returned by tool call"));
    const userText = (m) =>
      m.role !== "user" || toolImages(m) ? null : typeof m.content === "string" ? m.content : m.content.filter((b) => b.type === "text").map((b) => b.text).join("") || null;
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
    if (spec.failTimes && n <= spec.failTimes) {
      // `failHeaders`: headers of the failures, or a function of the attempt (say, a date).
      const headers = typeof spec.failHeaders === "function" ? spec.failHeaders(n) : spec.failHeaders;
      spec = { status: spec.failStatus ?? 500, headers };
    }
    if (api === "anthropic" && promptCache && !spec.status) {
      spec = { ...spec, usage: { ...cacheUsage(body), output_tokens: 5 } };
      requests.at(-1).usage = spec.usage;
    }
    await (api === "anthropic" ? serveAnthropic : serve)(spec, res, body.model);
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });

  // Anthropic's prompt cache, simplified: a request is a sequence of blocks (tools, system,
  // then each message's blocks); the prefix up to each `cache_control` mark is written to the
  // cache, and the longest prefix already there is read from it. Tokens are bytes / 4.
  function cacheUsage(body) {
    const strip = ({ cache_control, ...rest }) => rest;
    const blocks = [
      ...(body.tools ?? []).map(strip),
      ...(typeof body.system === "string" ? [{ type: "text", text: body.system }] : (body.system ?? [])).map(strip),
      ...body.messages.flatMap((m) => (typeof m.content === "string" ? [{ role: m.role, text: m.content }] : m.content.map((b) => strip({ role: m.role, ...b })))),
    ];
    const marked = [
      ...(body.tools ?? []),
      ...(typeof body.system === "string" ? [{}] : (body.system ?? [])),
      ...body.messages.flatMap((m) => (typeof m.content === "string" ? [{}] : m.content)),
    ].map((b) => Boolean(b.cache_control));
    const tokensOf = (n) => Math.ceil(JSON.stringify(blocks.slice(0, n)).length / 4);
    const total = tokensOf(blocks.length);
    let read = 0;
    for (let n = blocks.length; n > 0; n--) {
      const key = JSON.stringify(blocks.slice(0, n));
      if (promptCache.has(key)) {
        read = promptCache.get(key);
        break;
      }
    }
    let written = read;
    marked.forEach((m, i) => {
      if (!m) return;
      const key = JSON.stringify(blocks.slice(0, i + 1));
      const tokens = tokensOf(i + 1);
      if (!promptCache.has(key)) promptCache.set(key, tokens);
      written = Math.max(written, tokens);
    });
    const write = written - read;
    return { input_tokens: total - read - write, cache_read_input_tokens: read, cache_creation_input_tokens: write };
  }

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
      // Reasoning first (as `reasoning_content`), if scripted; then the tool calls as deltas:
      // id and name first (with a call's `extra_content`, as Gemini sends its thought
      // signature), then the arguments in two pieces.
      for (const c of (spec.chunks ?? []).filter((c) => c.reasoning !== undefined)) res.write(frame({ reasoning_content: c.reasoning }));
      spec.toolCalls.forEach((call, index) => {
        const args = typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments ?? {});
        const half = Math.floor(args.length / 2);
        const extra = call.extra_content ? { extra_content: call.extra_content } : {};
        res.write(frame({ tool_calls: [{ index, id: call.id ?? `call_${index}`, type: "function", function: { name: call.name, arguments: "" }, ...extra }] }));
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
    const { output_tokens, ...input } = usage;
    res.write(ev("message_start", { message: { id: "msg_1", type: "message", role: "assistant", model, content: [], stop_reason: null, usage: { ...input, output_tokens: 1 } } }));
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

  // The Responses API: `input` items instead of messages, from the same script specs:
  // `chunks` (content, or `reasoning` as a summary), `toolCalls` as function_call items, and
  // `steps` counted as the runs of function_call_output items since the user spoke. A spec's
  // reasoning also comes as a reasoning item with encrypted content (`enc-<request>`), which
  // the client must send back. Usage: 10 input tokens (6 of them cached), 5 output.
  async function serveResponses(body, res) {
    const texts = (item) =>
      item.role === "user" && Array.isArray(item.content)
        ? item.content.filter((c) => c.type === "input_text").map((c) => c.text).join("")
        : typeof item.content === "string" && item.role === "user"
          ? item.content
          : "";
    const input = body.input ?? [];
    const lastUserIndex = input.findLastIndex((i) => texts(i));
    const lastUser = lastUserIndex >= 0 ? texts(input[lastUserIndex]) : "";
    const marker = markerIn(lastUser);
    const n = (attempts.get(marker) ?? 0) + 1;
    attempts.set(marker, n);
    let spec = marker ? replies.get(marker) : { chunks: [{ content: `You said: ${lastUser}` }] };
    if (spec.steps) {
      const after = input.slice(lastUserIndex + 1);
      const step = after.filter((item, k) => item.type === "function_call_output" && after[k + 1]?.type !== "function_call_output").length;
      spec = spec.steps[Math.min(step, spec.steps.length - 1)];
    }
    if (spec.status) {
      res.writeHead(spec.status, { "content-type": "application/json", ...(spec.headers ?? {}) });
      res.end(JSON.stringify(spec.body ?? { error: { message: `fake error ${spec.status}` } }));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    const ev = (type, data = {}) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
    const id = `resp_${requests.length}`;
    const output = [];
    res.write(ev("response.created", { response: { id, object: "response", status: "in_progress", output: [] } }));
    const reasoning = (spec.chunks ?? []).filter((c) => c.reasoning !== undefined).map((c) => c.reasoning).join("");
    if (reasoning) {
      const index = output.length;
      const item = { id: `rs_${requests.length}`, type: "reasoning", summary: [{ type: "summary_text", text: reasoning }], encrypted_content: `enc-${requests.length}`, status: "completed" };
      res.write(ev("response.output_item.added", { output_index: index, item: { id: item.id, type: "reasoning", summary: [] } }));
      res.write(ev("response.reasoning_summary_text.delta", { item_id: item.id, output_index: index, summary_index: 0, delta: reasoning }));
      res.write(ev("response.output_item.done", { output_index: index, item }));
      output.push(item);
    }
    const contents = (spec.chunks ?? []).filter((c) => c.content !== undefined);
    if (contents.length) {
      const index = output.length;
      const itemId = `msg_${requests.length}`;
      res.write(ev("response.output_item.added", { output_index: index, item: { id: itemId, type: "message", role: "assistant", status: "in_progress", content: [] } }));
      let text = "";
      for (const c of contents) {
        if (res.destroyed) return;
        if (spec.delayMs) await sleep(spec.delayMs);
        text += c.content;
        res.write(ev("response.output_text.delta", { item_id: itemId, output_index: index, content_index: 0, delta: c.content }));
      }
      const item = { id: itemId, type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text, annotations: [] }] };
      res.write(ev("response.output_item.done", { output_index: index, item }));
      output.push(item);
    }
    for (const call of spec.toolCalls ?? []) {
      const index = output.length;
      const args = typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments ?? {});
      const item = { id: `fc_${requests.length}_${index}`, type: "function_call", call_id: call.id ?? `call_${index}`, name: call.name, arguments: args, status: "completed" };
      res.write(ev("response.output_item.added", { output_index: index, item: { ...item, arguments: "", status: "in_progress" } }));
      const half = Math.ceil(args.length / 2);
      for (const part of [args.slice(0, half), args.slice(half)]) {
        res.write(ev("response.function_call_arguments.delta", { item_id: item.id, output_index: index, delta: part }));
      }
      res.write(ev("response.output_item.done", { output_index: index, item }));
      output.push(item);
    }
    const usage = { input_tokens: 10, input_tokens_details: { cached_tokens: 6 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 };
    res.end(ev("response.completed", { response: { id, object: "response", status: "completed", output, usage } }));
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
    /** Bill Anthropic requests as a prompt cache would (`cacheUsage`); false turns it off. */
    billCache(on = true) {
      promptCache = on ? new Map() : null;
    },
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

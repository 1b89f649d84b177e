// Issue 42, items 5 and 6 through the real binary and the scripted model: images that tools
// return reach models that take images (and a note reaches those that do not), on each wire;
// web_fetch asks before reaching a loopback page, even in full mode, and returns Markdown.
import assert from "node:assert/strict";
import http from "node:http";
import { mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../support/agent.mjs";

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const SEEING = '[models."fake-model"]\nimages = true\n';
const MCP = join(dirname(fileURLToPath(import.meta.url)), "..", "support", "mcp-server.mjs");
const NOT_SHOWN = "[This model does not take images, so the image is not shown to it.]";

let fake;
let page;
before(async () => {
  fake = await startFakeModel();
  page = http.createServer((req, res) => {
    if (req.url === "/moved") {
      res.writeHead(302, { location: "/doc" }).end();
      return;
    }
    if (req.url === "/bin") {
      res.writeHead(200, { "content-type": "application/octet-stream" }).end(Buffer.from([0, 1, 2, 0, 255]));
      return;
    }
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end('<html><head><title>T</title><script>evil()</script></head><body><h1>Local docs</h1><p>Read <a href="https://example.com/x">this</a>.</p><ul><li>one</li></ul></body></html>');
  });
  await new Promise((r) => page.listen(0, "127.0.0.1", r));
});
after(async () => {
  await fake.close();
  page.close();
});

let marker = 0;
/** An agent with a session in a workspace holding `pic.png` (and a text file named like an image). */
async function setup({ config = "", extra = {}, mcpServers = [], mode = null } = {}) {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), "corvid-img-")));
  writeFileSync(join(cwd, "pic.png"), Buffer.from(PNG, "base64"));
  writeFileSync(join(cwd, "pic"), Buffer.from(PNG, "base64"));
  const agent = spawnAgent({ env: agentEnv({ fake, config, extra }) });
  await agent.request("i", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  const s = await agent.request("n", "session/new", { cwd, mcpServers }, 30000);
  const sessionId = s.result.sessionId;
  if (mode) await agent.request("m", "session/set_mode", { sessionId, modeId: mode });
  const asked = [];
  const seen = new Set();
  const timer = setInterval(() => {
    for (const f of agent.frames) {
      if (f.method === "session/request_permission" && !seen.has(f.id)) {
        seen.add(f.id);
        asked.push(f.params);
        agent.send({ jsonrpc: "2.0", id: f.id, result: { outcome: { outcome: "selected", optionId: "allow_once" } } });
      }
    }
  }, 5);
  timer.unref();
  let n = 0;
  return {
    agent,
    asked,
    /** One tool call, then an answer; returns the model's last request and the call's last card. */
    async call(name, args) {
      const m = `IMG-${++marker}`;
      fake.script(m, { steps: [{ toolCalls: [{ name, arguments: args, id: `call_${marker}` }] }, { chunks: [{ content: "seen" }] }] });
      const r = await agent.request(`p${++n}`, "session/prompt", { sessionId, prompt: [{ type: "text", text: m }] }, 30000);
      assert.equal(r.result?.stopReason, "end_turn", JSON.stringify(r));
      const card = agent.updates(sessionId).filter((u) => u.toolCallId).at(-1);
      return { request: fake.requests.at(-1), card, id: `call_${marker}` };
    },
    async done() {
      clearInterval(timer);
      await agent.stop();
      assert.deepEqual(agent.violations, [], "every frame is valid ACP");
    },
  };
}

test("read_file of a PNG: an image-capable model gets the image after the results; another reads a note", async () => {
  const seeing = await setup({ config: SEEING });
  const { request, card, id } = await seeing.call("read_file", { path: "pic" });
  const messages = request.body.messages;
  const tool = messages.findLast((m) => m.role === "tool");
  assert.match(tool.content, /^pic is an image \(image\/png, 70 bytes\)\.$/);
  const next = messages[messages.indexOf(tool) + 1];
  assert.equal(next.role, "user");
  assert.match(next.content[0].text, new RegExp(`Images returned by tool call \`${id}\``));
  assert.deepEqual(next.content[1], { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } });
  assert.equal(card.status, "completed");
  assert.deepEqual(card.content[1], { type: "content", content: { type: "image", data: PNG, mimeType: "image/png" } });
  // The next turn's request still carries it (the history keeps the image by its stored path).
  const again = await seeing.call("list_directory", { path: "." });
  assert.ok(JSON.stringify(again.request.body.messages).includes(`data:image/png;base64,${PNG}`));
  await seeing.done();

  const blind = await setup();
  const plain = await blind.call("read_file", { path: "pic.png" });
  const result = plain.request.body.messages.findLast((m) => m.role === "tool").content;
  assert.equal(result, `pic.png is an image (image/png, 70 bytes).\n${NOT_SHOWN}`);
  assert.ok(!JSON.stringify(plain.request.body).includes("image_url"), "no image for a model that takes none");
  await blind.done();
});

test("Anthropic and the Responses API carry a read image inside the tool result", async () => {
  const claude = await setup({ extra: { CORVID_PROVIDER: "anthropic" }, config: SEEING });
  const { request } = await claude.call("read_file", { path: "pic.png" });
  const result = request.body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).findLast((b) => b.type === "tool_result");
  assert.equal(result.content[0].type, "text");
  assert.deepEqual(result.content[1].source, { type: "base64", media_type: "image/png", data: PNG });
  await claude.done();

  const responses = await setup({ extra: { CORVID_PROVIDER: "openai-responses" }, config: SEEING });
  const r = await responses.call("read_file", { path: "pic.png" });
  const output = r.request.body.input.findLast((i) => i.type === "function_call_output").output;
  assert.equal(output[0].type, "input_text");
  assert.deepEqual(output[1], { type: "input_image", image_url: `data:image/png;base64,${PNG}` });
  await responses.done();
});

test("an MCP tool's image reaches an image-capable model as an image", async () => {
  const t = await setup({ config: SEEING, mcpServers: [{ name: "alpha", command: process.execPath, args: [MCP, "alpha"], env: [] }] });
  const { request } = await t.call("mcp__alpha__picture", {});
  const tool = request.body.messages.findLast((m) => m.role === "tool");
  assert.match(tool.content, /^here it is\n\[IMAGE: .*\.png \(image\/png, 70 bytes\)\]$/);
  const next = request.body.messages[request.body.messages.indexOf(tool) + 1];
  assert.deepEqual(next.content[1], { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } });
  await t.done();
});

test("web_fetch of a loopback page asks even in full mode, follows a redirect and returns Markdown", async () => {
  const { port } = page.address();
  const t = await setup({ mode: "full" });
  const { request, card } = await t.call("web_fetch", { url: `http://127.0.0.1:${port}/moved` });
  assert.equal(t.asked.length, 1, "a local address asks in every mode");
  assert.equal(t.asked[0].toolCall.title, `Fetch http://127.0.0.1:${port}/moved`);
  assert.equal(t.asked[0].toolCall.kind, "fetch");
  const result = request.body.messages.findLast((m) => m.role === "tool").content;
  assert.match(result, new RegExp(`^http://127\\.0\\.0\\.1:${port}/doc \\(redirected from http://127\\.0\\.0\\.1:${port}/moved\\)\nHTTP 200 OK, text/html; charset=utf-8, shown as Markdown\n\n`));
  assert.ok(result.includes("# Local docs") && result.includes("[this](https://example.com/x)") && result.includes("*   one"), result);
  assert.ok(!result.includes("evil"), result);
  assert.equal(card.status, "completed");

  // `localhost` is a name that resolves to loopback: it asks too; binary bodies are refused.
  const bin = await t.call("web_fetch", { url: `http://localhost:${port}/bin` });
  assert.equal(t.asked.length, 2);
  assert.match(bin.request.body.messages.findLast((m) => m.role === "tool").content, /^error: .*application\/octet-stream, not text/);
  assert.equal(bin.card.status, "failed");
  await t.done();
});

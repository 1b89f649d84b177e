// Rich prompt content against the real binary: embedded text and blob resources, images,
// resource links, ZeroClaw's shapes, and the errors for bad blocks. Every frame is validated.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../support/agent.mjs";

let fake;
before(async () => (fake = await startFakeModel({ models: ["fake-model", "gpt-4o"] })));
after(async () => fake.close());

const b64 = (s) => Buffer.from(s).toString("base64");
const sha = (buf) => createHash("sha256").update(buf).digest("hex");
// A 1×1 PNG.
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");

async function start({ model = "fake-model" } = {}) {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "corvid-prompts-")));
  const root = join(base, "project");
  mkdirSync(root);
  writeFileSync(join(root, "notes.md"), "# Notes\nremember the milk\n");
  writeFileSync(join(base, "secret.txt"), "top secret\n");
  const env = agentEnv({ fake, model });
  const agent = spawnAgent({ env });
  const init = await agent.request("i", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  const sessionId = (await agent.request("n", "session/new", { cwd: root, mcpServers: [] })).result.sessionId;
  let n = 0;
  const prompt = (prompt) => agent.request(`p${++n}`, "session/prompt", { sessionId, prompt }, 10000);
  const sent = () => fake.requests.at(-1).body.messages.at(-1);
  const uploads = join(env.CORVID_DATA_DIR, "uploads");
  return { agent, init, root, base, sessionId, prompt, sent, uploads };
}

test("promptCapabilities are advertised honestly", async () => {
  const t = await start();
  assert.deepEqual(t.init.result.agentCapabilities.promptCapabilities, { image: true, audio: false, embeddedContext: true });
  await t.agent.stop();
});

test("embedded text and blob resources: context for the model; blobs stored once by hash", async () => {
  const t = await start();
  const pdf = "%PDF-1.4 a tiny document";
  const blocks = [
    { type: "text", text: "summarize these" },
    { type: "resource", resource: { uri: "file:///elsewhere/spec.md", text: "The spec says X.", mimeType: "text/markdown" } },
    { type: "resource", resource: { uri: "file:///elsewhere/My Report.pdf", blob: b64(pdf), mimeType: "application/pdf" } },
  ];
  const r = await t.prompt(blocks);
  assert.equal(r.result.stopReason, "end_turn");
  const file = join(t.uploads, `${sha(pdf)}.pdf`);
  assert.equal(readFileSync(file, "utf8"), pdf, "stored under its sha256, never the client's name");
  const content = t.sent().content;
  assert.match(content, /^summarize these/);
  assert.match(content, /<context uri="file:\/\/\/elsewhere\/spec.md">\nThe spec says X\.\n<\/context>/);
  assert.ok(content.includes(`[Document: ${file} (application/pdf, ${pdf.length} bytes, from file:///elsewhere/My Report.pdf)]`), content);
  await t.prompt(blocks); // the same blob again: still one file
  assert.deepEqual(readdirSync(t.uploads), [`${sha(pdf)}.pdf`]);
  // Loading the session replays the user's blocks exactly as the client sent them.
  const before = t.agent.frames.length;
  await t.agent.request("load", "session/load", { sessionId: t.sessionId, cwd: t.root, mcpServers: [] });
  const replayed = t.agent.frames
    .slice(before)
    .filter((f) => f.params?.update?.sessionUpdate === "user_message_chunk")
    .map((f) => f.params.update.content);
  assert.deepEqual(replayed, [...blocks, ...blocks]);
  await t.agent.stop();
  assert.deepEqual(t.agent.violations, []);
});

test("images reach models that take them; others get a marker", async () => {
  const vision = await start({ model: "gpt-4o" });
  await vision.prompt([{ type: "text", text: "what is this?" }, { type: "image", data: PNG.toString("base64"), mimeType: "image/png" }]);
  const parts = vision.sent().content;
  assert.ok(Array.isArray(parts), "content parts");
  assert.equal(parts[0].type, "text");
  assert.match(parts[0].text, /what is this\?\n\n\[IMAGE: .*\.png \(image\/png, \d+ bytes\)\]/);
  assert.deepEqual(parts[1], { type: "image_url", image_url: { url: `data:image/png;base64,${PNG.toString("base64")}` } });
  assert.ok(existsSync(join(vision.uploads, `${sha(PNG)}.png`)));
  // The image stays in the context of later requests.
  await vision.prompt([{ type: "text", text: "and now?" }]);
  const history = fake.requests.at(-1).body.messages.filter((m) => m.role === "user");
  assert.equal(history[0].content[1].type, "image_url");
  await vision.agent.stop();

  const plain = await start({ model: "fake-model" });
  await plain.prompt([{ type: "text", text: "what is this?" }, { type: "image", data: PNG.toString("base64"), mimeType: "image/png" }]);
  assert.equal(typeof plain.sent().content, "string");
  assert.match(plain.sent().content, /\[IMAGE: .*\.png \(image\/png/);
  await plain.agent.stop();
  assert.deepEqual([...vision.agent.violations, ...plain.agent.violations], []);
});

test("invalid base64, oversize blobs and audio are -32602 naming the block; nothing is written", async () => {
  const t = await start();
  const bad = await t.prompt([
    { type: "image", data: PNG.toString("base64"), mimeType: "image/png" },
    { type: "resource", resource: { uri: "file:///x.bin", blob: "not*base64!", mimeType: "application/octet-stream" } },
  ]);
  assert.equal(bad.error.code, -32602);
  assert.match(bad.error.message, /prompt\[1\]: invalid base64/);
  const big = await t.prompt([{ type: "text", text: "hi" }, { type: "resource", resource: { uri: "file:///big.bin", blob: Buffer.alloc(10 * 1024 * 1024 + 10).toString("base64") } }]);
  assert.equal(big.error.code, -32602);
  assert.match(big.error.message, /prompt\[1\]: content is \d+ bytes decoded; the limit is 10485760/);
  const audio = await t.prompt([{ type: "audio", data: b64("x"), mimeType: "audio/wav" }]);
  assert.equal(audio.error.code, -32602);
  assert.match(audio.error.message, /prompt\[0\]: audio/);
  assert.equal(existsSync(t.uploads), false, "nothing was written");
  // The session is fine afterwards.
  assert.equal((await t.prompt([{ type: "text", text: "still there?" }])).result.stopReason, "end_turn");
  await t.agent.stop();
  assert.deepEqual(t.agent.violations, []);
});

test("resource links: small workspace files are inlined; files outside are mentioned, not read", async () => {
  const t = await start();
  await t.prompt([
    { type: "text", text: "look" },
    { type: "resource_link", name: "notes.md", uri: `file://${join(t.root, "notes.md")}` },
    { type: "resource_link", name: "secret.txt", uri: `file://${join(t.base, "secret.txt")}` },
    { type: "resource_link", name: "docs", uri: "https://example.com/docs" },
  ]);
  const content = t.sent().content;
  assert.match(content, /remember the milk/);
  assert.doesNotMatch(content, /top secret/);
  assert.match(content, /\[secret\.txt\]\(file:\/\/.*secret\.txt\) \(outside the session's folders: not readable\)/);
  assert.match(content, /\[docs\]\(https:\/\/example\.com\/docs\)/);
  await t.agent.stop();
});

test("ZeroClaw shapes: a plain-string prompt and parts without a type", async () => {
  const t = await start();
  const r1 = await t.agent.request("z1", "session/prompt", { sessionId: t.sessionId, prompt: "plain string prompt" }, 10000);
  assert.equal(r1.result.stopReason, "end_turn");
  assert.equal(t.sent().content, "plain string prompt");
  const r2 = await t.agent.request("z2", "session/prompt", { session_id: t.sessionId, prompt: [{ text: "untyped part" }] }, 10000);
  assert.equal(r2.result.stopReason, "end_turn");
  assert.equal(t.sent().content, "untyped part");
  await t.agent.stop();
});

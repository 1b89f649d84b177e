// How one answer's tool calls run, seen from the editor: reads the model asks for together
// run at once (the editor gets every `fs/read_text_file` before it answers the first), and a
// call that failed twice with the same arguments is not run a third time (the editor is not
// asked again; the model reads why). Fetches run with the reads, but their permission
// questions come one at a time. Driven with raw lines; every frame is schema-validated.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../support/agent.mjs";

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

const say = (text) => ({ chunks: [{ content: text }] });
const read = (path) => ({ name: "read_file", arguments: JSON.stringify({ path }) });

function workspace() {
  const root = join(realpathSync(mkdtempSync(join(tmpdir(), "corvid-batches-"))), "project");
  mkdirSync(root, { recursive: true });
  writeFileSync(join(root, "a.txt"), "on disk a\n");
  writeFileSync(join(root, "b.txt"), "on disk b\n");
  writeFileSync(join(root, "c.txt"), "on disk c\n");
  return root;
}

/** An agent whose client reads files for it, and a session in `root`. */
async function setup(root) {
  const agent = spawnAgent({ env: agentEnv({ fake }) });
  const capabilities = { fs: { readTextFile: true, writeTextFile: false }, terminal: false };
  await agent.request("init", "initialize", { protocolVersion: 1, clientCapabilities: capabilities, clientInfo: { name: "batches-e2e", version: "1" } });
  const s = await agent.request("new", "session/new", { cwd: root, mcpServers: [] });
  return { agent, sessionId: s.result.sessionId };
}

const readRequests = (agent) => agent.frames.filter((f) => f.method === "fs/read_text_file" && "id" in f);
const toolResults = (body) => body.messages.filter((m) => m.role === "tool");

test("reads in one answer run at once: the editor has every read before it answers one", async () => {
  const root = workspace();
  const { agent, sessionId } = await setup(root);
  try {
    fake.script("READ-THREE", { steps: [{ toolCalls: [read("a.txt"), read("b.txt"), read("c.txt")] }, say("Read them.")] });
    agent.send({ jsonrpc: "2.0", id: "p", method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "READ-THREE" }] } });
    // One after another, the second request would wait for the first answer: none is given
    // until all three are here.
    await agent.waitFor(() => readRequests(agent).length === 3, 5000, "three fs/read_text_file requests, none answered yet");
    const asked = readRequests(agent);
    assert.deepEqual(asked.map((f) => f.params.path), ["a.txt", "b.txt", "c.txt"].map((n) => join(root, n)));
    // Answered out of order: the model still reads each result under its own call.
    for (const f of [...asked].reverse()) {
      agent.send({ jsonrpc: "2.0", id: f.id, result: { content: `editor buffer of ${f.params.path.slice(-5)}` } });
    }
    const answer = await agent.waitFor((f) => f.id === "p" && !("method" in f), 5000, "the prompt's answer");
    assert.equal(answer.result?.stopReason, "end_turn");
    const last = fake.requests.filter((r) => r.api === "openai").at(-1).body;
    const results = toolResults(last);
    assert.equal(results.length, 3);
    const calls = last.messages.findLast((m) => m.role === "assistant" && m.tool_calls?.length).tool_calls;
    for (const [i, name] of ["a.txt", "b.txt", "c.txt"].entries()) {
      assert.equal(results[i].tool_call_id, calls[i].id, "results in the calls' order");
      assert.match(results[i].content, new RegExp(`editor buffer of ${name.replace(".", "\\.")}`));
    }
    // Each card finished, each once.
    const done = agent.updates(sessionId).filter((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed");
    assert.equal(new Set(done.map((u) => u.toolCallId)).size, 3);
    assert.deepEqual(agent.violations, [], "every frame is valid ACP");
  } finally {
    await agent.stop();
  }
});

test("the same call failing twice is not run a third time; the model is told why", async () => {
  const root = workspace();
  const { agent, sessionId } = await setup(root);
  try {
    const same = read("a.txt");
    fake.script("READ-LOOP", { steps: [{ toolCalls: [same] }, { toolCalls: [same] }, { toolCalls: [same] }, say("Giving up.")] });
    agent.send({ jsonrpc: "2.0", id: "p", method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "READ-LOOP" }] } });
    // The editor fails every read it is asked for.
    let refusedSoFar = 0;
    const answered = new Set();
    const refuse = async () => {
      for (;;) {
        const pending = readRequests(agent).filter((f) => !answered.has(f.id));
        for (const f of pending) {
          answered.add(f.id);
          refusedSoFar++;
          agent.send({ jsonrpc: "2.0", id: f.id, error: { code: -32603, message: "the buffer is locked" } });
        }
        if (agent.frames.some((f) => f.id === "p" && !("method" in f))) return;
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    await Promise.race([refuse(), new Promise((_, j) => setTimeout(() => j(new Error("no answer to the prompt")), 8000))]);
    const answer = agent.frames.find((f) => f.id === "p" && !("method" in f));
    assert.equal(answer.result?.stopReason, "end_turn");
    assert.equal(refusedSoFar, 2, "the editor was asked twice, not a third time");
    const cards = agent.updates(sessionId).filter((u) => u.sessionUpdate === "tool_call");
    assert.equal(cards.length, 3, "the third call still has its card");
    const third = agent.updates(sessionId).filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === cards[2].toolCallId);
    assert.equal(third.at(-1).status, "failed");
    assert.match(third.at(-1).content[0].content.text, /Not run: this exact call .* failed twice/);
    const last = fake.requests.filter((r) => r.api === "openai").at(-1).body;
    const results = toolResults(last).map((m) => m.content);
    assert.equal(results.length, 3);
    assert.match(results[0], /the editor could not read it/);
    assert.match(results[1], /the editor could not read it/);
    assert.match(results[2], /^Not run: this exact call/);
    assert.deepEqual(agent.violations, [], "every frame is valid ACP");
  } finally {
    await agent.stop();
  }
});

test("two fetches in one answer: one permission question at a time, both pages read", async () => {
  const page = http.createServer((req, res) => res.writeHead(200, { "content-type": "text/plain" }).end(`page ${req.url}`));
  await new Promise((r) => page.listen(0, "127.0.0.1", r));
  const url = (path) => `http://127.0.0.1:${page.address().port}${path}`;
  const root = workspace();
  const { agent, sessionId } = await setup(root);
  try {
    const fetch = (path) => ({ name: "web_fetch", arguments: JSON.stringify({ url: url(path) }) });
    fake.script("FETCH-TWO", { steps: [{ toolCalls: [fetch("/one"), fetch("/two")] }, say("Fetched.")] });
    agent.send({ jsonrpc: "2.0", id: "p", method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "FETCH-TWO" }] } });
    const questions = () => agent.frames.filter((f) => f.method === "session/request_permission");
    const first = await agent.waitFor((f) => f.method === "session/request_permission", 5000, "the first question");
    // Both cards are up (the calls run at once), but the second question waits for the first.
    await agent.waitFor(() => agent.updates(sessionId).filter((u) => u.sessionUpdate === "tool_call").length === 2, 5000, "both cards");
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(questions().length, 1, "one question at a time");
    agent.send({ jsonrpc: "2.0", id: first.id, result: { outcome: { outcome: "selected", optionId: "allow_once" } } });
    const second = await agent.waitFor((f) => f.method === "session/request_permission" && f.id !== first.id, 5000, "the second question");
    assert.notEqual(second.params.toolCall.toolCallId, first.params.toolCall.toolCallId);
    agent.send({ jsonrpc: "2.0", id: second.id, result: { outcome: { outcome: "selected", optionId: "allow_once" } } });
    const answer = await agent.waitFor((f) => f.id === "p" && !("method" in f), 5000, "the prompt's answer");
    assert.equal(answer.result?.stopReason, "end_turn");
    const results = toolResults(fake.requests.filter((r) => r.api === "openai").at(-1).body).map((m) => m.content);
    assert.equal(results.length, 2);
    assert.match(results[0], /page \/one/);
    assert.match(results[1], /page \/two/);
    assert.deepEqual(agent.violations, [], "every frame is valid ACP");
  } finally {
    await agent.stop();
    page.close();
  }
});

// Stop must win while the turn waits: on the editor (a request it never answers) or on a long
// walk of the workspace. Each case starts a turn that blocks, checks that it really blocks,
// sends `session/cancel`, and wants the `session/prompt` answer `cancelled` within 1 s, the
// tool call ended (`failed`, saying it was cancelled) before it, no `session/update` after it, and, when an editor request was pending, that request withdrawn
// with `$/cancel_request`. Driven with raw lines; every frame is schema-validated.
//
// A broken agent answers after its own deadline (minutes) or never: each case waits a bounded
// FAIL_AFTER_MS for the answer and then stops the agent, so a failure costs seconds.
import assert from "node:assert/strict";
import { linkSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../support/agent.mjs";

/** The requirement: from sending `session/cancel` to the `cancelled` answer. */
const LIMIT_MS = 1000;
/** How long a case waits for any answer before it gives up on the agent. */
const FAIL_AFTER_MS = 3000;
/** How long the turn must stay blocked before the cancel (it really waits), and how long
 * nothing may follow the answer (and a `$/cancel_request` may still arrive). */
const HOLD_MS = 300;
const QUIET_MS = 300;

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const call = (name, args) => ({ toolCalls: [{ name, arguments: args }] });
const say = (text) => ({ chunks: [{ content: text }] });

function workspace() {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "corvid-cancel-")));
  const root = join(base, "project");
  mkdirSync(join(root, "src"), { recursive: true });
  writeFileSync(join(root, "src", "main.rs"), "fn main() {\n    old();\n}\n");
  return { base, root };
}

let nextMarker = 0;
/** An agent initialized with `capabilities`, a session in `root` in `mode` (default: ask). */
async function setup(root, { capabilities = {}, mode = null, ctx } = {}) {
  const agent = spawnAgent({ env: agentEnv({ fake }) });
  await agent.request("init", "initialize", { protocolVersion: 1, clientCapabilities: capabilities, clientInfo: { name: "cancel-e2e", version: "1" } });
  const s = await agent.request("new", "session/new", { cwd: root, mcpServers: [] });
  const sessionId = s.result.sessionId;
  if (mode) {
    const set = await agent.request("mode", "session/set_config_option", { sessionId, configId: "mode", value: mode });
    assert.equal(set.result?.configOptions?.find((o) => o.id === "mode")?.currentValue, mode, `mode set to ${mode}`);
  }
  return {
    agent,
    sessionId,
    /** Notes a figure in the test report. */
    note: (text) => ctx?.diagnostic(text),
    /** Scripts the model with `steps`, sends the prompt, returns its request id. */
    start(steps) {
      const marker = `CANCEL-${++nextMarker}`;
      fake.script(marker, { steps });
      const id = `prompt-${nextMarker}`;
      agent.send({ jsonrpc: "2.0", id, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: marker }] } });
      return id;
    },
    checkFrames: () => assert.deepEqual(agent.violations, [], "every frame is valid ACP"),
    stop: () => agent.stop(),
  };
}

const isAgentRequest = (f) => "method" in f && "id" in f;
const isResponseTo = (id) => (f) => f.id === id && !("method" in f);

/**
 * Checks the turn `promptId` is still blocked (no answer, the tool call `toolCallId` not
 * finished), then cancels it and checks the answer, its timing and the silence after it.
 * Returns the index in `agent.frames` of the answer (for further checks).
 */
async function cancelAndCheck(t, promptId, toolCallId, waitingOn) {
  const { agent, sessionId } = t;
  await sleep(HOLD_MS);
  assert.equal(agent.frames.find(isResponseTo(promptId)), undefined, `the turn is still waiting on ${waitingOn} before the cancel`);
  const finished = agent.updates(sessionId).find((u) => u.toolCallId === toolCallId && (u.status === "completed" || u.status === "failed"));
  assert.equal(finished, undefined, `the tool call is still running before the cancel`);

  const t0 = performance.now();
  agent.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId } });
  let response = null;
  try {
    response = await agent.waitFor(isResponseTo(promptId), FAIL_AFTER_MS, `the answer to ${promptId}`);
  } catch {}
  const elapsed = Math.round(performance.now() - t0);
  t.note(response ? `answered ${JSON.stringify(response.result ?? response.error)} ${elapsed} ms after session/cancel` : `no answer ${elapsed} ms after session/cancel`);
  assert.ok(response, `no session/prompt answer within ${FAIL_AFTER_MS} ms of session/cancel: the turn kept waiting on ${waitingOn}`);
  assert.equal(response.result?.stopReason, "cancelled", `answer after ${elapsed} ms: ${JSON.stringify(response)}`);
  assert.deepEqual(Object.keys(response.result).filter((k) => k !== "_meta"), ["stopReason"]);
  assert.ok(elapsed < LIMIT_MS, `cancelled after ${elapsed} ms (limit ${LIMIT_MS} ms) while waiting on ${waitingOn}`);

  const at = agent.frames.indexOf(response);
  await sleep(QUIET_MS);
  const late = agent.frames.slice(at + 1).filter((f) => f.method === "session/update" && f.params.sessionId === sessionId);
  assert.deepEqual(late.map((f) => f.params.update), [], "no session/update after the cancelled answer");
  // Every client's card must end: the call's last status, before the answer, is final.
  const statuses = agent.frames.slice(0, at).filter((f) => f.method === "session/update" && f.params.sessionId === sessionId && f.params.update.toolCallId === toolCallId && f.params.update.status);
  const last = statuses.at(-1)?.params.update;
  assert.equal(last?.status, "failed", `the cancelled call ends failed before the answer (${JSON.stringify(last)})`);
  assert.match(last.content?.[0]?.content?.text ?? "", /^Cancelled by the user/);
  return at;
}

/**
 * One editor-request case: starts the turn, waits for the agent's first request to the
 * client (it must be `method`), never answers it, cancels, and checks that the request was
 * withdrawn with `$/cancel_request`.
 */
async function neverAnswered(t, steps, method) {
  const { agent, sessionId } = t;
  const promptId = t.start(steps);
  const request = await agent.waitFor(isAgentRequest, 5000, `the agent's first request to the editor (${method})`);
  assert.equal(request.method, method, `the agent's first request to the editor: ${JSON.stringify(request).slice(0, 300)}`);
  assert.equal(request.params.sessionId, sessionId);
  const card = agent.updates(sessionId).find((u) => u.sessionUpdate === "tool_call");
  assert.ok(card, "the tool call was announced before the editor was asked");

  await cancelAndCheck(t, promptId, card.toolCallId, `${method} ${JSON.stringify(request.id)}`);

  const withdrawn = agent.frames.filter((f) => f.method === "$/cancel_request").map((f) => f.params.requestId);
  assert.ok(withdrawn.some((id) => JSON.stringify(id) === JSON.stringify(request.id)), `$/cancel_request for ${method} ${JSON.stringify(request.id)} (withdrawn: ${JSON.stringify(withdrawn)})`);
  return request;
}

test("cancel wins over an unanswered fs/read_text_file (read_file)", async (ctx) => {
  const { root } = workspace();
  const t = await setup(root, { ctx, capabilities: { fs: { readTextFile: true, writeTextFile: false } } });
  try {
    const req = await neverAnswered(t, [call("read_file", { path: "src/main.rs" }), say("never")], "fs/read_text_file");
    assert.equal(req.params.path, join(root, "src", "main.rs"));
    t.checkFrames();
  } finally {
    await t.stop();
  }
});

test("cancel wins over an unanswered fs/write_text_file (write_file, mode full)", async (ctx) => {
  const { root } = workspace();
  const t = await setup(root, { ctx, capabilities: { fs: { readTextFile: false, writeTextFile: true } }, mode: "full" });
  try {
    const req = await neverAnswered(t, [call("write_file", { path: "notes.md", content: "hello\n" }), say("never")], "fs/write_text_file");
    assert.equal(req.params.path, join(root, "notes.md"));
    t.checkFrames();
  } finally {
    await t.stop();
  }
});

test("cancel wins over the edit preview's unanswered fs/read_text_file (edit_file, mode ask)", async (ctx) => {
  const { root } = workspace();
  const t = await setup(root, { ctx, capabilities: { fs: { readTextFile: true, writeTextFile: true } } });
  try {
    const req = await neverAnswered(t, [call("edit_file", { path: "src/main.rs", old_text: "old()", new_text: "new()" }), say("never")], "fs/read_text_file");
    assert.equal(req.params.path, join(root, "src", "main.rs"));
    assert.ok(!t.agent.frames.some((f) => f.method === "session/request_permission"), "the permission question never came");
    t.checkFrames();
  } finally {
    await t.stop();
  }
});

test("cancel wins over an unanswered terminal/create (run_command, mode full)", async (ctx) => {
  const { root } = workspace();
  const t = await setup(root, { ctx, capabilities: { terminal: true }, mode: "full" });
  try {
    const req = await neverAnswered(t, [call("run_command", { command: "echo never" }), say("never")], "terminal/create");
    assert.equal(req.params.cwd, root);
    t.checkFrames();
  } finally {
    await t.stop();
  }
});

test("cancel wins over an unanswered session/request_permission (run_command, mode ask)", async (ctx) => {
  const { root } = workspace();
  const t = await setup(root, { ctx });
  try {
    const req = await neverAnswered(t, [call("run_command", { command: "echo never" }), say("never")], "session/request_permission");
    assert.equal(req.params.toolCall.toolCallId, t.agent.updates(t.sessionId).find((u) => u.sessionUpdate === "tool_call").toolCallId);
    t.checkFrames();
  } finally {
    await t.stop();
  }
});

test("cancel wins over an unanswered elicitation/create (ask_user)", async (ctx) => {
  const { root } = workspace();
  const t = await setup(root, { ctx, capabilities: { elicitation: { form: {} } } });
  try {
    const req = await neverAnswered(t, [call("ask_user", { question: "Which colour?", choices: ["red", "blue"] }), say("never")], "elicitation/create");
    assert.equal(req.params.mode, "form");
    t.checkFrames();
  } finally {
    await t.stop();
  }
});

// The walk: WALK_DIRS × WALK_FILES files (hard links to one of 4 MB, so the tree is cheap to
// make and remove and its text stays in the page cache) at the bottom of a chain of
// WALK_DEPTH directories, and a pattern that matches nothing. Uncancelled, this search reads
// 72 GB: 4.8 s on an idle 2-core machine (small files had become too quick to cancel once
// the search opened each in one call and searched several at once). The cancel comes HOLD_MS
// after the tool call goes in_progress.
const WALK_DEPTH = 60;
const WALK_DIRS = 90;
const WALK_FILES = 200;

function bigTree() {
  const { base, root } = workspace();
  const proto = join(base, "proto.txt");
  writeFileSync(proto, "let value = compute(alpha, beta, gamma); // nothing to see here\n".repeat(65536));
  const deep = join(root, "tree", ...Array.from({ length: WALK_DEPTH }, (_, i) => `level${i}`));
  for (let d = 0; d < WALK_DIRS; d++) {
    const dir = join(deep, `d${d}`);
    mkdirSync(dir, { recursive: true });
    for (let f = 0; f < WALK_FILES; f++) linkSync(proto, join(dir, `f${f}.txt`));
  }
  return { base, root };
}

test("cancel wins over a long search walk", async (ctx) => {
  const { base, root } = bigTree();
  const t = await setup(root, { ctx });
  try {
    const promptId = t.start([call("search", { pattern: "NEVER_[0-9]+_MATCHES" }), say("never")]);
    const running = await t.agent.waitFor((f) => f.params?.update?.sessionUpdate === "tool_call_update" && f.params.update.status === "in_progress", 5000, "the search in progress");
    assert.equal(t.agent.frames.find(isAgentRequest), undefined, "the search asks the editor nothing");
    await cancelAndCheck(t, promptId, running.params.update.toolCallId, "the search walk");
    t.checkFrames();
  } finally {
    await t.stop();
    rmSync(base, { recursive: true, force: true });
  }
});

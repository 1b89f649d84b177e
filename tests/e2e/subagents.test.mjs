// Subagents (`delegate`): a child session with its own context does a job and its answer is the
// tool result. With the `subagents` client capability the child is announced (`subagent_update`)
// before any of its traffic, the exchange is `session_message`s, its own updates flow under its
// id and the card references it; without it the parent's card shows the child's progress. Its
// permission questions name it; cancelling the parent ends it; a kill -9 mid-subagent loses
// nothing of either; several run at once (up to `[limits] max_subagents`, then they wait);
// children stay out of `session/list`. Frames are checked against the unstable schema (the
// stable one has no subagent types yet). Real binary, scripted fake model.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../support/agent.mjs";
import { ADDED_DEFS, unstableSchemaPath, unstableValidator } from "../support/schema.mjs";

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

let n = 0;
const text = (t) => [{ type: "text", text: t }];
const isUpdate = (f) => f.method === "session/update";

/** An initialized agent (with or without `subagents`) and a session in a folder holding notes.txt. */
async function start({ subagents = true, env = agentEnv({ fake }), mode = null } = {}) {
  const agent = spawnAgent({ env, unstable: true });
  const clientCapabilities = subagents ? { subagents: {} } : {};
  await agent.request("init", "initialize", { protocolVersion: 1, clientCapabilities });
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), "corvid-sub-")));
  writeFileSync(join(cwd, "notes.txt"), "the notes say hello\n");
  const { sessionId } = (await agent.request("new", "session/new", { cwd, mcpServers: [] })).result;
  if (mode) await agent.request("mode", "session/set_config_option", { sessionId, configId: "mode", value: mode });
  return {
    agent,
    env,
    cwd,
    sessionId,
    prompt(t) {
      const id = `p${++n}`;
      agent.send({ jsonrpc: "2.0", id, method: "session/prompt", params: { sessionId, prompt: text(t) } });
      return id;
    },
    response(id, ms = 15000) {
      return agent.waitFor((f) => f.id === id && !("method" in f), ms, `response ${id}`);
    },
    async done() {
      await agent.stop();
      assert.deepEqual(agent.violations, [], "every frame is valid ACP (unstable schema)");
      assert.doesNotMatch(agent.stderr, /panicked/);
    },
  };
}

/** Scripts a parent turn that delegates once per entry of `tasks` ({marker, description, mode}), then answers. */
function scriptParent(marker, tasks, answer = "Parent done.") {
  const toolCalls = tasks.map((t, i) => ({
    id: `call_${i}`,
    name: "delegate",
    arguments: { description: t.description ?? `Job ${t.marker}`, prompt: `${t.marker}: do the job`, ...(t.mode ? { mode: t.mode } : {}) },
  }));
  fake.script(marker, { steps: [{ toolCalls }, { chunks: [{ content: answer }] }] });
}

/** Scripts a child that reads notes.txt, then answers `answer`. */
function scriptReader(marker, answer, extra = {}) {
  fake.script(marker, { steps: [{ toolCalls: [{ name: "read_file", arguments: { path: "notes.txt" } }] }, { chunks: [{ content: answer }], ...extra }] });
}

function sql(db, query) {
  const py = "import sqlite3,sys,json; c=sqlite3.connect(sys.argv[1]); print(json.dumps(c.execute(sys.argv[2]).fetchall()))";
  return JSON.parse(execFileSync("python3", ["-c", py, db, query], { encoding: "utf8" }));
}

const toolResults = (body) => body.messages.filter((m) => m.role === "tool").map((m) => m.content);

test("the schema in use is the unstable one, with the subagent types", () => {
  assert.match(unstableSchemaPath, /schema\.unstable\.json$/);
  const original = JSON.parse(readFileSync(unstableSchemaPath, "utf8")).$defs;
  for (const d of ["SubagentUpdate", "SessionMessage", "SessionMessageChunk", "StateUpdate", "IdleStateUpdate", "SubagentCapabilities"]) assert.ok(original[d], d);
  // Only the `session` tool-call content is missing from npm-sdk-2.4.0's file (see schema.mjs).
  const used = unstableValidator().schema.$defs;
  assert.deepEqual(ADDED_DEFS, original.SessionReference ? [] : ["SessionReference"]);
  assert.ok(used.SessionReference);
});

test("with `subagents`: announced before its traffic, the exchange as session messages, its updates under its id, the answer as the result", async () => {
  const t = await start();
  const p = `PARENT-CAP-${++n}`;
  const c = `CHILD-CAP-${++n}`;
  scriptParent(p, [{ marker: c, description: "Read the notes" }]);
  scriptReader(c, "The notes say hello.");
  const before = fake.requests.length;
  const r = await t.response(t.prompt(p));
  assert.equal(r.result.stopReason, "end_turn", JSON.stringify(r));
  const frames = t.agent.frames;
  const responseAt = frames.indexOf(r);

  const announceAt = frames.findIndex((f) => isUpdate(f) && f.params.update.sessionUpdate === "subagent_update");
  assert.ok(announceAt > 0, "a subagent_update was sent");
  const announce = frames[announceAt].params;
  assert.equal(announce.sessionId, t.sessionId, "on the parent's stream");
  const child = announce.update.sessionId;
  assert.notEqual(child, t.sessionId);
  assert.equal(announce.update.title, "Read the notes");
  assert.equal(announce.update.description, "Read the notes");
  assert.deepEqual(announce.update.state, { state: "running" });
  assert.deepEqual(announce.update.capabilities, { cancel: {} }, "the client may cancel it");
  const firstChildFrame = frames.findIndex((f) => f.params?.sessionId === child);
  assert.ok(firstChildFrame > announceAt, "announced before any of its traffic");

  const parentUpdates = t.agent.updates(t.sessionId);
  const card = parentUpdates.find((u) => u.sessionUpdate === "tool_call" && u.title === "Subagent: Read the notes");
  assert.ok(card, "the parent's card");
  const cardUpdates = parentUpdates.filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === card.toolCallId);
  assert.ok(cardUpdates.some((u) => u.content?.some((x) => x.type === "session" && x.sessionId === child)), "the card references the child");
  const last = cardUpdates.at(-1);
  assert.equal(last.status, "completed");
  assert.match(JSON.stringify(last.content), /The notes say hello\./);

  const messages = parentUpdates.filter((u) => u.sessionUpdate === "session_message");
  assert.deepEqual(
    messages.map((m) => [m.senderSessionId, m.recipientSessionId]),
    [
      [t.sessionId, child],
      [child, t.sessionId],
    ],
    "the task out, the answer back",
  );
  const chunks = (id) => parentUpdates.filter((u) => u.sessionUpdate === "session_message_chunk" && u.messageId === id).map((u) => u.content.text).join("");
  assert.equal(chunks(messages[0].messageId), `${c}: do the job`);
  assert.equal(chunks(messages[1].messageId), "The notes say hello.");
  const states = parentUpdates.filter((u) => u.sessionUpdate === "subagent_update").map((u) => u.state);
  assert.deepEqual(states, [{ state: "running" }, { state: "idle", stopReason: "end_turn" }]);

  const childUpdates = t.agent.updates(child);
  const received = childUpdates.find((u) => u.sessionUpdate === "session_message");
  assert.equal(received.senderSessionId, t.sessionId, "the child's transcript receives the task from its parent");
  assert.equal(received.senderMessageId, messages[0].messageId);
  const read = childUpdates.find((u) => u.sessionUpdate === "tool_call");
  assert.equal(read.title, "Read notes.txt");
  assert.ok(read.toolCallId.startsWith(`${card.toolCallId}/`), "its ids are unique on the parent's stream too");
  assert.equal(childUpdates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join(""), "The notes say hello.");
  assert.ok(!childUpdates.some((u) => u.sessionUpdate === "user_message_chunk"));
  assert.ok(frames.slice(responseAt + 1).every((f) => !isUpdate(f)), "nothing after the response");

  // The model: the child had its own context (a subagent note, the task only); the parent read its answer.
  const childReq = fake.requests.slice(before).find((q) => q.body.messages.some((m) => m.role === "user" && m.content === `${c}: do the job`));
  assert.match(childReq.body.messages[0].content, /You are a subagent/);
  assert.ok(!JSON.stringify(childReq.body.messages).includes(p), "nothing of the parent's conversation");
  assert.ok(!childReq.body.tools.some((x) => x.function.name === "delegate"), "no nesting");
  const parentLast = fake.requests.slice(before).findLast((q) => JSON.stringify(q.body.messages).includes(p));
  assert.deepEqual(toolResults(parentLast.body), ["The notes say hello."]);

  // Children are not top-level sessions, and take no prompts from the client.
  const list = await t.agent.request("list", "session/list", {});
  assert.deepEqual(list.result.sessions.map((s) => s.sessionId), [t.sessionId]);
  const direct = await t.agent.request("direct", "session/prompt", { sessionId: child, prompt: text("hi") });
  assert.ok(direct.error, JSON.stringify(direct));
  const load = await t.agent.request("loadchild", "session/load", { sessionId: child, cwd: t.cwd, mcpServers: [] });
  assert.equal(load.error?.code, -32602, JSON.stringify(load));
  assert.match(load.error.message, /subagent of session/);
  // Nor is a child forked on its own (nothing is copied: the list is unchanged).
  const fork = await t.agent.request("forkchild", "session/fork", { sessionId: child, cwd: t.cwd, mcpServers: [] });
  assert.equal(fork.error?.code, -32602, JSON.stringify(fork));
  assert.match(fork.error.message, /fork its parent/);
  assert.deepEqual((await t.agent.request("list2", "session/list", {})).result.sessions.map((s) => s.sessionId), [t.sessionId]);
  const db = join(t.env.CORVID_DATA_DIR, "sessions.db");
  assert.deepEqual(sql(db, `SELECT parent_id, mode, title FROM sessions WHERE id = '${child}'`), [[t.sessionId, "read-only", "Read the notes"]]);
  await t.done();
});

test("a fork replays its parent's subagents; deleting the parent deletes them, and the fork still replays them", async () => {
  const t = await start();
  const p = `PARENT-FORK-${++n}`;
  const c = `CHILD-FORK-${++n}`;
  scriptParent(p, [{ marker: c, description: "Read the notes" }]);
  scriptReader(c, "The notes say hello.");
  assert.equal((await t.response(t.prompt(p))).result.stopReason, "end_turn");
  const child = t.agent.updates(t.sessionId).find((u) => u.sessionUpdate === "subagent_update").sessionId;
  const liveChild = t.agent.updates(child);
  const fork = (await t.agent.request("fork", "session/fork", { sessionId: t.sessionId, cwd: t.cwd, mcpServers: [] })).result.sessionId;
  assert.equal((await t.agent.request("st1", "session/status", { sessionId: child })).result?.status, "saved", "a finished child is in the store");
  assert.deepEqual((await t.agent.request("del", "session/delete", { sessionId: t.sessionId })).result, {});
  const gone = await t.agent.request("st2", "session/status", { sessionId: child });
  assert.equal(gone.error?.code, -32002, `the child went with its parent: ${JSON.stringify(gone)}`);
  await t.done();

  const b = spawnAgent({ env: t.env, unstable: true });
  await b.request("init", "initialize", { protocolVersion: 1, clientCapabilities: { subagents: {} } });
  const loaded = await b.request("load", "session/load", { sessionId: fork, cwd: t.cwd, mcpServers: [] });
  assert.ok(loaded.result, JSON.stringify(loaded));
  const loadedAt = b.frames.indexOf(loaded);
  const replayed = b.frames.slice(0, loadedAt).filter((f) => isUpdate(f) && f.params.sessionId === child).map((f) => f.params.update);
  assert.deepEqual(replayed, liveChild, "the fork's replay holds the child's stream as it was sent");
  assert.equal((await b.request("gone", "session/load", { sessionId: t.sessionId, cwd: t.cwd, mcpServers: [] })).error?.code, -32002);
  await b.stop();
  assert.deepEqual(b.violations, []);
});

test("without `subagents`: nothing of the child on the wire, the parent's card shows its steps and answer", async () => {
  const t = await start({ subagents: false });
  const p = `PARENT-PLAIN-${++n}`;
  const c = `CHILD-PLAIN-${++n}`;
  scriptParent(p, [{ marker: c, description: "Summarize notes" }]);
  scriptReader(c, "Summary: hello.");
  const r = await t.response(t.prompt(p));
  assert.equal(r.result.stopReason, "end_turn");
  const sessions = new Set(t.agent.frames.filter((f) => f.params?.sessionId).map((f) => f.params.sessionId));
  assert.deepEqual([...sessions], [t.sessionId], "only the parent's session on the wire");
  const kinds = new Set(t.agent.updates(t.sessionId).map((u) => u.sessionUpdate));
  for (const k of ["subagent_update", "session_message", "session_message_chunk"]) assert.ok(!kinds.has(k), k);
  const updates = t.agent.updates(t.sessionId);
  const card = updates.find((u) => u.sessionUpdate === "tool_call" && u.title === "Subagent: Summarize notes");
  const texts = updates
    .filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === card.toolCallId && u.content)
    .map((u) => u.content.map((x) => x.content?.text ?? `<${x.type}>`).join(""));
  assert.ok(texts.some((x) => /^○ Read notes\.txt$/m.test(x)), `a line when the child's call starts: ${JSON.stringify(texts)}`);
  assert.equal(texts.at(-1), "✓ Read notes.txt\n\nSummary: hello.");
  assert.ok(!JSON.stringify(updates).includes('"type":"session"'));
  // Stored with its parent all the same: its own ledger, its parent's id.
  const db = join(t.env.CORVID_DATA_DIR, "sessions.db");
  const [[child]] = sql(db, `SELECT id FROM sessions WHERE parent_id = '${t.sessionId}'`);
  const stored = sql(db, `SELECT payload FROM events WHERE session_id = '${child}' ORDER BY seq`).map(([p]) => JSON.parse(p).sessionUpdate);
  assert.ok(stored.includes("tool_call") && stored.includes("agent_message_chunk"), JSON.stringify(stored));
  assert.deepEqual(sql(db, `SELECT status, stop_reason FROM turns WHERE session_id = '${child}'`), [["finished", "end_turn"]]);
  await t.done();
});

for (const subagents of [true, false]) {
  test(`the child's permission question reaches the editor naming the subagent (subagents: ${subagents})`, async () => {
    const t = await start({ subagents });
    const p = `PARENT-ASK-${++n}`;
    const c = `CHILD-ASK-${++n}`;
    scriptParent(p, [{ marker: c, description: "Write the file", mode: "parent" }]);
    fake.script(c, { steps: [{ toolCalls: [{ name: "write_file", arguments: { path: "out.txt", content: "written by the child\n" } }] }, { chunks: [{ content: "Wrote out.txt." }] }] });
    const id = t.prompt(p);
    const ask = await t.agent.waitFor((f) => f.method === "session/request_permission", 10000, "the child's question");
    assert.match(ask.params.toolCall.title, /^Subagent “Write the file”: Write out\.txt/);
    const child = t.agent.frames.find((f) => isUpdate(f) && f.params.update.sessionUpdate === "subagent_update")?.params.update.sessionId;
    assert.equal(ask.params.sessionId, subagents ? child : t.sessionId, "asked in the child's session, or the parent's when the client knows no subagents");
    t.agent.send({ jsonrpc: "2.0", id: ask.id, result: { outcome: { outcome: "selected", optionId: "allow_once" } } });
    const r = await t.response(id);
    assert.equal(r.result.stopReason, "end_turn");
    assert.equal(readFileSync(join(t.cwd, "out.txt"), "utf8"), "written by the child\n");
    assert.deepEqual(toolResults(fake.requests.at(-1).body), ["Wrote out.txt."]);
    await t.done();
  });
}

test("a read-only subagent cannot write, whatever the parent's mode", async () => {
  const t = await start({ mode: "full" });
  const p = `PARENT-RO-${++n}`;
  const c = `CHILD-RO-${++n}`;
  scriptParent(p, [{ marker: c }]);
  fake.script(c, { steps: [{ toolCalls: [{ name: "write_file", arguments: { path: "nope.txt", content: "x" } }] }, { chunks: [{ content: "Could not write." }] }] });
  const r = await t.response(t.prompt(p));
  assert.equal(r.result.stopReason, "end_turn");
  assert.ok(!existsSync(join(t.cwd, "nope.txt")));
  assert.ok(!t.agent.frames.some((f) => f.method === "session/request_permission"), "refused by the mode, not asked");
  await t.done();
});

test("cancelling the parent cancels the child: one stopReason, nothing after it", async () => {
  const t = await start();
  const p = `PARENT-CANCEL-${++n}`;
  const c = `CHILD-CANCEL-${++n}`;
  scriptParent(p, [{ marker: c }]);
  fake.script(c, { chunks: Array.from({ length: 500 }, (_, i) => ({ content: `s${i} ` })), delayMs: 10 });
  const id = t.prompt(p);
  const chunk = await t.agent.waitFor((f) => isUpdate(f) && f.params.sessionId !== t.sessionId && f.params.update.sessionUpdate === "agent_message_chunk", 10000, "the child streaming");
  const child = chunk.params.sessionId;
  t.agent.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: t.sessionId } });
  const r = await t.response(id);
  assert.equal(r.result.stopReason, "cancelled");
  await new Promise((ok) => setTimeout(ok, 400));
  const at = t.agent.frames.indexOf(r);
  assert.deepEqual(t.agent.frames.slice(at + 1).filter((f) => f.params?.sessionId === t.sessionId || f.params?.sessionId === child), [], "nothing after the response");
  assert.equal(t.agent.frames.filter((f) => f.id === id).length, 1, "one response");
  const states = t.agent.updates(t.sessionId).filter((u) => u.sessionUpdate === "subagent_update").map((u) => u.state);
  assert.deepEqual(states.at(-1), { state: "idle", stopReason: "cancelled" });
  const db = join(t.env.CORVID_DATA_DIR, "sessions.db");
  assert.deepEqual(sql(db, `SELECT status, stop_reason FROM turns WHERE session_id = '${child}'`), [["finished", "cancelled"]]);
  // The parent takes the next prompt.
  const q = `AFTER-CANCEL-${++n}`;
  fake.script(q, { chunks: [{ content: "still here" }] });
  assert.equal((await t.response(t.prompt(q))).result.stopReason, "end_turn");
  await t.done();
});

test("session/cancel of the child alone ends it; the parent reads that and goes on", async () => {
  const t = await start();
  const p = `PARENT-CHILDCANCEL-${++n}`;
  const c = `CHILD-CHILDCANCEL-${++n}`;
  scriptParent(p, [{ marker: c }], "Parent carried on.");
  fake.script(c, { chunks: Array.from({ length: 500 }, (_, i) => ({ content: `k${i} ` })), delayMs: 10 });
  const id = t.prompt(p);
  const chunk = await t.agent.waitFor((f) => isUpdate(f) && f.params.sessionId !== t.sessionId && f.params.update.sessionUpdate === "agent_message_chunk", 10000, "the child streaming");
  const prompted = await t.agent.request("tochild", "session/prompt", { sessionId: chunk.params.sessionId, prompt: text("hi") });
  assert.equal(prompted.error?.code, -32602, JSON.stringify(prompted));
  assert.match(prompted.error.message, /is a subagent of session .*takes work only from its parent/);
  t.agent.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: chunk.params.sessionId } });
  const r = await t.response(id);
  assert.equal(r.result.stopReason, "end_turn");
  const [result] = toolResults(fake.requests.at(-1).body);
  assert.match(result, /^The user cancelled the subagent before it finished\. Its last message:\n\nk0 /);
  await t.done();
});

test("kill -9 mid-subagent, then session/load of the parent restores both, their turns closed as interrupted", async () => {
  const env = agentEnv({ fake });
  const t = await start({ env });
  const p = `PARENT-CRASH-${++n}`;
  const c = `CHILD-CRASH-${++n}`;
  scriptParent(p, [{ marker: c, description: "Long job" }]);
  fake.script(c, { chunks: Array.from({ length: 400 }, (_, i) => ({ content: `x${i} ` })), delayMs: 5 });
  t.prompt(p);
  const chunk = await t.agent.waitFor((f) => isUpdate(f) && f.params.update.content?.text === "x50 ", 10000, "the child half-way");
  const child = chunk.params.sessionId;
  t.agent.child.kill("SIGKILL");
  await t.agent.exited;
  assert.deepEqual(t.agent.violations, []);
  const linesOf = (agent, id) => agent.lines.filter((_, i) => isUpdate(agent.frames[i]) && agent.frames[i].params.sessionId === id);
  const liveParent = linesOf(t.agent, t.sessionId);
  const liveChild = linesOf(t.agent, child);
  assert.ok(liveChild.length > 50, `${liveChild.length} child updates received`);
  const db = join(env.CORVID_DATA_DIR, "sessions.db");
  assert.deepEqual(sql(db, "SELECT status FROM turns ORDER BY session_id = '" + child + "'"), [["running"], ["running"]], "both turns left running");

  const b = spawnAgent({ env, unstable: true });
  await b.request("init", "initialize", { protocolVersion: 1, clientCapabilities: { subagents: {} } });
  const loaded = await b.request("load", "session/load", { sessionId: t.sessionId, cwd: t.cwd, mcpServers: [] });
  assert.ok(loaded.result, JSON.stringify(loaded));
  // The replay is what comes before the response (today's slash commands follow it, not stored).
  const loadedAt = b.frames.indexOf(loaded);
  const replayOf = (id) => b.lines.slice(0, loadedAt).filter((_, i) => isUpdate(b.frames[i]) && b.frames[i].params.sessionId === id);
  const replayedParent = replayOf(t.sessionId).filter((l) => JSON.parse(l).params.update.sessionUpdate !== "user_message_chunk");
  const replayedChild = replayOf(child);
  assert.deepEqual(replayedParent.slice(0, liveParent.length), liveParent, "the parent's stream as sent, in order");
  assert.deepEqual(replayedChild.slice(0, liveChild.length), liveChild, "the child's stream as sent, in order");
  const order = b.frames.filter(isUpdate);
  assert.ok(
    order.findIndex((f) => f.params.sessionId === child) > order.findIndex((f) => f.params.update.sessionUpdate === "subagent_update"),
    "the child is announced before its replayed traffic",
  );
  const childNote = JSON.parse(replayedChild.at(-1)).params.update;
  assert.match(childNote.content.text, /interrupted/);
  const parentTail = replayedParent.slice(liveParent.length).map((l) => JSON.parse(l).params.update);
  assert.deepEqual(parentTail.find((u) => u.sessionUpdate === "subagent_update")?.state, { state: "idle", stopReason: "error" }, "the child's state closed");
  assert.ok(parentTail.some((u) => u.sessionUpdate === "tool_call_update" && u.status === "failed"), "the delegate call closed as failed");
  assert.match(parentTail.at(-1).content.text, /interrupted/);
  assert.deepEqual(sql(db, "SELECT status FROM turns"), [["interrupted"], ["interrupted"]]);
  // The child's partial answer is in its stored context too.
  const msgs = sql(db, `SELECT content FROM messages WHERE session_id = '${child}' ORDER BY seq`).map(([m]) => JSON.parse(m));
  assert.match(msgs.at(-1).content, /^x0 x1 .*interrupted/s);
  // The parent goes on.
  const q = `AFTER-SUBCRASH-${++n}`;
  fake.script(q, { chunks: [{ content: "ok" }] });
  assert.equal((await b.request("again", "session/prompt", { sessionId: t.sessionId, prompt: text(q) }, 10000)).result.stopReason, "end_turn");
  await b.stop();
  assert.deepEqual(b.violations, []);
});

test("two subagents run at once; over the limit a call waits for a free slot", async () => {
  for (const limit of [3, 1]) {
    const env = agentEnv({ fake, config: `[limits]\nmax_subagents = ${limit}\n` });
    const t = await start({ env });
    const p = `PARENT-TWO-${++n}`;
    const [x, y] = [`CHILD-X-${++n}`, `CHILD-Y-${++n}`];
    scriptParent(p, [{ marker: x, description: "Job X" }, { marker: y, description: "Job Y" }]);
    const slow = { chunks: Array.from({ length: 10 }, (_, i) => ({ content: `${i} ` })), delayMs: 20 };
    fake.script(x, { ...slow, chunks: [...slow.chunks, { content: "X done" }] });
    fake.script(y, { ...slow, chunks: [...slow.chunks, { content: "Y done" }] });
    const r = await t.response(t.prompt(p), 20000);
    assert.equal(r.result.stopReason, "end_turn");
    const updates = t.agent.frames.filter((f) => isUpdate(f) && f.params.sessionId === t.sessionId).map((f) => f.params.update);
    const states = updates.filter((u) => u.sessionUpdate === "subagent_update").map((u) => u.state.state);
    const results = toolResults(fake.requests.at(-1).body).map((r) => r.replace(/^[0-9 ]+/, ""));
    assert.deepEqual(results, ["X done", "Y done"], "each call gets its own child's answer, in call order");
    const waited = updates.some((u) => u.sessionUpdate === "tool_call_update" && JSON.stringify(u.content ?? "").includes("Waiting for a free slot"));
    if (limit === 3) {
      assert.deepEqual(states.slice(0, 2), ["running", "running"], "both started before either finished");
      assert.ok(!waited);
    } else {
      assert.deepEqual(states, ["running", "idle", "running", "idle"], "one at a time");
      assert.ok(waited, "the second card says it waits");
    }
    await t.done();
  }
});

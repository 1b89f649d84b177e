// Sessions survive the process: the SQLite store, exact replay, resume, list, delete, crashes.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { setTimeout as delay } from "node:timers/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../support/agent.mjs";

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

const INIT = { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "persist", version: "1" } };

/** Starts an agent on `env` and initializes it. */
async function start(env) {
  const agent = spawnAgent({ env });
  const init = await agent.request("init", "initialize", INIT);
  return { agent, init: init.result };
}

async function finish(agent) {
  await agent.stop();
  assert.deepEqual(agent.violations, [], "every frame is valid ACP");
}

const text = (t) => [{ type: "text", text: t }];
const isUpdate = (id) => (f) => f.method === "session/update" && f.params.sessionId === id;
const updateLines = (agent, id) => agent.lines.filter((_, i) => isUpdate(id)(agent.frames[i]));
/** The update lines of session `id` that `agent` received before the response to request `requestId`: a load's replay. */
const replayLines = (agent, id, requestId) => {
  const at = agent.frames.findIndex((f) => f.id === requestId && !("method" in f));
  assert.ok(at >= 0, `no response to request ${requestId}`);
  return agent.lines.slice(0, at).filter((_, i) => isUpdate(id)(agent.frames[i]));
};

/** SQLite answers a query on the store file (Python's sqlite3, as a second, independent reader). */
function sql(db, query) {
  return execFileSync("python3", ["-c", `import sqlite3,sys,json; c=sqlite3.connect(sys.argv[1]); print(json.dumps(c.execute(sys.argv[2]).fetchall()))`, db, query], {
    encoding: "utf8",
  });
}

test("golden: session/load in a new process replays exactly what the live turns sent, then continues", async () => {
  const env = agentEnv({ fake });
  const cwd = mkdtempSync(join(tmpdir(), "corvid-golden-"));
  fake.script("GOLDEN-1", { chunks: [{ reasoning: "Considering " }, { reasoning: "it." }, { content: "First " }, { content: "answer." }] });
  fake.script("GOLDEN-2", { chunks: [{ content: "Second answer." }] });

  const { agent: live, init } = await start(env);
  assert.equal(init.agentCapabilities.loadSession, true);
  assert.equal(init._meta.corvid.store.status, "open");
  const { result } = await live.request(1, "session/new", { cwd, mcpServers: [] });
  const sessionId = result.sessionId;
  assert.equal((await live.request(2, "session/prompt", { sessionId, prompt: text("GOLDEN-1 go") })).result.stopReason, "end_turn");
  assert.equal((await live.request(3, "session/prompt", { sessionId, prompt: text("GOLDEN-2 again") })).result.stopReason, "end_turn");
  const liveLines = updateLines(live, sessionId);
  const title = live.frames.find((f) => isUpdate(sessionId)(f) && f.params.update.sessionUpdate === "session_info_update");
  assert.equal(title.params.update.title, "GOLDEN-1 go");
  await finish(live);

  const { agent: again } = await start(env);
  const loaded = await again.request(1, "session/load", { sessionId, cwd, mcpServers: [] });
  assert.ok(loaded.result, JSON.stringify(loaded));
  assert.equal(loaded.result.configOptions.find((o) => o.id === "model").currentValue, "fake-model");
  const responseIndex = again.frames.findIndex((f) => f.id === 1);
  const replayed = again.lines.slice(0, responseIndex).filter((_, i) => isUpdate(sessionId)(again.frames[i]));
  // The replay precedes the response, today's slash commands (sent, not stored) in the place of
  // the list the session was sent when new, and nothing follows the response (issue 44: the
  // commands used to follow it, a duplicate; replay-ends.test.mjs waits for strays).
  assert.deepEqual(again.frames.slice(responseIndex + 1).filter(isUpdate(sessionId)), [], "nothing after the response");

  // The replay is the live stream byte for byte, plus the user's own prompts (which the client
  // rendered from its request while live) as user_message_chunks in their place.
  const userChunks = replayed.filter((l) => JSON.parse(l).params.update.sessionUpdate === "user_message_chunk");
  assert.deepEqual(replayed.filter((l) => !userChunks.includes(l)), liveLines);
  assert.deepEqual(
    userChunks.map((l) => JSON.parse(l).params.update.content.text),
    ["GOLDEN-1 go", "GOLDEN-2 again"],
  );
  const kinds = replayed.map((l) => JSON.parse(l).params.update.sessionUpdate);
  assert.deepEqual(kinds.slice(0, 5), [
    "available_commands_update",
    "user_message_chunk",
    "session_info_update",
    "agent_thought_chunk",
    "agent_thought_chunk",
  ]);

  // Load → prompt: the model receives the earlier conversation.
  await again.request(2, "session/prompt", { sessionId, prompt: text("third") });
  assert.deepEqual(
    fake.requests.at(-1).body.messages.filter((m) => m.role !== "system").map((m) => [m.role, m.content]),
    [
      ["user", "GOLDEN-1 go"],
      ["assistant", "First answer."],
      ["user", "GOLDEN-2 again"],
      ["assistant", "Second answer."],
      ["user", "third"],
    ],
  );
  await finish(again);

  // A second load replays the same again, with the third turn appended.
  // The commands sent with the first load were not stored: this replay is the first one plus
  // the third turn as its client saw it, nothing more.
  const notUser = (l) => JSON.parse(l).params.update.sessionUpdate !== "user_message_chunk";
  const turnThree = again.lines.slice(responseIndex + 1).filter((_, i) => isUpdate(sessionId)(again.frames[responseIndex + 1 + i]));
  const { agent: third } = await start(env);
  await third.request(1, "session/load", { sessionId, cwd, mcpServers: [] });
  const response3 = third.frames.findIndex((f) => f.id === 1);
  const replayed3 = third.lines.slice(0, response3).filter((_, i) => isUpdate(sessionId)(third.frames[i])).filter(notUser);
  assert.deepEqual(replayed3.slice(0, liveLines.length), liveLines);
  assert.deepEqual(replayed3, [...replayed.filter(notUser), ...turnThree]);
  await finish(third);
});

test("a large file's edit: the diff carries both whole texts, escapes and all, and replays byte for byte", async () => {
  const env = agentEnv({ fake });
  const cwd = mkdtempSync(join(tmpdir(), "corvid-bigedit-"));
  // Past the size where the texts are spliced into the serialized update (event/json_text.rs):
  // quotes, backslashes, tabs, a control byte and multibyte characters on every line.
  const old = Array.from({ length: 3000 }, (_, i) => `\tline ${i}: "quoted" back\\slash \u0001 é日本 🦀`).join("\n") + "\n";
  writeFileSync(join(cwd, "big.txt"), old);
  fake.script("BIG-EDIT", {
    steps: [{ toolCalls: [{ name: "edit_file", arguments: { path: "big.txt", old_text: 'line 1500: "quoted"', new_text: 'line 1500: "edited"' } }] }, { chunks: [{ content: "Edited." }] }],
  });
  const { agent: live } = await start(env);
  const { sessionId } = (await live.request(1, "session/new", { cwd, mcpServers: [] })).result;
  await live.request(2, "session/set_config_option", { sessionId, configId: "mode", value: "auto-edit" });
  assert.equal((await live.request(3, "session/prompt", { sessionId, prompt: text("BIG-EDIT go") })).result.stopReason, "end_turn");
  const expected = old.replace('line 1500: "quoted"', 'line 1500: "edited"');
  assert.equal(readFileSync(join(cwd, "big.txt"), "utf8"), expected);
  const done = live.frames.find((f) => isUpdate(sessionId)(f) && f.params.update.status === "completed");
  const diff = done.params.update.content.find((c) => c.type === "diff");
  assert.equal(diff.oldText, old);
  assert.equal(diff.newText, expected);
  const liveLines = updateLines(live, sessionId);
  await finish(live);

  // Stored packed (store/packed.rs): the new text keeps only what differs from the old one, and
  // what is stored is still JSON.
  const db = join(env.CORVID_DATA_DIR, "sessions.db");
  const doneLine = liveLines.find((l) => l.includes('"status":"completed"'));
  const rows = JSON.parse(sql(db, `SELECT length(CAST(payload AS BLOB)), json_valid(payload) FROM events WHERE session_id = '${sessionId}' AND repeats IS NOT NULL`));
  assert.equal(rows.length, 1, "the diff's update, and only it, is packed");
  const [[storedBytes, valid]] = rows;
  assert.equal(valid, 1);
  assert.ok(storedBytes < Buffer.byteLength(doneLine) * 0.55, `stored ${storedBytes} bytes of a ${Buffer.byteLength(doneLine)}-byte update`);

  const { agent: again } = await start(env);
  assert.ok((await again.request(1, "session/load", { sessionId, cwd, mcpServers: [] })).result);
  const replayed = replayLines(again, sessionId, 1).filter((l) => JSON.parse(l).params.update.sessionUpdate !== "user_message_chunk");
  assert.deepEqual(replayed, liveLines);
  // A fork copies the packed row as it is; its replay is the same updates.
  const fork = (await again.request(2, "session/fork", { sessionId, cwd, mcpServers: [] })).result.sessionId;
  assert.ok((await again.request(3, "session/load", { sessionId: fork, cwd, mcpServers: [] })).result);
  const forkDone = replayLines(again, fork, 3).find((l) => l.includes('"status":"completed"'));
  assert.equal(forkDone, doneLine.replace(JSON.stringify(sessionId), JSON.stringify(fork)));
  await finish(again);
});

test("end of input closes the store: the write-ahead log is checkpointed and removed", async () => {
  // A log left behind would be read back in full by the next start before `initialize` answers.
  const env = agentEnv({ fake });
  fake.script("CLEAN-EXIT", { chunks: [{ content: "stored" }] });
  const { agent } = await start(env);
  const sessionId = (await agent.request(1, "session/new", { cwd: tmpdir(), mcpServers: [] })).result.sessionId;
  await agent.request(2, "session/prompt", { sessionId, prompt: text("CLEAN-EXIT") });
  const wal = join(env.CORVID_DATA_DIR, "sessions.db-wal");
  assert.ok(existsSync(wal), "a running agent writes through the log");
  await finish(agent);
  assert.equal(agent.child.exitCode, 0);
  assert.equal(existsSync(wal), false, "no log is left behind");

  const { agent: again } = await start(env);
  const loaded = await again.request(1, "session/load", { sessionId, cwd: tmpdir(), mcpServers: [] });
  assert.ok(loaded.result, "what the log held is in the database");
  assert.ok(again.updates(sessionId).some((u) => u.content?.text === "stored"));
  await finish(again);
});

test("session/resume restores context without replaying anything", async () => {
  const env = agentEnv({ fake });
  fake.script("RESUME-1", { chunks: [{ content: "remembered" }] });
  const { agent: a } = await start(env);
  const sessionId = (await a.request(1, "session/new", { cwd: tmpdir(), mcpServers: [] })).result.sessionId;
  await a.request(2, "session/prompt", { sessionId, prompt: text("RESUME-1") });
  await finish(a);

  const { agent: b } = await start(env);
  const r = await b.request(1, "session/resume", { sessionId, cwd: tmpdir(), mcpServers: [] });
  assert.ok(r.result.configOptions);
  // Nothing is replayed; the slash commands come before the response (issue 44; they used to
  // follow it), so the client has them again.
  const commands = await b.waitFor((f) => f.params?.update?.sessionUpdate === "available_commands_update");
  assert.ok(b.frames.indexOf(commands) < b.frames.indexOf(r), "before the response");
  assert.ok(commands.params.update.availableCommands.some((c) => c.name === "compact"));
  assert.deepEqual(b.frames.filter((f) => f.method === "session/update").map((f) => f.params.update.sessionUpdate), ["available_commands_update"]);
  await b.request(2, "session/prompt", { sessionId, prompt: text("and now?") });
  assert.deepEqual(
    fake.requests.at(-1).body.messages.filter((m) => m.role !== "system").map((m) => m.content),
    ["RESUME-1", "remembered", "and now?"],
  );
  await finish(b);
});

test("kill -9 mid-stream: every update the client received is replayed, and the turn is closed", async () => {
  const env = agentEnv({ fake });
  fake.script("CRASH-ME", { chunks: Array.from({ length: 400 }, (_, i) => ({ content: `c${i} ` })), delayMs: 2 });
  const { agent: a } = await start(env);
  const sessionId = (await a.request(1, "session/new", { cwd: tmpdir(), mcpServers: [] })).result.sessionId;
  a.send({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: { sessionId, prompt: text("CRASH-ME") } });
  await a.waitFor((f) => isUpdate(sessionId)(f) && f.params.update.content?.text === "c100 ");
  a.child.kill("SIGKILL");
  await a.exited;
  const received = updateLines(a, sessionId);
  assert.ok(received.length > 100 && received.length < 400, `received ${received.length}`);
  assert.deepEqual(a.violations, []);

  const db = join(env.CORVID_DATA_DIR, "sessions.db");
  assert.deepEqual(JSON.parse(sql(db, "SELECT status FROM turns")), [["running"]], "the crash left the turn running");

  const { agent: b } = await start(env);
  await b.request(1, "session/load", { sessionId, cwd: tmpdir(), mcpServers: [] });
  const replayed = replayLines(b, sessionId, 1).filter((l) => JSON.parse(l).params.update.sessionUpdate !== "user_message_chunk");
  const missing = received.filter((l) => !replayed.includes(l));
  assert.deepEqual(missing, [], "no update the client had received is lost");
  assert.deepEqual(replayed.slice(0, received.length), received, "in the same order");
  const note = JSON.parse(replayed.at(-1)).params.update;
  assert.equal(note.sessionUpdate, "agent_message_chunk");
  assert.match(note.content.text, /interrupted/);
  assert.deepEqual(JSON.parse(sql(db, "SELECT status FROM turns")), [["interrupted"]]);
  assert.deepEqual(JSON.parse(sql(db, "PRAGMA integrity_check")), [["ok"]]);
  // The session goes on, and the model sees the partial answer marked as interrupted.
  fake.script("AFTER-CRASH", { chunks: [{ content: "fine" }] });
  assert.equal((await b.request(2, "session/prompt", { sessionId, prompt: text("AFTER-CRASH") })).result.stopReason, "end_turn");
  const ctx = fake.requests.at(-1).body.messages.filter((m) => m.role !== "system");
  assert.equal(ctx[1].role, "assistant");
  assert.match(ctx[1].content, /^c0 c1 c2 .*interrupted/s);
  await finish(b);

  // Loading again does not add a second note.
  const { agent: c } = await start(env);
  await c.request(1, "session/load", { sessionId, cwd: tmpdir(), mcpServers: [] });
  const notes = updateLines(c, sessionId).filter((l) => /interrupted: Corvid stopped/.test(l));
  assert.equal(notes.length, 1);
  await finish(c);
});

test("a cancel during a permission question and during a command ends each call, live and in the load's replay", async () => {
  const env = agentEnv({ fake });
  const cwd = mkdtempSync(join(tmpdir(), "corvid-cancel-end-"));
  const { agent: a } = await start(env);
  const sessionId = (await a.request(1, "session/new", { cwd, mcpServers: [] })).result.sessionId;
  const command = (c) => ({ steps: [{ toolCalls: [{ name: "run_command", arguments: JSON.stringify({ command: c }) }] }, { chunks: [{ content: "never" }] }] });
  const lastStatus = (updates, id) => updates.filter((u) => u.toolCallId === id && u.status).at(-1);
  const cards = [];
  // Ask mode: the question is never answered.
  fake.script("CANCEL-ASKING", command("echo never"));
  a.send({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: { sessionId, prompt: text("CANCEL-ASKING") } });
  const question = await a.waitFor((f) => f.method === "session/request_permission");
  cards.push([question.params.toolCall.toolCallId, /before it ran/]);
  a.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId } });
  assert.equal((await a.waitFor((f) => f.id === 2 && !("method" in f))).result.stopReason, "cancelled");
  // Full mode: the command runs until the cancel.
  await a.request(3, "session/set_config_option", { sessionId, configId: "mode", value: "full" });
  fake.script("CANCEL-RUNNING", command("echo begun; sleep 30"));
  a.send({ jsonrpc: "2.0", id: 4, method: "session/prompt", params: { sessionId, prompt: text("CANCEL-RUNNING") } });
  const running = await a.waitFor((f) => isUpdate(sessionId)(f) && f.params.update.status === "in_progress" && f.params.update.toolCallId !== cards[0][0]);
  cards.push([running.params.update.toolCallId, /the command was stopped/]);
  await delay(300);
  a.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId } });
  assert.equal((await a.waitFor((f) => f.id === 4 && !("method" in f))).result.stopReason, "cancelled");
  const live = a.updates(sessionId);
  for (const [id, said] of cards) {
    const last = lastStatus(live, id);
    assert.equal(last?.status, "failed", `live: ${id} ends failed`);
    assert.match(last.content[0].content.text, said);
  }
  await finish(a);

  const { agent: b } = await start(env);
  await b.request(1, "session/load", { sessionId, cwd, mcpServers: [] });
  const replayed = replayLines(b, sessionId, 1).map((l) => JSON.parse(l).params.update);
  for (const [id, said] of cards) {
    const last = lastStatus(replayed, id);
    assert.equal(last?.status, "failed", `replayed: ${id} ends failed`);
    assert.match(last.content[0].content.text, said);
  }
  await finish(b);
});

test("two processes write one database at once", async () => {
  const env = agentEnv({ fake });
  fake.script("PAR-", { chunks: Array.from({ length: 50 }, () => ({ content: "p" })), delayMs: 1 });
  // Both start on a new data directory at once: both must open the store (one used to be told
  // "database is locked" now and then, and ran without one).
  const agents = await Promise.all([start(env), start(env)]);
  for (const { init } of agents) assert.equal(init._meta.corvid.store.status, "open", JSON.stringify(init._meta.corvid.store));
  const ids = [];
  await Promise.all(
    agents.map(async ({ agent }, k) => {
      for (let i = 0; i < 5; i++) {
        const s = (await agent.request(`n${i}`, "session/new", { cwd: tmpdir(), mcpServers: [] })).result.sessionId;
        ids.push(s);
        const r = await agent.request(`p${i}`, "session/prompt", { sessionId: s, prompt: text(`PAR- ${k}/${i}`) });
        assert.equal(r.result.stopReason, "end_turn");
      }
    }),
  );
  await Promise.all(agents.map(({ agent }) => finish(agent)));
  const { agent: reader } = await start(env);
  for (const [i, sessionId] of ids.entries()) {
    const loaded = await reader.request(`l${i}`, "session/load", { sessionId, cwd: tmpdir(), mcpServers: [] });
    const chunks = reader.frames.filter((f) => isUpdate(sessionId)(f) && f.params.update.sessionUpdate === "agent_message_chunk");
    const why = () =>
      `session ${i}: load answered ${JSON.stringify(loaded.error ?? "ok")}; writers' warnings:\n` +
      agents.map(({ agent }) => agent.stderr.split("\n").filter((l) => /WARN|ERROR/.test(l)).join("\n")).join("\n--\n");
    assert.equal(chunks.length, 50, why());
  }
  const db = join(env.CORVID_DATA_DIR, "sessions.db");
  assert.deepEqual(JSON.parse(sql(db, "PRAGMA integrity_check")), [["ok"]]);
  await finish(reader);
});

test("session/list: 250 sessions in 3 cwds, exact cwd filter, stable cursor pagination", async () => {
  const env = agentEnv({ fake });
  const root = mkdtempSync(join(tmpdir(), "corvid-list-"));
  const cwds = ["a", "b", "c"].map((d) => join(root, d));
  cwds.forEach((d) => mkdirSync(d));
  const { agent } = await start(env);
  // The list holds sessions that received a prompt (an unused one is left out: see below).
  fake.script("LIST-ME", { chunks: [{ content: "k" }] });
  const prompted = async (key, cwd) => {
    const sessionId = (await agent.request(`n${key}`, "session/new", { cwd, mcpServers: [] })).result.sessionId;
    assert.equal((await agent.request(`p${key}`, "session/prompt", { sessionId, prompt: text("LIST-ME") })).result.stopReason, "end_turn");
    return sessionId;
  };
  const byCwd = new Map(cwds.map((c) => [c, []]));
  for (let i = 0; i < 250; i++) {
    const cwd = cwds[i % 3];
    byCwd.get(cwd).push(await prompted(i, cwd));
  }
  const unused = (await agent.request("unused", "session/new", { cwd: cwds[0], mcpServers: [] })).result.sessionId;
  async function listAll(cwd, addBetweenPages) {
    const seen = [];
    let cursor;
    let page = 0;
    do {
      const r = await agent.request(`list-${cwd}-${page++}`, "session/list", cursor ? { cwd, cursor } : { cwd });
      seen.push(...r.result.sessions);
      cursor = r.result.nextCursor;
      if (cursor && addBetweenPages) await prompted(`extra-${page}`, cwd);
    } while (cursor);
    return seen;
  }
  const listedA = await listAll(cwds[0], true);
  assert.equal(listedA.length, byCwd.get(cwds[0]).length, "sessions added meanwhile neither shift nor repeat pages");
  assert.equal(new Set(listedA.map((s) => s.sessionId)).size, listedA.length);
  assert.ok(!listedA.some((s) => s.sessionId === unused), "a session that never received a prompt is not listed");
  assert.ok(listedA.every((s) => s.cwd === cwds[0]));
  const times = listedA.map((s) => s.updatedAt);
  assert.deepEqual(times, [...times].sort().reverse(), "most recently updated first");
  assert.equal((await listAll(cwds[1], false)).length, byCwd.get(cwds[1]).length);
  const all = await listAll(undefined, false);
  assert.ok(all.length >= 250);
  const none = await agent.request("x", "session/list", { cwd: join(root, "nothing-here") });
  assert.deepEqual(none.result.sessions, []);
  const bad = await agent.request("y", "session/list", { cursor: "garbage!" });
  assert.equal(bad.error.code, -32602);
  assert.match(bad.error.message, /session\/list: cursor/);
  await finish(agent);
});

test("titles, close keeps the record, delete hides it, unknown ids", async () => {
  const env = agentEnv({ fake });
  const cwd = mkdtempSync(join(tmpdir(), "corvid-del-"));
  const { agent } = await start(env);
  const sessionId = (await agent.request(1, "session/new", { cwd, mcpServers: [] })).result.sessionId;
  await agent.request(2, "session/prompt", { sessionId, prompt: text("   \n  Refactor the parser module please  \nand more") });
  const listed = (await agent.request(3, "session/list", { cwd })).result.sessions;
  assert.equal(listed[0].title, "Refactor the parser module please");
  assert.deepEqual(await agent.request(4, "session/close", { sessionId }).then((r) => r.result), {});
  assert.equal((await agent.request(5, "session/list", { cwd })).result.sessions.length, 1, "close keeps the record");
  assert.equal((await agent.request(6, "session/prompt", { sessionId, prompt: text("x") })).error.code, -32002);
  assert.ok((await agent.request(7, "session/load", { sessionId, cwd, mcpServers: [] })).result, "a closed session loads");
  assert.deepEqual((await agent.request(8, "session/delete", { sessionId })).result, {});
  assert.equal((await agent.request(9, "session/list", { cwd })).result.sessions.length, 0);
  assert.deepEqual((await agent.request(10, "session/delete", { sessionId: "never-existed" })).result, {});
  const gone = await agent.request(11, "session/load", { sessionId, cwd, mcpServers: [] });
  assert.equal(gone.error.code, -32002);
  assert.deepEqual(gone.error.data, { sessionId });
  const unknown = await agent.request(12, "session/resume", { sessionId: "nope", cwd, mcpServers: [] });
  assert.equal(unknown.error.code, -32002);
  await finish(agent);
});

test("ZeroClaw compatibility: session_id alias and session/stop after the running turn", async () => {
  const { agent } = await start(agentEnv({ fake }));
  fake.script("STOP-AFTER", { chunks: Array.from({ length: 10 }, () => ({ content: "s" })), delayMs: 20 });
  const sessionId = (await agent.request(1, "session/new", { cwd: tmpdir(), mcpServers: [] })).result.sessionId;
  agent.send({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: { session_id: sessionId, prompt: text("STOP-AFTER") } });
  await agent.waitFor((f) => isUpdate(sessionId)(f) && f.params.update.sessionUpdate === "agent_message_chunk");
  agent.send({ jsonrpc: "2.0", id: 3, method: "session/stop", params: { session_id: sessionId } });
  const turn = await agent.waitFor((f) => f.id === 2);
  assert.equal(turn.result.stopReason, "end_turn", "the running turn finishes");
  await agent.waitFor((f) => f.id === 3);
  assert.equal((await agent.request(4, "session/prompt", { sessionId, prompt: text("x") })).error.code, -32002);
  await finish(agent);
});

test("a store file that promises to open lets initialize answer before the open ends; what needs the store waits for it", async () => {
  const env = agentEnv({ fake });
  const first = await start(env);
  assert.equal(first.init._meta.corvid.store.status, "open", "a new file: initialize waited for it to be made");
  await finish(first.agent);
  const second = await start(env);
  const kept = (await second.agent.request(1, "session/new", { cwd: tmpdir(), mcpServers: [] })).result.sessionId;
  const turn = await second.agent.request(2, "session/prompt", { sessionId: kept, prompt: text("keep me") });
  assert.equal(turn.result.stopReason, "end_turn");
  // Killed, as editors that drop their agent do: the turn's writes stay in SQLite's log.
  second.agent.child.kill("SIGKILL");
  await second.agent.exited;
  const db = join(env.CORVID_DATA_DIR, "sessions.db");
  assert.ok(statSync(`${db}-wal`).size > 0, "the log was left behind");

  // The file and its log carry this build's stamp. Another process holds the file (exclusive
  // locking mode), so Corvid's connection waits for it (the busy timeout) until it lets go.
  const hold = "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nc.execute('PRAGMA locking_mode = EXCLUSIVE')\nc.execute('SELECT count(*) FROM sessions').fetchall()\nprint('held', flush=True)\nsys.stdin.read()";
  const holder = spawn("python3", ["-c", hold, db], { stdio: ["pipe", "pipe", "inherit"] });
  let listing, agent;
  try {
    await once(holder.stdout, "data");
    let init;
    ({ agent, init } = await start(env));
    assert.equal(init.agentCapabilities.loadSession, true, "promised by the file's header");
    assert.ok(init.agentCapabilities.sessionCapabilities.list);
    assert.deepEqual(init._meta.corvid.store, { status: "opening", location: db });
    listing = agent.request(2, "session/list", {});
    assert.equal(await Promise.race([listing, delay(300, "waiting")]), "waiting", "session/list waits for the open");
  } finally {
    holder.stdin.end();
    await once(holder, "exit");
  }
  const list = await listing;
  assert.deepEqual(list.result.sessions.map((s) => s.sessionId), [kept]);
  await agent.waitForStderr(/session store open .*checked=false/);
  await finish(agent);
});

test("a corrupt database: Corvid keeps working in memory and says why", async () => {
  const env = agentEnv({ fake });
  mkdirSync(env.CORVID_DATA_DIR, { recursive: true });
  writeFileSync(join(env.CORVID_DATA_DIR, "sessions.db"), "this is not a database, it is a grocery list".repeat(100));
  const { agent, init } = await start(env);
  assert.equal(init.agentCapabilities.loadSession, false);
  // What works on live sessions without a store (nothing that lists, loads or copies).
  assert.deepEqual(init.agentCapabilities.sessionCapabilities, { close: {}, additionalDirectories: {}, systemPrompt: {}, title: {}, status: {} });
  assert.equal(init._meta.corvid.store.status, "unavailable");
  assert.match(init._meta.corvid.store.reason, /sessions\.db.*not a database.*kept in memory/s);
  const sessionId = (await agent.request(1, "session/new", { cwd: tmpdir(), mcpServers: [] })).result.sessionId;
  assert.equal((await agent.request(2, "session/prompt", { sessionId, prompt: text("still works?") })).result.stopReason, "end_turn");
  const list = await agent.request(3, "session/list", {});
  assert.equal(list.error.code, -32601);
  assert.match(list.error.message, /session store is unavailable/);
  await agent.waitForStderr(/session store unavailable/);
  await finish(agent);
});

// Rewind to an earlier prompt (issue 45, item 2) through the real binary, a scripted model and
// a real SQLite file: prompts named by the client (`_meta.corvid.messageId`), `session/fork`
// with `_meta.corvid.beforeMessage` cutting the history before one, the files the agent changed
// since (a subagent's included) named with their texts then and now, restored by the core on request with a file the
// user changed since left alone as a conflict, the model told, the original session untouched,
// and the fork loading in a new process as it was cut; on SQLite and on PostgreSQL (the fleet
// store; in CI a missing CORVID_TEST_PG_URL fails that run). Every frame is validated (unstable v1).
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../support/agent.mjs";
import { freshDatabase, skipWithoutPg } from "../support/pg.mjs";

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

const call = (name, args) => ({ toolCalls: [{ name, arguments: args }] });
const say = (t) => ({ chunks: [{ content: t }] });
const allowOnce = () => ({ outcome: { outcome: "selected", optionId: "allow_once" } });

let ids = 0;
async function start(env, args) {
  const agent = spawnAgent({ env, args, unstable: true });
  const init = await agent.request("init", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  const answered = new Set();
  const timer = setInterval(() => {
    for (const f of agent.frames) {
      if (f.method === "session/request_permission" && !answered.has(f.id)) {
        answered.add(f.id);
        agent.send({ jsonrpc: "2.0", id: f.id, result: allowOnce() });
      }
    }
  }, 5);
  timer.unref();
  const rq = (method, params, ms) => agent.request(`r${++ids}`, method, params, ms);
  const stop = async () => {
    clearInterval(timer);
    await agent.stop();
    assert.deepEqual(agent.violations, [], "every frame is valid ACP (unstable schema)");
  };
  return { agent, init: init.result, rq, stop };
}

/** A prompt named `messageId`, its model answer scripted as `steps`. */
async function prompt(rq, sessionId, marker, messageId, steps) {
  fake.script(marker, { steps });
  const meta = messageId ? { _meta: { corvid: { messageId } } } : {};
  return rq("session/prompt", { sessionId, prompt: [{ type: "text", text: marker }], ...meta }, 20000);
}

test("rewind: a fork cut before the second prompt, files set back with a conflict kept, the model told", () => rewind(["acp"]));
test("rewind on PostgreSQL: the same", { skip: skipWithoutPg }, () => rewind(["acp", "--store", freshDatabase("rewind")]));

async function rewind(args) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "corvid-rewind-")));
  const file = (name) => join(root, name);
  writeFileSync(file("a.txt"), "a0\n");
  writeFileSync(file("c.txt"), "c0\n");
  writeFileSync(file("d.txt"), "d0\n");
  const env = agentEnv({ fake });
  const { agent, init, rq, stop } = await start(env, args);
  assert.deepEqual(init._meta.corvid.rewind, { promptMessageId: true, beforeMessage: true, restoreFiles: true });
  const sessionId = (await rq("session/new", { cwd: root, mcpServers: [] })).result.sessionId;

  const bad = await rq("session/prompt", { sessionId, prompt: [{ type: "text", text: "x" }], _meta: { corvid: { messageId: "has space" } } });
  assert.equal(bad.error?.code, -32602, JSON.stringify(bad));
  assert.match(bad.error.message, /messageId/);

  const edit = (path, old_text, new_text) => call("edit_file", { path, old_text, new_text });
  // The subagent REW-TWO delegates to edits d.txt: its edit is rewound with the parent's.
  fake.script("REW-CHILD", { steps: [edit("d.txt", "d0", "d1"), say("Child done.")] });
  let r = await prompt(rq, sessionId, "REW-ONE", "m-one", [edit("a.txt", "a0", "a1"), say("One.")]);
  assert.equal(r.result?.stopReason, "end_turn", JSON.stringify(r));
  r = await prompt(rq, sessionId, "REW-TWO", "m-two", [
    edit("a.txt", "a1", "a2"),
    call("write_file", { path: "b.txt", content: "b new\n" }),
    edit("c.txt", "c0", "c2"),
    call("delegate", { description: "Edit d", prompt: "REW-CHILD: edit d.txt", mode: "parent" }),
    say("Two."),
  ]);
  assert.equal(r.result?.stopReason, "end_turn", JSON.stringify(r));
  r = await prompt(rq, sessionId, "REW-THREE", "m-three", [edit("a.txt", "a2", "a3"), say("Three.")]);
  assert.equal(r.result?.stopReason, "end_turn", JSON.stringify(r));
  assert.deepEqual([readFileSync(file("a.txt"), "utf8"), readFileSync(file("b.txt"), "utf8")], ["a3\n", "b new\n"]);
  // The user changes c.txt after the agent: a rewind must not take that back.
  writeFileSync(file("c.txt"), "c2 and the user's line\n");

  const unknown = await rq("session/fork", { sessionId, cwd: root, mcpServers: [], _meta: { corvid: { beforeMessage: "nope" } } });
  assert.equal(unknown.error?.code, -32602, JSON.stringify(unknown));
  assert.match(unknown.error.message, /no user prompt nope/);

  const forked = await rq("session/fork", {
    sessionId, cwd: root, mcpServers: [], _meta: { corvid: { beforeMessage: "m-two", restoreFiles: true } },
  });
  assert.ok(forked.result, JSON.stringify(forked));
  const fork = forked.result.sessionId;
  const rewind = forked.result._meta.corvid.rewind;
  assert.deepEqual(rewind.files, [
    { path: file("a.txt"), before: "a1\n", after: "a3\n" },
    { path: file("b.txt"), before: null, after: "b new\n" },
    { path: file("c.txt"), before: "c0\n", after: "c2\n" },
    { path: file("d.txt"), before: "d0\n", after: "d1\n" },
  ]);
  assert.deepEqual(rewind.restored, [file("a.txt"), file("b.txt"), file("d.txt")]);
  assert.deepEqual(rewind.conflicts, [file("c.txt")]);
  assert.equal(readFileSync(file("a.txt"), "utf8"), "a1\n");
  assert.equal(existsSync(file("b.txt")), false, "a file the agent created after the message is gone");
  assert.equal(readFileSync(file("c.txt"), "utf8"), "c2 and the user's line\n", "the user's edit stays");
  assert.equal(readFileSync(file("d.txt"), "utf8"), "d0\n", "the subagent's edit is rewound too");
  const titled = await agent.waitFor((f) => f.params?.sessionId === fork && f.params.update.sessionUpdate === "session_info_update");
  assert.equal(titled.params.update.title, "REW-ONE (rewound)");

  // The fork's model sees the first turn, the note, and the new prompt; nothing of turns 2 and 3.
  r = await prompt(rq, fork, "REW-AGAIN", "m-again", [say("Again.")]);
  assert.equal(r.result?.stopReason, "end_turn", JSON.stringify(r));
  const req = fake.requests.findLast((q) => JSON.stringify(q.body.messages.at(-1)).includes("REW-AGAIN"));
  const users = req.body.messages.filter((m) => m.role === "user").map((m) => m.content);
  assert.equal(users.length, 3, JSON.stringify(users));
  assert.equal(users[0], "REW-ONE");
  assert.match(users[1], /rewound the conversation to this point/);
  assert.match(users[1], /set back to how they were here: .*a\.txt, .*b\.txt, .*d\.txt\. These were changed since and left as they are: .*c\.txt/);
  assert.match(users[2], /^REW-AGAIN/);
  assert.ok(!JSON.stringify(req.body.messages).includes("REW-TWO"), "nothing of the rewound turns reaches the model");

  // The source goes on as it was: its model still sees all three turns.
  r = await prompt(rq, sessionId, "REW-SOURCE", null, [say("Source.")]);
  assert.equal(r.result?.stopReason, "end_turn", JSON.stringify(r));
  const src = fake.requests.findLast((q) => JSON.stringify(q.body.messages.at(-1)).includes("REW-SOURCE"));
  const srcUsers = src.body.messages.filter((m) => m.role === "user").map((m) => m.content);
  assert.deepEqual(srcUsers.slice(0, 3), ["REW-ONE", "REW-TWO", "REW-THREE"]);

  // A message sent into a rewound turn of the fork can no longer be found there.
  const gone = await rq("session/fork", { sessionId: fork, cwd: root, mcpServers: [], _meta: { corvid: { beforeMessage: "m-three" } } });
  assert.equal(gone.error?.code, -32602, JSON.stringify(gone));
  await stop();

  // A new process loads the fork: the first turn and the one after the rewind, nothing between.
  const b = await start(env, args);
  const loaded = await b.rq("session/load", { sessionId: fork, cwd: root, mcpServers: [] });
  assert.ok(loaded.result, JSON.stringify(loaded));
  const replay = b.agent.updates(fork);
  const typed = replay.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => [u.messageId, u.content.text]);
  assert.deepEqual(typed, [["m-one", "REW-ONE"], ["m-again", "REW-AGAIN"]]);
  const said = replay.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");
  assert.ok(said.includes("One.") && said.includes("Again.") && !said.includes("Two."), said);
  // And can rewind again, to its first prompt, without the core touching files.
  const again = await b.rq("session/fork", { sessionId: fork, cwd: root, mcpServers: [], _meta: { corvid: { beforeMessage: "m-one" } } });
  assert.deepEqual(again.result._meta.corvid.rewind, { files: [{ path: file("a.txt"), before: "a0\n", after: "a1\n" }] });
  assert.equal(readFileSync(file("a.txt"), "utf8"), "a1\n", "without restoreFiles the client restores");
  await b.stop();
}

// The agent does real work: tool calls on real files in temp dirs, scripted by the fake model,
// with permissions, modes and the workspace jail. Every frame is schema-validated.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../support/agent.mjs";

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

let nextMarker = 0;
/** A workspace with a few files, and a sibling directory outside it. */
function workspace() {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "corvid-ws-")));
  const root = join(base, "project");
  mkdirSync(join(root, "src"), { recursive: true });
  mkdirSync(join(base, "outside"));
  writeFileSync(join(root, "src", "main.rs"), "fn main() {\n    println!(\"hi\");\n}\n");
  writeFileSync(join(root, "src", "lib.rs"), "pub fn twice(x: i32) -> i32 { x * 2 }\npub fn twice_again(x: i32) -> i32 { x * 2 }\n");
  writeFileSync(join(root, ".gitignore"), "target/\n");
  mkdirSync(join(root, "target"));
  writeFileSync(join(root, "target", "junk.rs"), "fn junk() {}\n");
  writeFileSync(join(base, "outside", "secret.txt"), "top secret\n");
  return { base, root };
}

/** Starts an agent, a session in `root`, and returns helpers. `answer(request)` decides permissions. */
async function setup(root, { config = "", extra = {}, answer = () => ({ outcome: { outcome: "selected", optionId: "allow_once" } }) } = {}) {
  const agent = spawnAgent({ env: agentEnv({ fake, config, extra }) });
  await agent.request("init", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  const s = await agent.request("new", "session/new", { cwd: root, mcpServers: [] });
  const sessionId = s.result.sessionId;
  const asked = [];
  const answered = new Set();
  const timer = setInterval(() => {
    for (const f of agent.frames) {
      if (f.method === "session/request_permission" && !answered.has(f.id)) {
        answered.add(f.id);
        asked.push(f.params);
        const reply = answer(f.params);
        if (reply === "error") agent.send({ jsonrpc: "2.0", id: f.id, error: { code: -32601, message: "Method not found" } });
        else if (reply !== "ignore") agent.send({ jsonrpc: "2.0", id: f.id, result: reply });
      }
    }
  }, 5);
  timer.unref(); // a test that fails before done() must not keep its file running
  let n = 0;
  return {
    agent,
    sessionId,
    asked,
    /** Scripts the model (`steps`), prompts, and returns the prompt response. */
    async turn(steps, { wait = true } = {}) {
      const marker = `TOOLS-${++nextMarker}`;
      fake.script(marker, { steps });
      const id = `p${++n}`;
      agent.send({ jsonrpc: "2.0", id, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: marker }] } });
      return wait ? agent.waitFor((f) => f.id === id, 15000, `prompt ${marker}`) : id;
    },
    updates: () => agent.updates(sessionId),
    toolUpdates: (id) => agent.updates(sessionId).filter((u) => u.toolCallId === id),
    async done() {
      clearInterval(timer);
      await agent.stop();
      assert.deepEqual(agent.violations, [], "every frame is valid ACP");
    },
  };
}

const call = (name, args, id) => ({ toolCalls: [{ name, arguments: args, id }] });
const say = (text) => ({ chunks: [{ content: text }] });
/** What the model received as the result of its last tool call. */
const lastToolResult = () => fake.requests.at(-1).body.messages.filter((m) => m.role === "tool").at(-1)?.content;

test("read_file: announced with kind, title and location, then completed with the content", async () => {
  const { root } = workspace();
  const t = await setup(root);
  const r = await t.turn([call("read_file", { path: "src/main.rs" }), say("It prints hi.")]);
  assert.equal(r.result.stopReason, "end_turn");
  const [first, ...rest] = t.updates().filter((u) => u.toolCallId);
  assert.equal(first.sessionUpdate, "tool_call");
  assert.equal(first.status, "pending");
  assert.equal(first.kind, "read");
  assert.equal(first.title, "Read src/main.rs");
  assert.deepEqual(first.locations, [{ path: join(root, "src/main.rs"), line: 1 }]);
  assert.deepEqual(first.rawInput, { path: "src/main.rs" });
  assert.deepEqual(rest.map((u) => u.status), ["in_progress", "completed"]);
  assert.match(rest[1].content[0].content.text, /println!\("hi"\)/);
  assert.equal(t.asked.length, 0, "reads never ask");
  // After each model request: how full the context is (the fake reports 10 + 5 tokens).
  const usage = t.updates().filter((u) => u.sessionUpdate === "usage_update");
  assert.ok(usage.length >= 1);
  assert.deepEqual(usage.at(-1), { sessionUpdate: "usage_update", used: 15, size: 128000, _meta: { corvid: { sessionTokens: 30 } } });
  assert.match(lastToolResult(), /1\tfn main\(\) \{/);
  // The model saw the tools it may use.
  assert.deepEqual(
    fake.requests.at(-1).body.tools.map((x) => x.function.name),
    ["read_file", "list_directory", "glob", "search", "write_file", "edit_file", "run_command", "command_output", "kill_command", "deliver_file", "ask_user", "update_plan", "web_fetch", "delegate"],
  );
  await t.done();
});

test("large files are truncated with a note on how to read on", async () => {
  const { root } = workspace();
  writeFileSync(join(root, "big.txt"), Array.from({ length: 2500 }, (_, i) => `line ${i + 1}`).join("\n"));
  const t = await setup(root);
  await t.turn([call("read_file", { path: "big.txt" }), say("ok")]);
  assert.match(lastToolResult(), /500 more lines not shown: call read_file with offset=2001/);
  await t.turn([call("read_file", { path: "big.txt", offset: 2499, limit: 5 }), say("ok")]);
  assert.match(lastToolResult(), /2499\tline 2499\n\s+2500\tline 2500/);
  assert.equal(t.toolUpdates("t2-1")[0].title, "Read big.txt:2499-2503");
  await t.done();
});

test("list_directory, glob and search respect .gitignore", async () => {
  const { root } = workspace();
  const t = await setup(root);
  await t.turn([call("list_directory", { path: ".", recursive: true }), say("ok")]);
  assert.match(lastToolResult(), /src\/main\.rs/);
  assert.doesNotMatch(lastToolResult(), /junk/);
  await t.turn([call("glob", { pattern: "**/*.rs" }), say("ok")]);
  assert.deepEqual(lastToolResult().split("\n").sort(), ["src/lib.rs", "src/main.rs"]);
  await t.turn([call("search", { pattern: "fn \\w+\\(x" }), say("ok")]);
  assert.equal(lastToolResult(), "src/lib.rs:1: pub fn twice(x: i32) -> i32 { x * 2 }\nsrc/lib.rs:2: pub fn twice_again(x: i32) -> i32 { x * 2 }");
  const kinds = t.updates().filter((u) => u.sessionUpdate === "tool_call").map((u) => u.kind);
  assert.deepEqual(kinds, ["read", "search", "search"]);
  await t.done();
});

test("write_file asks, then creates the file with a diff whose oldText is null", async () => {
  const { root } = workspace();
  const t = await setup(root);
  const r = await t.turn([call("write_file", { path: "notes/todo.md", content: "- ship it\n" }), say("done")]);
  assert.equal(r.result.stopReason, "end_turn");
  assert.equal(readFileSync(join(root, "notes/todo.md"), "utf8"), "- ship it\n");
  assert.equal(t.asked.length, 1);
  const ask = t.asked[0];
  assert.deepEqual(ask.options.map((o) => o.kind), ["allow_once", "allow_always", "reject_once", "reject_always"]);
  assert.equal(ask.toolCall.toolCallId, "t1-1");
  assert.equal(ask.toolCall.kind, "edit");
  const done = t.toolUpdates("t1-1").at(-1);
  assert.equal(done.status, "completed");
  assert.deepEqual(done.content, [{ type: "diff", path: join(root, "notes/todo.md"), oldText: null, newText: "- ship it\n" }]);
  // The tool card was on screen before the question.
  const cardAt = t.agent.frames.findIndex((f) => f.params?.update?.toolCallId === "t1-1");
  const askAt = t.agent.frames.findIndex((f) => f.method === "session/request_permission");
  assert.ok(cardAt >= 0 && cardAt < askAt);
  await t.done();
});

test("edit_file replaces a unique match; an ambiguous match is an error that says why", async () => {
  const { root } = workspace();
  const t = await setup(root);
  await t.turn([call("edit_file", { path: "src/main.rs", old_text: "\"hi\"", new_text: "\"hello\"" }), say("ok")]);
  assert.match(readFileSync(join(root, "src/main.rs"), "utf8"), /println!\("hello"\)/);
  const diff = t.toolUpdates("t1-1").at(-1).content[0];
  assert.equal(diff.type, "diff");
  assert.match(diff.oldText, /"hi"/);
  assert.match(diff.newText, /"hello"/);
  // The permission question showed the proposed diff before anything was written.
  assert.equal(t.asked.length, 1);
  const proposed = t.asked[0].toolCall.content[0];
  assert.equal(proposed.type, "diff");
  assert.equal(proposed.path, join(root, "src/main.rs"));
  assert.match(proposed.oldText, /"hi"/);
  assert.match(proposed.newText, /"hello"/);
  await t.turn([call("edit_file", { path: "src/lib.rs", old_text: "x * 2", new_text: "x + x" }), say("ok")]);
  assert.match(lastToolResult(), /occurs 2 times in src\/lib\.rs: include more surrounding lines/);
  assert.equal(t.toolUpdates("t2-1").at(-1).status, "failed");
  await t.turn([call("edit_file", { path: "src/lib.rs", old_text: "nowhere", new_text: "x" }), say("ok")]);
  assert.match(lastToolResult(), /was not found/);
  assert.equal(t.asked.length, 1, "edits that cannot apply fail without asking");
  await t.done();
});

test("reject is not cancel: a rejected edit goes back to the model and the turn goes on", async () => {
  const { root } = workspace();
  const t = await setup(root, { answer: () => ({ outcome: { outcome: "selected", optionId: "reject_once" } }) });
  const r = await t.turn([call("write_file", { path: "x.txt", content: "x" }), say("Understood, I will not write it.")]);
  assert.equal(r.result.stopReason, "end_turn");
  assert.equal(existsSync(join(root, "x.txt")), false);
  assert.equal(t.toolUpdates("t1-1").at(-1).status, "failed");
  assert.match(lastToolResult(), /The user declined this tool call/);
  const text = t.updates().filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");
  assert.equal(text, "Understood, I will not write it.");
  await t.done();
});

test("a cancelled permission outcome ends the turn as cancelled", async () => {
  const { root } = workspace();
  const t = await setup(root, { answer: () => ({ outcome: { outcome: "cancelled" } }) });
  const r = await t.turn([call("write_file", { path: "x.txt", content: "x" }), say("never")]);
  assert.equal(r.result.stopReason, "cancelled");
  assert.equal(existsSync(join(root, "x.txt")), false);
  await t.done();
});

test("allow_always and reject_always become rules for that tool and path", async () => {
  const { root } = workspace();
  let answer = "allow_always";
  const t = await setup(root, { answer: () => ({ outcome: { outcome: "selected", optionId: answer } }) });
  await t.turn([call("write_file", { path: "a.txt", content: "1" }), say("ok")]);
  await t.turn([call("write_file", { path: "a.txt", content: "2" }), say("ok")]);
  assert.equal(t.asked.length, 1, "the second write to a.txt did not ask");
  assert.equal(readFileSync(join(root, "a.txt"), "utf8"), "2");
  await t.turn([call("write_file", { path: "b.txt", content: "1" }), say("ok")]);
  assert.equal(t.asked.length, 2, "another path asks again");
  answer = "reject_always";
  await t.turn([call("run_command", { command: "echo nope" }), say("ok")]);
  await t.turn([call("run_command", { command: "echo nope" }), say("ok")]);
  assert.equal(t.asked.length, 3);
  assert.match(lastToolResult(), /always rejects/);
  await t.done();
});

test("no answer before the deadline counts as reject; a client without permission support is told", async () => {
  const { root } = workspace();
  const t = await setup(root, { config: "[limits]\npermission_timeout_secs = 1\n", answer: () => "ignore" });
  const r = await t.turn([call("write_file", { path: "late.txt", content: "x" }), say("ok")]);
  assert.equal(r.result.stopReason, "end_turn");
  assert.match(lastToolResult(), /no answer to the permission request within 1 s/);
  assert.ok(t.agent.frames.some((f) => f.method === "$/cancel_request"), "the unanswered request was withdrawn");
  await t.done();

  const u = await setup(workspace().root, { answer: () => "error" });
  await u.turn([call("write_file", { path: "x.txt", content: "x" }), say("ok")]);
  assert.match(lastToolResult(), /cannot answer permission requests/);
  const text = u.updates().filter((x) => x.sessionUpdate === "agent_message_chunk").map((x) => x.content.text).join("");
  assert.match(text, /does not support permission requests/);
  await u.done();
});

test("modes: read-only refuses, full does not ask, and both APIs stay in sync", async () => {
  const { root } = workspace();
  const t = await setup(root);
  const newSession = t.agent.frames.find((f) => f.id === "new").result;
  assert.equal(newSession.modes.currentModeId, "ask");
  assert.deepEqual(newSession.configOptions.find((o) => o.id === "mode").options.map((o) => o.value), ["read-only", "ask", "auto-edit", "full"]);
  const set = await t.agent.request("m1", "session/set_config_option", { sessionId: t.sessionId, configId: "mode", value: "read-only" });
  assert.equal(set.result.configOptions.find((o) => o.id === "mode").currentValue, "read-only");
  assert.ok(t.updates().some((u) => u.sessionUpdate === "current_mode_update" && u.currentModeId === "read-only"));
  await t.turn([call("write_file", { path: "ro.txt", content: "x" }), say("ok")]);
  assert.equal(existsSync(join(root, "ro.txt")), false);
  assert.match(lastToolResult(), /read-only mode/);
  assert.equal(t.asked.length, 0);
  await t.agent.request("m2", "session/set_mode", { sessionId: t.sessionId, modeId: "full" });
  const synced = t.updates().filter((u) => u.sessionUpdate === "config_option_update").at(-1);
  assert.equal(synced.configOptions.find((o) => o.id === "mode").currentValue, "full");
  await t.turn([call("run_command", { command: "echo full-access" }), say("ok")]);
  assert.equal(t.asked.length, 0);
  assert.match(lastToolResult(), /full-access/);
  const bad = await t.agent.request("m3", "session/set_mode", { sessionId: t.sessionId, modeId: "yolo" });
  assert.equal(bad.error.code, -32602);
  assert.match(bad.error.message, /session\/set_mode: modeId: unknown mode `yolo`/);
  await t.done();
});

test("the jail refuses .., absolute paths outside, and symlinks out", async () => {
  const { base, root } = workspace();
  symlinkSync(join(base, "outside"), join(root, "escape"));
  const t = await setup(root, { config: "" });
  await t.agent.request("m", "session/set_config_option", { sessionId: t.sessionId, configId: "mode", value: "full" });
  for (const [i, args] of [
    ["read_file", { path: "../outside/secret.txt" }],
    ["read_file", { path: join(base, "outside", "secret.txt") }],
    ["read_file", { path: "escape/secret.txt" }],
    ["write_file", { path: "escape/planted.txt", content: "x" }],
    ["list_directory", { path: "/" }],
  ].entries()) {
    await t.turn([call(args[0], args[1]), say("ok")]);
    assert.match(lastToolResult(), /outside the session's folders/, JSON.stringify(args));
    assert.equal(t.toolUpdates(`t${i + 1}-1`).at(-1).status, "failed");
  }
  assert.equal(existsSync(join(base, "outside", "planted.txt")), false);
  await t.done();
});

test("run_command streams output, reports the exit code, and strips provider keys", async () => {
  const { root } = workspace();
  const t = await setup(root);
  await t.turn([call("run_command", { command: "echo one; sleep 0.3; echo two; echo key=$CORVID_API_KEY; exit 3" }), say("ok")]);
  const ups = t.toolUpdates("t1-1");
  assert.equal(ups[0].kind, "execute");
  assert.equal(ups[0].title, "Run `echo one; sleep 0.3; echo two; echo key=$CORVID_API_KEY; exit 3`");
  const streamed = ups.filter((u) => u.sessionUpdate === "tool_call_update" && u.status == null && u.content);
  assert.ok(streamed.length >= 1, "output arrived while the command ran");
  assert.equal(streamed[0].content[0].content.text.trim(), "one");
  const done = ups.at(-1);
  assert.equal(done.status, "failed");
  assert.equal(done.rawOutput.exitCode, 3);
  assert.match(lastToolResult(), /one\ntwo\nkey=\n\[exit code 3\]/);
  await t.done();
});

test("cancel during a long command kills it and its children", async () => {
  const { root } = workspace();
  const t = await setup(root, { config: "" });
  await t.agent.request("m", "session/set_config_option", { sessionId: t.sessionId, configId: "mode", value: "full" });
  const id = await t.turn([call("run_command", { command: "sh -c 'echo $$ > child.pid; sleep 60'; sleep 60" }), say("never")], { wait: false });
  await t.agent.waitFor((f) => f.params?.update?.status === "in_progress", 5000);
  while (!existsSync(join(root, "child.pid"))) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, 50));
  const pid = Number(readFileSync(join(root, "child.pid"), "utf8"));
  assert.ok(existsSync(`/proc/${pid}`));
  t.agent.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: t.sessionId } });
  const r = await t.agent.waitFor((f) => f.id === id, 5000);
  assert.equal(r.result.stopReason, "cancelled");
  await new Promise((r) => setTimeout(r, 200));
  const state = existsSync(`/proc/${pid}`) ? readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1][0] : "gone";
  assert.ok(state === "gone" || state === "Z", `the child process is ${state}`);
  await t.done();
});

test("update_plan sends the full plan", async () => {
  const { root } = workspace();
  const t = await setup(root);
  const entries = [
    { content: "Read the code", priority: "high", status: "completed" },
    { content: "Fix the bug", status: "in_progress" },
  ];
  await t.turn([call("update_plan", { entries }), say("ok")]);
  const plan = t.updates().find((u) => u.sessionUpdate === "plan");
  assert.deepEqual(plan.entries, [
    { content: "Read the code", priority: "high", status: "completed" },
    { content: "Fix the bug", priority: "medium", status: "in_progress" },
  ]);
  assert.equal(t.toolUpdates("t1-1")[0].kind, "think");
  await t.done();
});

test("max_turn_requests ends a turn whose model never stops calling tools", async () => {
  const { root } = workspace();
  const t = await setup(root, { config: "[limits]\nmax_turn_requests = 3\n" });
  const r = await t.turn([call("glob", { pattern: "*" })]);
  assert.equal(r.result.stopReason, "max_turn_requests");
  assert.equal(t.updates().filter((u) => u.sessionUpdate === "tool_call").length, 3);
  await t.done();
});

test("a turn with tool calls and a plan replays exactly on session/load", async () => {
  const { root } = workspace();
  const env = agentEnv({ fake });
  const live = spawnAgent({ env });
  await live.request("i", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  const sessionId = (await live.request("n", "session/new", { cwd: root, mcpServers: [] })).result.sessionId;
  await live.request("m", "session/set_config_option", { sessionId, configId: "mode", value: "full" });
  fake.script("REPLAY-TOOLS", {
    steps: [
      call("update_plan", { entries: [{ content: "Edit", status: "in_progress" }] }),
      call("edit_file", { path: "src/main.rs", old_text: "hi", new_text: "bye" }),
      say("Edited."),
    ],
  });
  await live.request("p", "session/prompt", { sessionId, prompt: [{ type: "text", text: "REPLAY-TOOLS" }] }, 15000);
  const liveLines = live.lines.filter((_, i) => live.frames[i].method === "session/update");
  await live.stop();
  const again = spawnAgent({ env });
  await again.request("i", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  await again.request("l", "session/load", { sessionId, cwd: root, mcpServers: [] });
  // The replay comes before the response (today's slash commands follow it, not stored).
  const loadedAt = again.frames.findIndex((f) => f.id === "l");
  const replayed = again.lines.slice(0, loadedAt).filter((l, i) => again.frames[i].method === "session/update" && !l.includes('"user_message_chunk"'));
  assert.deepEqual(replayed, liveLines);
  assert.ok(replayed.some((l) => l.includes('"type":"diff"')) && replayed.some((l) => l.includes('"sessionUpdate":"plan"')));
  await again.stop();
  assert.deepEqual([...live.violations, ...again.violations], []);
});

test("the system prompt carries AGENTS.md from the repository root down to the cwd", async () => {
  const { base, root } = workspace();
  mkdirSync(join(root, ".git"));
  mkdirSync(join(root, "app"));
  writeFileSync(join(base, "AGENTS.md"), "NOT-IN-REPO");
  writeFileSync(join(root, "AGENTS.md"), "Always run cargo test.");
  writeFileSync(join(root, "app", "AGENTS.md"), "The app uses tabs.");
  const t = await setup(join(root, "app"));
  await t.turn([say("ok")]);
  const system = fake.requests.at(-1).body.messages[0];
  assert.equal(system.role, "system");
  assert.match(system.content, /You are Corvid/);
  assert.match(system.content, /Working directory: .*\/project\/app/);
  assert.match(system.content, /Always run cargo test\.[\s\S]*The app uses tabs\./);
  assert.doesNotMatch(system.content, /NOT-IN-REPO/);
  await t.done();
});

test("slash commands: advertised after session/new; /review becomes an instruction; /compact shrinks the context", async () => {
  const { root } = workspace();
  const t = await setup(root);
  await t.agent.waitFor((f) => f.params?.update?.sessionUpdate === "available_commands_update");
  const responseAt = t.agent.frames.findIndex((f) => f.id === "new");
  const commandsAt = t.agent.frames.findIndex((f) => f.params?.update?.sessionUpdate === "available_commands_update");
  assert.ok(commandsAt > responseAt, "commands come after the session/new response");
  assert.deepEqual(t.agent.frames[commandsAt].params.update.availableCommands.map((c) => c.name), ["compact", "init", "review"]);

  for (const text of ["first question", "second question"]) {
    fake.script(text, { chunks: [{ content: `answer to ${text}` }] });
    await t.agent.request(text, "session/prompt", { sessionId: t.sessionId, prompt: [{ type: "text", text }] });
  }
  fake.script("Review the uncommitted changes", { chunks: [{ content: "Looks fine." }] });
  await t.agent.request("rev", "session/prompt", { sessionId: t.sessionId, prompt: [{ type: "text", text: "/review the parser" }] });
  assert.match(fake.requests.at(-1).body.messages.at(-1).content, /^Review the uncommitted changes: run `git status`.*Focus on: the parser$/s);

  fake.script("Summarize the conversation so far", { chunks: [{ content: "SUMMARY: two questions were answered." }] });
  const before = fake.requests.at(-1).body.messages.length;
  const r = await t.agent.request("cmp", "session/prompt", { sessionId: t.sessionId, prompt: [{ type: "text", text: "/compact" }] });
  assert.equal(r.result.stopReason, "end_turn");
  await t.agent.request("after", "session/prompt", { sessionId: t.sessionId, prompt: [{ type: "text", text: "third question" }] });
  const carried = fake.requests.at(-1).body.messages;
  assert.deepEqual(carried.map((m) => m.role), ["system", "user", "user"]);
  assert.match(carried[1].content, /SUMMARY: two questions were answered\./);
  assert.ok(carried.length < before, `${carried.length} < ${before}`);
  await t.done();
});

test("always answers are durable across processes, listable and revocable", async () => {
  const { root } = workspace();
  const env = agentEnv({ fake });
  const first = spawnAgent({ env });
  await first.request("i", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  const sessionId = (await first.request("n", "session/new", { cwd: root, mcpServers: [] })).result.sessionId;
  fake.script("DURABLE-1", { steps: [call("write_file", { path: "kept.txt", content: "1" }), say("ok")] });
  first.send({ jsonrpc: "2.0", id: "p", method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "DURABLE-1" }] } });
  const ask = await first.waitFor((f) => f.method === "session/request_permission");
  first.send({ jsonrpc: "2.0", id: ask.id, result: { outcome: { outcome: "selected", optionId: "allow_always" } } });
  await first.waitFor((f) => f.id === "p", 10000);
  await first.stop();

  const second = spawnAgent({ env });
  await second.request("i", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  await second.request("l", "session/load", { sessionId, cwd: root, mcpServers: [] });
  fake.script("DURABLE-2", { steps: [call("write_file", { path: "kept.txt", content: "2" }), say("ok")] });
  const r = await second.request("p2", "session/prompt", { sessionId, prompt: [{ type: "text", text: "DURABLE-2" }] }, 10000);
  assert.equal(r.result.stopReason, "end_turn");
  assert.equal(second.frames.filter((f) => f.method === "session/request_permission").length, 0, "the rule survived the restart");
  assert.equal(readFileSync(join(root, "kept.txt"), "utf8"), "2");

  const listed = await second.request("ls", "_corvid/permissions/list", { sessionId });
  assert.equal(listed.result.rules.length, 1);
  const rule = listed.result.rules[0];
  assert.equal(rule.tool, "write_file");
  assert.equal(rule.scope, join(root, "kept.txt"));
  assert.equal(rule.decision, "allow");
  assert.deepEqual((await second.request("rv", "_corvid/permissions/revoke", { sessionId, id: rule.id })).result, {});
  assert.equal((await second.request("ls2", "_corvid/permissions/list", { sessionId })).result.rules.length, 0);
  const again = await second.request("rv2", "_corvid/permissions/revoke", { sessionId, id: rule.id });
  assert.equal(again.error.code, -32602);

  fake.script("DURABLE-3", { steps: [call("write_file", { path: "kept.txt", content: "3" }), say("ok")] });
  second.send({ jsonrpc: "2.0", id: "p3", method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "DURABLE-3" }] } });
  const asked = await second.waitFor((f) => f.method === "session/request_permission", 5000, "a question after revoking");
  second.send({ jsonrpc: "2.0", id: asked.id, result: { outcome: { outcome: "selected", optionId: "reject_once" } } });
  await second.waitFor((f) => f.id === "p3", 10000);
  assert.equal(readFileSync(join(root, "kept.txt"), "utf8"), "2");
  await second.stop();
  assert.deepEqual([...first.violations, ...second.violations], []);
});

test("kill -9 during a tool call: on load the open tool call is marked failed, with a note", async () => {
  const { root } = workspace();
  const env = agentEnv({ fake, config: "" });
  const a = spawnAgent({ env });
  await a.request("i", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  const sessionId = (await a.request("n", "session/new", { cwd: root, mcpServers: [] })).result.sessionId;
  await a.request("m", "session/set_config_option", { sessionId, configId: "mode", value: "full" });
  fake.script("CRASH-IN-TOOL", { steps: [call("run_command", { command: "sleep 30" }), say("never")] });
  a.send({ jsonrpc: "2.0", id: "p", method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "CRASH-IN-TOOL" }] } });
  await a.waitFor((f) => f.params?.update?.status === "in_progress", 5000);
  a.child.kill("SIGKILL");
  await a.exited;

  const b = spawnAgent({ env });
  await b.request("i", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  await b.request("l", "session/load", { sessionId, cwd: root, mcpServers: [] });
  const replay = b.updates(sessionId);
  const last = replay.filter((u) => u.toolCallId === "t1-1").at(-1);
  assert.equal(last.sessionUpdate, "tool_call_update");
  assert.equal(last.status, "failed");
  // The note ends the replay (today's slash commands may follow the response).
  assert.match(replay.filter((u) => u.sessionUpdate !== "available_commands_update").at(-1).content.text, /interrupted/);
  await b.stop();
  assert.deepEqual([...a.violations, ...b.violations], []);
});

test("deliver_file embeds the file as a blob named by its sha256", async () => {
  const { root } = workspace();
  const bytes = Buffer.from([0, 1, 2, 250, 251, 252, 10, 13]);
  writeFileSync(join(root, "report.bin"), bytes);
  const t = await setup(root);
  await t.turn([call("deliver_file", { path: "report.bin" }), say("ok")]);
  const done = t.toolUpdates("t1-1").at(-1);
  assert.equal(done.status, "completed");
  const block = done.content[0].content;
  assert.equal(block.type, "resource");
  const sha = createHash("sha256").update(bytes).digest("hex");
  assert.equal(block.resource.uri, `attachment://deliver/${sha}.bin`);
  assert.deepEqual(Buffer.from(block.resource.blob, "base64"), bytes);
  assert.match(lastToolResult(), /Delivered report\.bin \(8 bytes\)/);
  await t.turn([call("deliver_file", { path: "../outside/secret.txt" }), say("ok")]);
  assert.match(lastToolResult(), /outside the session's folders/);
  await t.done();
});

test("usage_update carries the session's cost; token and cost budgets end the turn with max_tokens, across restarts", async () => {
  const { root } = workspace();
  // The fake model reports 10 input + 5 output tokens per request: 0.02 USD at these prices.
  const prices = "[provider]\ninput_price_per_mtok = 1000.0\noutput_price_per_mtok = 2000.0\n";
  const env = agentEnv({ fake, config: `${prices}[limits]\nmax_session_cost = 0.03\n` });
  const first = spawnAgent({ env });
  await first.request("i", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  const sessionId = (await first.request("n", "session/new", { cwd: root, mcpServers: [] })).result.sessionId;
  fake.script("BUDGET-1", { steps: [call("read_file", { path: "src/main.rs" }), say("ok")] });
  const r1 = await first.request("p1", "session/prompt", { sessionId, prompt: [{ type: "text", text: "BUDGET-1" }] }, 10000);
  assert.equal(r1.result.stopReason, "end_turn");
  const usage = first.updates(sessionId).filter((u) => u.sessionUpdate === "usage_update");
  assert.deepEqual(usage.map((u) => u.cost), [{ amount: 0.02, currency: "USD" }, { amount: 0.04, currency: "USD" }]);
  const requestsBefore = fake.requests.length;
  const r2 = await first.request("p2", "session/prompt", { sessionId, prompt: [{ type: "text", text: "more" }] }, 10000);
  assert.equal(r2.result.stopReason, "max_tokens");
  assert.equal(fake.requests.length, requestsBefore, "no model request past the budget");
  const said = first.updates(sessionId).filter((u) => u.sessionUpdate === "agent_message_chunk").at(-1).content.text;
  assert.match(said, /cost 0\.0400 USD, reaching its limit of 0\.03 USD \(`max_session_cost`/);
  await first.stop();
  assert.deepEqual(first.violations, []);

  // A new process restores the spending from the ledger: the budget still holds.
  const second = spawnAgent({ env });
  await second.request("i", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  await second.request("l", "session/resume", { sessionId, cwd: root, mcpServers: [] });
  const r3 = await second.request("p3", "session/prompt", { sessionId, prompt: [{ type: "text", text: "again" }] }, 10000);
  assert.equal(r3.result.stopReason, "max_tokens");
  assert.equal(fake.requests.length, requestsBefore);
  await second.stop();

  // A token budget counts every token of every request (15 per request here).
  const t = await setup(root, { config: "[limits]\nmax_session_tokens = 20\n" });
  assert.equal((await t.turn([call("read_file", { path: "src/main.rs" }), say("ok")])).result.stopReason, "end_turn");
  const r4 = await t.turn([say("never")]);
  assert.equal(r4.result.stopReason, "max_tokens");
  assert.match(t.updates().filter((u) => u.sessionUpdate === "agent_message_chunk").at(-1).content.text, /used 30 tokens, reaching its limit of 20 \(`max_session_tokens`/);
  await t.done();
});

test("CORVID_SHELL picks the shell commands run in, inside the sandbox as well", async () => {
  const { root } = workspace();
  const t = await setup(root, { extra: { CORVID_SHELL: "bash -c" } });
  // `$BASH_VERSION` is set by bash only; `sh` (dash here) leaves it empty.
  const r = await t.turn([call("run_command", { command: 'echo "shell:${BASH_VERSION%%.*}"' }), say("ok")]);
  assert.equal(r.result.stopReason, "end_turn");
  assert.match(lastToolResult(), /shell:[0-9]+/);
  await t.done();

  const u = await setup(workspace().root);
  await u.turn([call("run_command", { command: 'echo "shell:${BASH_VERSION%%.*}"' }), say("ok")]);
  assert.match(lastToolResult(), /shell:\s/, "without it, sh");
  await u.done();
});

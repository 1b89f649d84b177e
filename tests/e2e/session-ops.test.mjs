// The session operations and v1 additions of issue 18 (items 3 and 4), from the outside:
// session/fork, session/set_title, session/archive + unarchive with session/list, session/status,
// the client's systemPrompt, plan operations, and the turn's usage in the session/prompt
// response. Real binary, scripted fake model, a real SQLite file; every frame is validated
// against the unstable v1 schema (where these types live).
import assert from "node:assert/strict";
import { mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../support/agent.mjs";
import { check } from "../support/schema.mjs";

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

const text = (t) => [{ type: "text", text: t }];
const call = (name, args) => ({ toolCalls: [{ name, arguments: args }] });
const say = (t) => ({ chunks: [{ content: t }] });
/** The non-system messages of the model request that `marker` started, as [role, content]. */
const contextOf = (marker) => {
  const req = fake.requests.findLast((r) => r.api === "openai" && JSON.stringify(r.body.messages.at(-1)).includes(marker));
  assert.ok(req, `a model request for ${marker}`);
  return req.body.messages.filter((m) => m.role !== "system").map((m) => [m.role, m.content]);
};
const systemOf = (marker) => {
  const req = fake.requests.findLast((r) => r.api === "openai" && JSON.stringify(r.body.messages.at(-1)).includes(marker));
  return req.body.messages[0].content;
};

let ids = 0;
/** An initialized agent on `env` (a fresh store unless given), validated against the unstable schema. */
async function start(env = agentEnv({ fake }), clientCapabilities = {}) {
  const agent = spawnAgent({ env, unstable: true });
  const init = await agent.request("init", "initialize", { protocolVersion: 1, clientCapabilities });
  const rq = (method, params, ms) => agent.request(`r${++ids}`, method, params, ms);
  return { agent, env, init: init.result, rq };
}

async function finish(agent) {
  await agent.stop();
  assert.deepEqual(agent.violations, [], "every frame is valid ACP (unstable schema)");
}

const newCwd = () => realpathSync(mkdtempSync(join(tmpdir(), "corvid-ops-")));

test("initialize advertises fork, archive, status, title and systemPrompt with a store", async () => {
  const { agent, init } = await start();
  const caps = init.agentCapabilities.sessionCapabilities;
  for (const k of ["fork", "archive", "status", "title", "systemPrompt", "list", "resume", "close", "delete"]) {
    assert.ok(caps[k], `sessionCapabilities.${k}: ${JSON.stringify(caps)}`);
  }
  assert.equal(caps.systemPrompt.mode, undefined, "append only: no override offered");
  await finish(agent);
});

test("fork: a new session with the history so far; both go on independently; the fork loads in a new process", async () => {
  fake.script("FORK-BASE", say("Base answer."));
  fake.script("FORK-ONE", say("One."));
  fake.script("FORK-TWO", say("Two."));
  const cwd = newCwd();
  const { agent, env, rq } = await start();
  const source = (await rq("session/new", { cwd, mcpServers: [] })).result.sessionId;
  assert.equal((await rq("session/prompt", { sessionId: source, prompt: text("FORK-BASE first") })).result.stopReason, "end_turn");

  const forked = await rq("session/fork", { sessionId: source, cwd, mcpServers: [] });
  const fork = forked.result.sessionId;
  assert.ok(fork && fork !== source, JSON.stringify(forked));
  assert.ok(forked.result.configOptions.some((o) => o.id === "model"));
  const titled = await agent.waitFor((f) => f.params?.sessionId === fork && f.params.update.sessionUpdate === "session_info_update");
  assert.equal(titled.params.update.title, "Fork of FORK-BASE first");

  assert.equal((await rq("session/prompt", { sessionId: fork, prompt: text("FORK-ONE in the fork") })).result.stopReason, "end_turn");
  assert.deepEqual(contextOf("FORK-ONE"), [
    ["user", "FORK-BASE first"],
    ["assistant", "Base answer."],
    ["user", "FORK-ONE in the fork"],
  ]);
  assert.equal((await rq("session/prompt", { sessionId: source, prompt: text("FORK-TWO in the source") })).result.stopReason, "end_turn");
  assert.deepEqual(contextOf("FORK-TWO"), [
    ["user", "FORK-BASE first"],
    ["assistant", "Base answer."],
    ["user", "FORK-TWO in the source"],
  ], "the source never saw the fork's turn");

  const listed = (await rq("session/list", { cwd })).result.sessions;
  assert.deepEqual(new Set(listed.map((s) => s.sessionId)), new Set([source, fork]));
  assert.equal(listed.find((s) => s.sessionId === fork).title, "Fork of FORK-BASE first");
  await finish(agent);

  // A new process loads the fork: the source's first turn, the fork's title, the fork's turn.
  const b = await start(env);
  const loaded = await b.rq("session/load", { sessionId: fork, cwd, mcpServers: [] });
  assert.ok(loaded.result, JSON.stringify(loaded));
  const respAt = b.agent.frames.findIndex((f) => f.id === `r${ids}`);
  const replay = b.agent.frames.slice(0, respAt).filter((f) => f.params?.sessionId === fork).map((f) => f.params.update);
  const said = replay.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");
  assert.equal(said, "Base answer.One.");
  const typed = replay.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content.text);
  assert.deepEqual(typed, ["FORK-BASE first", "FORK-ONE in the fork"]);
  assert.equal(replay.filter((u) => u.sessionUpdate === "session_info_update").at(-1).title, "Fork of FORK-BASE first");
  await finish(b.agent);
});

test("fork refuses a session whose turn is running (-32001) and an unknown one (-32002)", async () => {
  fake.script("FORK-SLOW", { chunks: Array.from({ length: 40 }, () => ({ content: "." })), delayMs: 25 });
  const cwd = newCwd();
  const { agent, rq } = await start();
  const sessionId = (await rq("session/new", { cwd, mcpServers: [] })).result.sessionId;
  agent.send({ jsonrpc: "2.0", id: "slow", method: "session/prompt", params: { sessionId, prompt: text("FORK-SLOW") } });
  await agent.waitFor((f) => f.params?.update?.sessionUpdate === "agent_message_chunk");
  const busy = await rq("session/fork", { sessionId, cwd, mcpServers: [] });
  assert.equal(busy.error?.code, -32001, JSON.stringify(busy));
  await agent.waitFor((f) => f.id === "slow", 10000);
  const unknown = await rq("session/fork", { sessionId: "no-such-session", cwd, mcpServers: [] });
  assert.equal(unknown.error?.code, -32002, JSON.stringify(unknown));
  await finish(agent);
});

test("set_title: the live client is told, the list and a new process keep it, a first prompt does not replace it", async () => {
  fake.script("TITLE-LATER", say("ok"));
  const cwd = newCwd();
  const { agent, env, rq } = await start();
  const sessionId = (await rq("session/new", { cwd, mcpServers: [] })).result.sessionId;
  const set = await rq("session/set_title", { sessionId, title: "  Refactor the parser  " });
  assert.deepEqual(set.result, { title: "Refactor the parser" });
  const info = agent.updates(sessionId).find((u) => u.sessionUpdate === "session_info_update");
  assert.equal(info?.title, "Refactor the parser");
  await rq("session/prompt", { sessionId, prompt: text("TITLE-LATER please") });
  assert.deepEqual(agent.updates(sessionId).filter((u) => u.sessionUpdate === "session_info_update").map((u) => u.title), ["Refactor the parser"]);
  assert.equal((await rq("session/set_title", { sessionId, title: " " })).error?.code, -32602);
  assert.equal((await rq("session/set_title", { sessionId: "nope", title: "x" })).error?.code, -32002);
  await finish(agent);

  const b = await start(env);
  assert.equal((await b.rq("session/list", { cwd })).result.sessions[0].title, "Refactor the parser");
  // A stored session that this connection does not hold: its row changes, nothing is sent.
  assert.deepEqual((await b.rq("session/set_title", { sessionId, title: "Renamed while saved" })).result, { title: "Renamed while saved" });
  assert.equal(b.agent.frames.filter((f) => f.method === "session/update").length, 0);
  assert.equal((await b.rq("session/list", { cwd })).result.sessions[0].title, "Renamed while saved");
  await finish(b.agent);
});

test("archive and unarchive: archived sessions leave session/list unless asked for; never-prompted sessions are not listed", async () => {
  fake.script("ARCH-", say("ok"));
  const cwd = newCwd();
  const { agent, rq } = await start();
  const made = [];
  for (const name of ["ARCH-a", "ARCH-b"]) {
    const id = (await rq("session/new", { cwd, mcpServers: [] })).result.sessionId;
    await rq("session/prompt", { sessionId: id, prompt: text(name) });
    made.push(id);
  }
  const [a, b] = made;
  const unprompted = (await rq("session/new", { cwd, mcpServers: [] })).result.sessionId;
  const list = async (params) => (await rq("session/list", { cwd, ...params })).result.sessions;
  assert.deepEqual((await list({})).map((s) => s.sessionId).sort(), [a, b].sort(), "the never-prompted session is left out");
  assert.ok(!(await list({ archived: "include" })).some((s) => s.sessionId === unprompted));

  assert.deepEqual((await rq("session/archive", { sessionId: a })).result, {});
  assert.deepEqual((await list({})).map((s) => s.sessionId), [b]);
  assert.deepEqual((await list({ archived: "only" })).map((s) => [s.sessionId, s.archived]), [[a, true]]);
  const both = await list({ archived: "include" });
  assert.deepEqual(new Map(both.map((s) => [s.sessionId, s.archived])), new Map([[a, true], [b, false]]));
  // Archived is not closed: the session still takes prompts.
  assert.equal((await rq("session/prompt", { sessionId: a, prompt: text("ARCH-again") })).result.stopReason, "end_turn");

  assert.deepEqual((await rq("session/unarchive", { sessionId: a })).result, {});
  assert.deepEqual((await list({})).map((s) => s.sessionId).sort(), [a, b].sort());
  assert.deepEqual(await list({ archived: "only" }), []);
  assert.equal((await rq("session/archive", { sessionId: "nope" })).error?.code, -32002);
  assert.equal((await rq("session/list", { cwd, archived: "sideways" })).error?.code, -32602);
  await finish(agent);
});

test("status: open for a session this connection holds, saved once only the store has it, -32002 otherwise; no side effects", async () => {
  fake.script("STATUS-", say("ok"));
  const cwd = newCwd();
  const { agent, env, rq } = await start();
  const sessionId = (await rq("session/new", { cwd, mcpServers: [] })).result.sessionId;
  await rq("session/prompt", { sessionId, prompt: text("STATUS-1") });
  assert.deepEqual((await rq("session/status", { sessionId })).result, { status: "open" });
  assert.equal((await rq("session/status", { sessionId: "nope" })).error?.code, -32002);
  await finish(agent);

  const b = await start(env);
  const before = (await b.rq("session/list", { cwd })).result.sessions;
  assert.deepEqual((await b.rq("session/status", { sessionId })).result, { status: "saved" });
  assert.deepEqual((await b.rq("session/list", { cwd })).result.sessions, before, "status changed nothing (updatedAt included)");
  assert.equal(b.agent.frames.filter((f) => f.method === "session/update").length, 0);
  await b.rq("session/resume", { sessionId, cwd, mcpServers: [] });
  assert.deepEqual((await b.rq("session/status", { sessionId })).result, { status: "open" });
  await finish(b.agent);
});

test("systemPrompt (append): after Corvid's own prompt, saved with the session, replaced by a load that sends one; override is refused", async () => {
  fake.script("SYS-", say("ok"));
  const cwd = newCwd();
  const { agent, env, rq } = await start();
  const systemPrompt = { mode: "append", content: [{ type: "text", text: "Always answer in French." }] };
  const sessionId = (await rq("session/new", { cwd, mcpServers: [], systemPrompt })).result.sessionId;
  await rq("session/prompt", { sessionId, prompt: text("SYS-1") });
  const sys = systemOf("SYS-1");
  assert.match(sys, /^You are Corvid/);
  assert.ok(sys.trimEnd().endsWith("Always answer in French."), sys.slice(-200));
  const refused = await rq("session/new", { cwd, mcpServers: [], systemPrompt: { mode: "override", content: [{ type: "text", text: "x" }] } });
  assert.equal(refused.error?.code, -32602);
  assert.match(refused.error.message, /systemPrompt\.mode/);
  await finish(agent);

  // A new process: a load without systemPrompt keeps the saved one.
  const b = await start(env);
  await b.rq("session/load", { sessionId, cwd, mcpServers: [] });
  await b.rq("session/prompt", { sessionId, prompt: text("SYS-2") });
  assert.ok(systemOf("SYS-2").trimEnd().endsWith("Always answer in French."));
  // A resume that sends one replaces it, for now and for later loads.
  const other = { mode: "append", content: [{ type: "text", text: "Be terse." }] };
  await b.rq("session/resume", { sessionId, cwd, mcpServers: [], systemPrompt: other });
  await b.rq("session/prompt", { sessionId, prompt: text("SYS-3") });
  assert.ok(systemOf("SYS-3").trimEnd().endsWith("Be terse."));
  assert.doesNotMatch(systemOf("SYS-3"), /French/);
  await finish(b.agent);
  const c = await start(env);
  await c.rq("session/resume", { sessionId, cwd, mcpServers: [] });
  await c.rq("session/prompt", { sessionId, prompt: text("SYS-4") });
  assert.ok(systemOf("SYS-4").trimEnd().endsWith("Be terse."));
  await finish(c.agent);
});

test("session/prompt's response carries the turn's token use, summed over its model requests: under _meta.corvid.usage, or as the unstable `usage` for a client that asks", async () => {
  fake.script("USAGE-ONE", say("one request"));
  fake.script("USAGE-TWO", { steps: [call("update_plan", { entries: [{ content: "x", status: "pending" }] }), say("two requests")] });
  // Issue 44: the stable v1 PromptResponse has no `usage` (only the unstable schema defines
  // it), so by default it moved under _meta; this test asserted the root field before.
  const cwd = newCwd();
  const { agent, rq } = await start();
  const sessionId = (await rq("session/new", { cwd, mcpServers: [] })).result.sessionId;
  await rq("session/set_config_option", { sessionId, configId: "mode", value: "full" });
  const one = (await rq("session/prompt", { sessionId, prompt: text("USAGE-ONE") })).result;
  // The fake model reports 10 prompt and 5 completion tokens per request.
  assert.deepEqual(one._meta.corvid.usage, { totalTokens: 15, inputTokens: 10, outputTokens: 5 });
  assert.equal("usage" in one, false, "no root field the stable schema lacks");
  assert.equal(check("PromptResponse", one), null, "valid against the stable schema's PromptResponse");
  const two = (await rq("session/prompt", { sessionId, prompt: text("USAGE-TWO") })).result;
  assert.deepEqual(two._meta.corvid.usage, { totalTokens: 30, inputTokens: 20, outputTokens: 10 });
  await finish(agent);

  // `clientCapabilities._meta.corvid.promptUsage`: the unstable schema's field (the harness
  // validates these frames against the unstable schema).
  const opted = await start(agentEnv({ fake }), { _meta: { corvid: { promptUsage: true } } });
  const id = (await opted.rq("session/new", { cwd, mcpServers: [] })).result.sessionId;
  const three = (await opted.rq("session/prompt", { sessionId: id, prompt: text("USAGE-ONE") })).result;
  assert.deepEqual(three, { stopReason: "end_turn", usage: { totalTokens: 15, inputTokens: 10, outputTokens: 5 } });
  await finish(opted.agent);
});

test("plan operations: a client that advertises `plan` gets plan_update (one plan id) and plan_removed; others get whole plans", async () => {
  const entries = [{ content: "Read", status: "completed" }, { content: "Edit", status: "in_progress" }];
  fake.script("PLAN-OPS", { steps: [call("update_plan", { entries }), call("update_plan", { entries: [entries[0]] }), call("update_plan", { entries: [] }), say("done")] });
  for (const advertised of [true, false]) {
    const cwd = newCwd();
    const { agent, rq } = await start(agentEnv({ fake }), advertised ? { plan: {} } : {});
    const sessionId = (await rq("session/new", { cwd, mcpServers: [] })).result.sessionId;
    await rq("session/set_config_option", { sessionId, configId: "mode", value: "full" });
    assert.equal((await rq("session/prompt", { sessionId, prompt: text("PLAN-OPS") })).result.stopReason, "end_turn");
    const plans = agent.updates(sessionId).filter((u) => /^plan/.test(u.sessionUpdate));
    if (advertised) {
      assert.deepEqual(plans.map((u) => u.sessionUpdate), ["plan_update", "plan_update", "plan_removed"]);
      const ids = new Set(plans.map((u) => u.plan?.planId ?? u.planId));
      assert.equal(ids.size, 1, "one plan, one id");
      assert.equal(plans[0].plan.type, "items");
      assert.deepEqual(plans[0].plan.entries.map((e) => e.content), ["Read", "Edit"]);
      assert.deepEqual(plans[1].plan.entries.map((e) => e.content), ["Read"]);
    } else {
      assert.deepEqual(plans.map((u) => [u.sessionUpdate, u.entries.length]), [["plan", 2], ["plan", 1], ["plan", 0]]);
    }
    await finish(agent);
  }
});

// A fleet: several `corvid serve` processes over one PostgreSQL database share sessions. A
// session created on one server is listed, loaded (exact replay) and continued on another, and
// two servers never run turns in one session at once or fork its ledger.
//
// Needs CORVID_TEST_PG_URL (scripts/test.sh starts a throwaway cluster with
// scripts/pg-cluster.sh). In CI (CI set) a missing URL fails the test; locally it is skipped.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, textOf } from "../support/agent.mjs";
import { connect, startServer } from "../support/server.mjs";
import { freshDatabase, skipWithoutPg } from "../support/pg.mjs";

const skip = skipWithoutPg;
// The test cluster trusts loopback, so this password is never checked: it is there to prove
// that it never reaches a log line or the client.
const PASSWORD = "hunter2-" + Math.random().toString(36).slice(2);

let fake;
before(async () => {
  fake = await startFakeModel();
});
after(async () => fake?.close());

const INIT = { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "fleet-e2e", version: "1" } };
const text = (t) => [{ type: "text", text: t }];

/** Two servers over one fresh database (started together: both migrate it at once). */
async function withFleet(fn) {
  const store = freshDatabase("fleet", { password: PASSWORD });
  const start = () => startServer({ env: agentEnv({ fake }), args: ["--no-auth", "--store", store] });
  const [a, b] = await Promise.all([start(), start()]);
  try {
    await fn(a, b, store);
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
  for (const s of [a, b]) {
    assert.equal((await s.exited).code, 0, s.stderr);
    assert.equal(s.stdout, "", "the server writes nothing to stdout");
    assert.ok(!s.stderr.includes(PASSWORD), "the database password never reaches the log");
  }
}

async function client(server) {
  const c = await connect(server.url);
  const init = await c.request(1, "initialize", INIT);
  const store = init.result._meta.corvid.store;
  assert.equal(store.status, "open", JSON.stringify(store));
  assert.match(store.location, /^postgres(ql)?:\/\/corvid:\*\*\*@127\.0\.0\.1:\d+\/fleet_/);
  assert.ok(!JSON.stringify(init).includes(PASSWORD));
  return c;
}

/** Without the user's own prompt chunks: stored and replayed, but never echoed live. */
const live = (updates) => updates.filter((u) => u.sessionUpdate !== "user_message_chunk");

/** The session/update payloads of `sessionId` that `c` received from frame `from` on. */
const updatesSince = (c, sessionId, from) =>
  c.frames.slice(from).filter((f) => f.method === "session/update" && f.params.sessionId === sessionId).map((f) => f.params.update);

/**
 * A session/load of `c` (response id `responseId`) ends with its response: nothing for the
 * session follows it (today's slash commands came once, inside the replay).
 */
async function nothingAfterLoad(c, sessionId, responseId) {
  await new Promise((r) => setTimeout(r, 300));
  const at = c.frames.findIndex((f) => f.id === responseId && !("method" in f));
  const after = c.frames.slice(at + 1).filter((f) => f.method === "session/update" && f.params.sessionId === sessionId);
  assert.deepEqual(after.map((f) => f.params.update.sessionUpdate), [], "nothing after the load's response");
}

test("fleet: a session created on server A is listed, loaded and continued on server B; A loads both turns", { skip }, () =>
  withFleet(async (a, b, store) => {
    fake.script("FLEET-ONE", { chunks: [{ content: "First " }, { content: "answer." }] });
    fake.script("FLEET-TWO", { chunks: [{ content: "Second answer." }] });
    const cwd = mkdtempSync(join(tmpdir(), "corvid-fleet-"));

    const ca = await client(a);
    const sessionId = (await ca.request(2, "session/new", { cwd, mcpServers: [] })).result.sessionId;
    assert.equal((await ca.request(3, "session/prompt", { sessionId, prompt: text("FLEET-ONE please") })).result.stopReason, "end_turn");
    const seenOnA = ca.updates(sessionId);
    assert.equal(textOf(seenOnA, "agent_message_chunk"), "First answer.");

    const cb = await client(b);
    const listed = await cb.request(2, "session/list", { cwd });
    assert.deepEqual(
      listed.result.sessions.map((s) => [s.sessionId, s.title]),
      [[sessionId, "FLEET-ONE please"]],
    );
    const loaded = await cb.request(3, "session/load", { sessionId, cwd, mcpServers: [] });
    assert.ok(loaded.result, JSON.stringify(loaded));
    await nothingAfterLoad(cb, sessionId, 3);
    const replayedOnB = cb.updates(sessionId);
    assert.deepEqual(live(replayedOnB), seenOnA, "B replays exactly what A's client received");
    assert.equal(textOf(cb.updates(sessionId), "user_message_chunk"), "FLEET-ONE please", "and the prompt");

    const beforeTwo = fake.requests.length;
    const two = await cb.request(4, "session/prompt", { sessionId, prompt: text("FLEET-TWO next") }, 10000);
    assert.equal(two.result.stopReason, "end_turn", JSON.stringify(two));
    const context = JSON.stringify(fake.requests.slice(beforeTwo).map((r) => r.body));
    assert.match(context, /FLEET-ONE please/, "B's model request carries the first turn");
    assert.match(context, /First answer\./);
    const seenOnB = cb.updates(sessionId);
    assert.equal(textOf(seenOnB, "agent_message_chunk"), "First answer.Second answer.");

    // A still holds the session as it was before B's turn: continuing it there would fork
    // the ledger, so A refuses and says to load it again.
    const stale = await ca.request(4, "session/prompt", { sessionId, prompt: text("FLEET-ONE again") });
    assert.equal(stale.error?.code, -32004, JSON.stringify(stale));
    assert.match(stale.error.message, /load it again/);

    const from = ca.frames.length;
    const reloaded = await ca.request(5, "session/load", { sessionId, cwd, mcpServers: [] });
    assert.ok(reloaded.result, JSON.stringify(reloaded));
    await nothingAfterLoad(ca, sessionId, 5);
    const replayedOnA = updatesSince(ca, sessionId, from);
    assert.deepEqual(live(replayedOnA), live(seenOnB), "A replays both turns exactly as B's client saw them");
    assert.equal(textOf(updatesSince(ca, sessionId, from), "user_message_chunk"), "FLEET-ONE pleaseFLEET-TWO next");
    // And continues from there.
    fake.script("FLEET-THREE", { chunks: [{ content: "Third." }] });
    assert.equal((await ca.request(6, "session/prompt", { sessionId, prompt: text("FLEET-THREE") })).result.stopReason, "end_turn");

    await Promise.all([ca.close(), cb.close()]);
    assert.deepEqual(ca.violations, []);
    assert.deepEqual(cb.violations, []);
    // Both servers migrated the new database at once; it was migrated exactly once.
    const applied = execFileSync("psql", [store.replace(`:${PASSWORD}@`, "@"), "-tA", "-c", "SELECT count(*), bool_and(success) FROM _sqlx_migrations"], {
      encoding: "utf8",
    });
    const ours = readdirSync(new URL("../../core/migrations-postgres/", import.meta.url)).filter((f) => f.endsWith(".sql"));
    assert.ok(ours.length >= 3, `the migrations folder was read: ${ours}`);
    assert.equal(applied.trim(), `${ours.length}|t`);
  }));

test("fleet: a turn running on A makes B's prompt in that session fail busy, not run twice", { skip }, () =>
  withFleet(async (a, b) => {
    fake.script("FLEET-SLOW", { chunks: Array.from({ length: 50 }, () => ({ content: "." })), delayMs: 40 });
    fake.script("FLEET-AFTER", { chunks: [{ content: "After." }] });
    const cwd = mkdtempSync(join(tmpdir(), "corvid-fleet-busy-"));
    const ca = await client(a);
    const sessionId = (await ca.request(2, "session/new", { cwd, mcpServers: [] })).result.sessionId;
    ca.send({ jsonrpc: "2.0", id: 3, method: "session/prompt", params: { sessionId, prompt: text("FLEET-SLOW") } });
    await ca.waitFor((f) => f.method === "session/update" && f.params.update.sessionUpdate === "agent_message_chunk");

    // B loads the session mid-turn: the running turn belongs to a live server, so it is not
    // closed as interrupted; B's prompt is refused as busy.
    const cb = await client(b);
    assert.ok((await cb.request(2, "session/load", { sessionId, cwd, mcpServers: [] })).result);
    assert.ok(!textOf(cb.updates(sessionId), "agent_message_chunk").includes("interrupted"));
    const busy = await cb.request(3, "session/prompt", { sessionId, prompt: text("FLEET-AFTER") });
    assert.equal(busy.error?.code, -32001, JSON.stringify(busy));
    assert.equal(busy.error.data.sessionId, sessionId);
    assert.equal(fake.attemptsFor("FLEET-AFTER"), 0, "B's turn never reached the model");

    assert.equal((await ca.waitFor((f) => f.id === 3, 15000)).result.stopReason, "end_turn");
    // A's turn stored more of the session than B loaded: B must load again first.
    assert.equal((await cb.request(4, "session/prompt", { sessionId, prompt: text("FLEET-AFTER") })).error?.code, -32004);
    assert.ok((await cb.request(5, "session/load", { sessionId, cwd, mcpServers: [] })).result);
    const after = await cb.request(6, "session/prompt", { sessionId, prompt: text("FLEET-AFTER") });
    assert.equal(after.result?.stopReason, "end_turn", JSON.stringify(after));
    await Promise.all([ca.close(), cb.close()]);
    assert.deepEqual(ca.violations, []);
    assert.deepEqual(cb.violations, []);
  }));

test("fleet: title, archive, system prompt and fork are stored in PostgreSQL; the other server sees them", { skip }, () =>
  withFleet(async (a, b) => {
    fake.script("FLEET-OPS", { chunks: [{ content: "Ops." }] });
    fake.script("FLEET-FORKED", { chunks: [{ content: "Forked." }] });
    const cwd = mkdtempSync(join(tmpdir(), "corvid-fleet-ops-"));
    const ca = await client(a);
    const systemPrompt = { mode: "append", content: [{ type: "text", text: "FLEET-SYSTEM-PROMPT" }] };
    const sessionId = (await ca.request(2, "session/new", { cwd, mcpServers: [], systemPrompt })).result.sessionId;
    assert.equal((await ca.request(3, "session/prompt", { sessionId, prompt: text("FLEET-OPS") })).result.stopReason, "end_turn");
    assert.deepEqual((await ca.request(4, "session/set_title", { sessionId, title: "Fleet title" })).result, { title: "Fleet title" });
    assert.deepEqual((await ca.request(5, "session/archive", { sessionId })).result, {});

    const cb = await client(b);
    assert.deepEqual((await cb.request(2, "session/list", { cwd })).result.sessions, [], "archived: not listed by default");
    const archived = (await cb.request(3, "session/list", { cwd, archived: "only" })).result.sessions;
    assert.deepEqual(archived.map((s) => [s.sessionId, s.title, s.archived]), [[sessionId, "Fleet title", true]]);
    assert.deepEqual((await cb.request(4, "session/status", { sessionId })).result, { status: "saved" });
    const forked = await cb.request(5, "session/fork", { sessionId, cwd, mcpServers: [] });
    const fork = forked.result?.sessionId;
    assert.ok(fork, JSON.stringify(forked));
    assert.equal((await cb.request(6, "session/prompt", { sessionId: fork, prompt: text("FLEET-FORKED") })).result.stopReason, "end_turn");
    const request = fake.requests.findLast((r) => JSON.stringify(r.body?.messages ?? []).includes("FLEET-FORKED"));
    assert.match(request.body.messages[0].content, /FLEET-SYSTEM-PROMPT\s*$/, "the fork keeps the saved system prompt");
    assert.deepEqual(
      request.body.messages.filter((m) => m.role !== "system").map((m) => m.content),
      ["FLEET-OPS", "Ops.", "FLEET-FORKED"],
    );

    const listed = (await ca.request(6, "session/list", { cwd, archived: "include" })).result.sessions;
    assert.deepEqual(new Map(listed.map((s) => [s.sessionId, [s.title, s.archived]])), new Map([[sessionId, ["Fleet title", true]], [fork, ["Fork of Fleet title", false]]]));
    await Promise.all([ca.close(), cb.close()]);
    assert.deepEqual(ca.violations, []);
    assert.deepEqual(cb.violations, []);
  }));

// The bad-input corpus (tests/bad-input/*.jsonl) against the real binary.
//
// Each corpus line is one case: what to send, and either the JSON-RPC error expected (code,
// id, a fragment of the message that names the problem) or `"silence"` (notifications are
// never answered). After every case the same process must still answer a normal request;
// every stdout line must be a schema-valid frame (the harness checks), and nothing may
// panic. The cases of one file share a process (fast); a case that kills it fails and the
// next case gets a fresh one.
//
// Case fields (see tests/bad-input/README.md):
//   name                      what the case is about
//   json | text | hex | lines what to send: a value (serialized), a raw line, raw bytes in
//                             hex (invalid UTF-8 allowed; a newline is added), or several
//                             of these (values or raw strings) sent back to back
//   expect                    "silence" | { id, code, message?, data? } | { id, ok: true }
//                             (the last only with `why`: bad input accepted on purpose)
//   after, settle             lines sent once the expectation is met, and the id of a
//                             successful response to wait for then (clean-up, e.g. a cancel)
// Placeholders in what is sent: $SESSION (an idle live session), $TURN_SESSION (a fresh
// session, for cases that start a turn), $CLOSED (a fresh session closed again: stored, not
// live), $CWD (an existing directory), ${repeat:C:N} (C repeated N times).
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../support/agent.mjs";
import { v2Validator } from "../support/schema.mjs";

const corpusDir = resolve(dirname(fileURLToPath(import.meta.url)), "..", "bad-input");

let fake;
before(async () => {
  fake = await startFakeModel();
  // Turns the corpus starts: one that never answers (ended by a cancel in `after`).
  fake.script("HANG-FOREVER", { hang: true });
});
after(async () => fake?.close());

/** Parses a corpus file: one JSON case per line; blank lines and `#` comments skipped. */
function loadCases(file) {
  const cases = [];
  readFileSync(join(corpusDir, file), "utf8")
    .split("\n")
    .forEach((line, i) => {
      if (!line.trim() || line.trimStart().startsWith("#")) return;
      let c;
      try {
        c = JSON.parse(line);
      } catch (e) {
        throw new Error(`${file}:${i + 1}: not JSON: ${e.message}`);
      }
      assert.ok(c.name, `${file}:${i + 1}: a case needs a name`);
      assert.ok(c.expect === "silence" || typeof c.expect?.code === "number" || c.expect?.ok === true, `${file}:${i + 1}: expect`);
      assert.ok(c.expect === "silence" || "id" in c.expect, `${file}:${i + 1}: expect.id (null for parse errors)`);
      assert.ok(c.expect?.ok !== true || c.why, `${file}:${i + 1}: a bad input that succeeds needs a \`why\``);
      cases.push({ ...c, where: `${file}:${i + 1}` });
    });
  return cases;
}

/**
 * One agent process with the fixtures the placeholders need. `v2`: an ACP v2 connection (files
 * named `v2-*.jsonl`), validated against the v2 schema.
 */
async function startProcess(cwd, v2 = false) {
  const env = agentEnv({ fake });
  const agent = spawnAgent({ env, validator: v2 ? v2Validator() : null });
  let n = 0;
  const rid = () => `setup-${++n}`;
  const ok = async (method, params) => {
    const r = await agent.request(rid(), method, params);
    assert.ok(r.result, `${method} failed in setup: ${JSON.stringify(r.error)}`);
    return r.result;
  };
  // A new session's commands follow its response: waited for, so no case sees them.
  const newSession = async () => {
    const id = (await ok("session/new", { cwd, mcpServers: [] })).sessionId;
    await agent.waitFor((f) => f.method === "session/update" && f.params.sessionId === id && f.params.update.sessionUpdate === "available_commands_update");
    return id;
  };
  if (v2) await ok("initialize", { protocolVersion: 2, info: { name: "bad-input", version: "1" }, capabilities: {} });
  else await ok("initialize", { protocolVersion: 1, clientCapabilities: {} });
  return {
    agent,
    // A normal request that shows the process still answers (a v2 connection refuses a
    // repeated initialize once other requests came).
    probe: (id) => (v2 ? agent.request(id, "session/list", {}, 10000) : agent.request(id, "initialize", { protocolVersion: 1, clientCapabilities: {} }, 10000)),
    session: await newSession(),
    newSession,
    closedSession: async () => {
      const id = await newSession();
      await ok("session/close", { sessionId: id });
      return id;
    },
  };
}

/** The case's lines as raw text/bytes, placeholders filled in. */
async function linesOf(c, proc, cwd, fixtures) {
  const parts = c.lines ?? [c.json !== undefined ? { json: c.json } : c.text !== undefined ? c.text : { hex: c.hex }];
  const out = [];
  for (const p of parts) {
    if (p && typeof p === "object" && "hex" in p) {
      out.push({ bytes: Buffer.concat([Buffer.from(p.hex.replace(/\s+/g, ""), "hex"), Buffer.from("\n")]) });
      continue;
    }
    let text = typeof p === "string" ? p : JSON.stringify(p && typeof p === "object" && "json" in p ? p.json : p);
    if (text.includes("$CLOSED")) fixtures.closed ??= await proc.closedSession();
    if (text.includes("$TURN_SESSION")) fixtures.turnSession ??= await proc.newSession();
    text = text
      .replaceAll("$TURN_SESSION", fixtures.turnSession)
      .replaceAll("$SESSION", proc.session)
      .replaceAll("$CLOSED", fixtures.closed)
      .replaceAll("$CWD", cwd)
      .replace(/\$\{repeat:(.):(\d+)\}/g, (_, ch, count) => ch.repeat(Number(count)));
    out.push({ text });
  }
  return out;
}

/** All lines in one write, so they reach the agent together (a prompt right behind a load). */
function send(agent, lines) {
  agent.writeBytes(Buffer.concat(lines.map((l) => l.bytes ?? Buffer.from(l.text + "\n"))));
}

const sameId = (a, b) => JSON.stringify(a) === JSON.stringify(b);

async function runCase(c, proc, cwd, probeId) {
  const { agent } = proc;
  const fixtures = {}; // $CLOSED and $TURN_SESSION stay the same through `after`
  const lines = await linesOf(c, proc, cwd, fixtures); // (fixtures first: their frames come before)
  const before = agent.frames.length;
  const newFrames = () => agent.frames.slice(before);
  // Back to back, in order (text through the harness, which notes request ids for the schema check).
  send(agent, lines);

  if (c.expect === "silence") {
    // Two round trips: anything the input provoked would be queued before the second answer.
    for (const id of [`${probeId}-a`, `${probeId}-b`]) {
      const r = await proc.probe(id);
      assert.ok(r.result, `the process still answers: ${JSON.stringify(r)}`);
    }
    const extra = newFrames().filter((f) => !String(f.id).startsWith(probeId));
    assert.deepEqual(extra, [], "a notification is never answered");
    return;
  }
  const { id, code, message, data } = c.expect;
  if (c.expect.ok) {
    // Accepted on purpose (`why` says why), e.g. capabilities the official schema reads
    // leniently: a malformed one counts as not advertised (fail closed).
    const ok = await agent.waitFor((f, i = agent.frames.indexOf(f)) => i >= before && !("method" in f) && sameId(f.id, id), 15000, `response ${JSON.stringify(id)}`);
    assert.ok(ok.result, `expected a result: ${JSON.stringify(ok.error)}`);
    const r = await proc.probe(probeId);
    assert.ok(r.result, "the process still answers a normal request");
    return;
  }
  const reply = await agent.waitFor(
    (f, i = agent.frames.indexOf(f)) => i >= before && !("method" in f) && sameId(f.id, id) && "error" in f,
    15000,
    `error response with id ${JSON.stringify(id)}`,
  );
  assert.equal(reply.error.code, code, `code; got ${JSON.stringify(reply.error)}`);
  if (message) assert.ok(reply.error.message.includes(message), `message ${JSON.stringify(reply.error.message)} should contain ${JSON.stringify(message)}`);
  if (data) for (const [k, v] of Object.entries(data)) assert.deepEqual(reply.error.data?.[k], v, `data.${k}`);
  if (c.after) {
    send(agent, await linesOf({ lines: c.after }, proc, cwd, fixtures));
  }
  if (c.settle !== undefined) {
    await agent.waitFor((f, i = agent.frames.indexOf(f)) => i >= before && sameId(f.id, c.settle) && "result" in f, 10000, `settling response ${c.settle}`);
  }
  const r = await proc.probe(probeId);
  assert.ok(r.result, `the process still answers a normal request: ${JSON.stringify(r)}`);
}

function checkHealthy(agent, where) {
  assert.deepEqual(agent.violations, [], `${where}: stdout carries only schema-valid frames`);
  assert.doesNotMatch(agent.stderr, /panicked/, `${where}: nothing panicked`);
}

const files = readdirSync(corpusDir).filter((f) => f.endsWith(".jsonl")).sort();

test("the corpus holds at least 100 cases", () => {
  const total = files.reduce((n, f) => n + loadCases(f).length, 0);
  assert.ok(total >= 100, `only ${total} cases`);
});

for (const file of files) {
  test(`bad input: ${file}`, async (t) => {
    const cwd = mkdtempSync(join(tmpdir(), "corvid-bad-"));
    let proc = null;
    let probes = 0;
    try {
      for (const c of loadCases(file)) {
        if (!proc || proc.agent.child.exitCode !== null || proc.agent.child.signalCode !== null) {
          if (proc) checkHealthy(proc.agent, c.where);
          proc = await startProcess(cwd, file.startsWith("v2-"));
        }
        const current = proc;
        await t.test(`${c.name} (${c.where})`, async () => {
          await runCase(c, current, cwd, `probe-${++probes}`);
          assert.equal(current.agent.child.exitCode, null, "the process is still alive");
        });
      }
      checkHealthy(proc.agent, file);
      const exit = proc.agent.exited;
      await proc.agent.stop();
      assert.deepEqual({ code: (await exit).code, signal: (await exit).signal }, { code: 0, signal: null }, "clean exit at end of input");
    } finally {
      await proc?.agent.stop();
    }
  });
}

// Corvid benchmarks: prints a table. Numbers belong in issue notes, never in timed tests.
//
//   npm run bench            (uses target/release/corvid or $CORVID_BIN)
//
// - spawn → initialize: process start until the initialize response is read
// - session/new: request → response, provider configured (no discovery)
// - turn overhead: prompt → response for a one-chunk answer from an instant fake model; this
//   includes the model's HTTP round trip, so it is an upper bound on Corvid's own share
// - streaming: a 10,000-chunk answer, updates relayed per second (prompt sent → response)
// - peak RSS: VmHWM of the agent after the streaming turn
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { once } from "node:events";
import { agentEnv, corvidBin } from "../support/agent.mjs";
import { printTable } from "./report.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const RUNS = Number(process.env.BENCH_RUNS ?? 30);

const server = spawn(process.execPath, [join(here, "fake-server.mjs")], { stdio: ["ignore", "pipe", "inherit"] });
const [urlLine] = await once(server.stdout, "data");
const fake = { url: urlLine.toString().trim() };

// One environment for every run, like one user's machine: the session store already exists
// after the first start.
const env = { ...agentEnv({ fake }), CORVID_LOG: "warn" };

/** A minimal line client: resolves responses by id, counts updates. */
function startAgent(args = []) {
  const child = spawn(corvidBin(), ["acp", ...args], { env, stdio: ["pipe", "pipe", "inherit"] });
  const waiting = new Map();
  let updates = 0;
  let buf = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk) => {
    buf += chunk;
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.startsWith('{"jsonrpc":"2.0","method":"session/update"')) {
        if (line.includes('"sessionUpdate":"agent_message_chunk"')) updates++;
        continue;
      }
      const msg = JSON.parse(line);
      waiting.get(msg.id)?.(msg);
      waiting.delete(msg.id);
    }
  });
  let next = 1;
  return {
    child,
    get updates() {
      return updates;
    },
    request(method, params) {
      const id = next++;
      const p = new Promise((r) => waiting.set(id, r));
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
      return p;
    },
    async close() {
      child.stdin.end();
      await once(child, "exit");
    },
  };
}

const INIT = { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "bench", version: "1" } };
const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)], p95: s[Math.min(s.length - 1, Math.floor(s.length * 0.95))] };
};
const ms = (x) => `${x.toFixed(2)} ms`;

// 1. spawn → initialize
const initTimes = [];
for (let i = 0; i < RUNS; i++) {
  const t0 = performance.now();
  const a = startAgent();
  await a.request("initialize", INIT);
  initTimes.push(performance.now() - t0);
  await a.close();
}

// For scale: what spawning any process and reading one line back costs this harness.
const spawnBaseline = [];
for (let i = 0; i < RUNS; i++) {
  const t0 = performance.now();
  const c = spawn("head", ["-n1"], { stdio: ["pipe", "pipe", "inherit"] });
  c.stdin.write("{}\n");
  await once(c.stdout, "data");
  spawnBaseline.push(performance.now() - t0);
  c.stdin.end();
  await once(c, "exit");
}

// 2-5 in one long-lived process
const a = startAgent();
await a.request("initialize", INIT);
const newTimes = [];
let sessionId;
for (let i = 0; i < RUNS * 3; i++) {
  const t0 = performance.now();
  const r = await a.request("session/new", { cwd: tmpdir(), mcpServers: [] });
  newTimes.push(performance.now() - t0);
  sessionId = r.result.sessionId;
}

async function directModelRequest() {
  const t0 = performance.now();
  const res = await fetch(`${fake.url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "fake-model", stream: true, messages: [{ role: "user", content: "BENCH-INSTANT" }] }),
  });
  await res.text();
  return performance.now() - t0;
}
const turnTimes = [];
const directTimes = [];
for (let i = 0; i < RUNS * 2; i++) {
  // Fresh session each time so the context does not grow.
  const s = (await a.request("session/new", { cwd: tmpdir(), mcpServers: [] })).result.sessionId;
  const t0 = performance.now();
  await a.request("session/prompt", { sessionId: s, prompt: [{ type: "text", text: "BENCH-INSTANT" }] });
  turnTimes.push(performance.now() - t0);
  directTimes.push(await directModelRequest());
}

/** Streams a 10,000-chunk answer `runs` times; returns turn durations (ms) and the last session. */
async function streamTurns(agent, runs) {
  const times = [];
  let session;
  for (let i = 0; i < runs; i++) {
    session = (await agent.request("session/new", { cwd: tmpdir(), mcpServers: [] })).result.sessionId;
    const before = agent.updates;
    const t0 = performance.now();
    const r = await agent.request("session/prompt", { sessionId: session, prompt: [{ type: "text", text: "BENCH-STREAM" }] });
    times.push(performance.now() - t0);
    const n = agent.updates - before;
    if (n !== 10000 || r.result?.stopReason !== "end_turn") throw new Error(`expected 10000 updates, got ${n}: ${JSON.stringify(r)}`);
  }
  return { times, session };
}
const streamed = await streamTurns(a, 7);
const streamRuns = streamed.times.map((ms) => 10000 / (ms / 1000));
const status = readFileSync(`/proc/${a.child.pid}/status`, "utf8");
const hwmKb = Number(/VmHWM:\s+(\d+)/.exec(status)[1]);

// Replay: session/load of the last 10,000-chunk session, request → response (which follows
// the last replayed frame).
const replayTimes = [];
for (let i = 0; i < 7; i++) {
  const t0 = performance.now();
  const before = a.updates;
  await a.request("session/load", { sessionId: streamed.session, cwd: tmpdir(), mcpServers: [] });
  replayTimes.push(performance.now() - t0);
  if (a.updates - before !== 10000) throw new Error(`replayed ${a.updates - before} chunks`);
}
await a.close();

// Persistence overhead: the same streaming turns without a store.
const memoryOnly = startAgent(["--store", "none"]);
await memoryOnly.request("initialize", INIT);
const unstored = await streamTurns(memoryOnly, 7);
await memoryOnly.close();

// The same over PostgreSQL (the fleet store), when a database is at hand.
const pgUrl = process.env.CORVID_TEST_PG_URL;
let pgStored = null;
if (pgUrl) {
  const pg = startAgent(["--store", pgUrl]);
  await pg.request("initialize", INIT);
  pgStored = await streamTurns(pg, 7);
  await pg.close();
}
server.kill("SIGTERM");

const init = stats(initTimes);
const news = stats(newTimes);
const turn = stats(turnTimes);
const direct = stats(directTimes);
const stream = stats(streamRuns);
const replay = stats(replayTimes);
const overheadUs = ((stats(streamed.times).median - stats(unstored.times).median) * 1000) / 10000;
const rows = [
  ["spawn → initialize response", `${ms(init.median)} (p95 ${ms(init.p95)})`, "≤ 3 ms median"],
  ["  for scale: spawn `head -n1` → its line", ms(stats(spawnBaseline).median), ""],
  ["session/new", `${ms(news.median)} (p95 ${ms(news.p95)})`, "≤ 2 ms"],
  // The whole turn includes the model's HTTP round trip, so it bounds Corvid's overhead from above.
  ["prompt turn overhead (whole turn, instant model)", `${ms(turn.median)} (p95 ${ms(turn.p95)})`, "≤ 3 ms"],
  ["  for scale: same request from Node's fetch", ms(direct.median), ""],
  ["streaming, 10,000 chunks", `${Math.round(stream.median).toLocaleString("en")} updates/s (min ${Math.round(Math.min(...streamRuns)).toLocaleString("en")})`, "≥ 100,000/s"],
  ["peak RSS (VmHWM)", `${(hwmKb / 1024).toFixed(1)} MB`, "≤ 15 MB"],
  ["session/load replay, 10,000 updates", `${ms(replay.median)} (p95 ${ms(replay.p95)})`, "≤ 50 ms"],
  ["persistence overhead per update", `${overheadUs.toFixed(2)} µs (stored vs --store none)`, "≤ 20 µs"],
];
if (pgStored) {
  const pgUs = ((stats(pgStored.times).median - stats(unstored.times).median) * 1000) / 10000;
  rows.push(["  same, PostgreSQL store (CORVID_TEST_PG_URL)", `${pgUs.toFixed(2)} µs`, ""]);
}
printTable(["metric", "result", "target"], rows);
console.log(`\n${RUNS} runs each (${RUNS * 3} for session/new, ${RUNS * 2} turns, 7 streams, 7 replays); binary ${corvidBin()}`);

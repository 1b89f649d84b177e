// `corvid serve` under load: N concurrent WebSocket connections, each doing initialize,
// session/new and a short prompt turn against the fake model. Prints a table.
//
//   npm run bench:serve     (target/release/corvid or $CORVID_BIN;
//                            BENCH_CONNECTIONS=200, BENCH_TURNS=1 per connection)
//
// - errors: failed connects, JSON-RPC errors, turns not ending in end_turn (must be 0)
// - connect + initialize + session/new: from opening the socket to the session id
// - turn latency: session/prompt sent → response read (includes the fake model's HTTP round
//   trip), p50 and p99 over every turn
// - server RSS: VmRSS with all connections open after their turns, and the peak (VmHWM)
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { once } from "node:events";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";
import { agentEnv, corvidBin } from "../support/agent.mjs";
import { percentile, printTable } from "./report.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 200);
const TURNS = Number(process.env.BENCH_TURNS ?? 1);

const model = spawn(process.execPath, [join(here, "fake-server.mjs")], { stdio: ["ignore", "pipe", "inherit"] });
const [urlLine] = await once(model.stdout, "data");
const env = { ...agentEnv({ fake: { url: urlLine.toString().trim() } }), CORVID_LOG: "warn" };

const server = spawn(
  corvidBin(),
  ["serve", "--listen", "127.0.0.1:0", "--no-auth", "--max-connections", String(CONNECTIONS + 16)],
  { env, stdio: ["ignore", "ignore", "pipe"] },
);
let serverErr = "";
server.stderr.setEncoding("utf8");
const url = await new Promise((resolve, reject) => {
  server.stderr.on("data", (d) => {
    serverErr += d;
    const m = /listening on (ws:\/\/\S+)/.exec(serverErr);
    if (m) resolve(m[1]);
  });
  server.on("exit", (code) => reject(new Error(`server exited with ${code}: ${serverErr}`)));
});

const INIT = { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "serve-bench", version: "1" } };
const errors = [];
const setupTimes = [];
const turnTimes = [];

/** One client: resolves once its turns are done, leaving the socket open. */
async function client(n) {
  const t0 = performance.now();
  const ws = new WebSocket(url);
  const waiting = new Map();
  let next = 1;
  ws.on("message", (data) => {
    const text = data.toString();
    if (text.startsWith('{"jsonrpc":"2.0","method"')) return; // updates
    const msg = JSON.parse(text);
    waiting.get(msg.id)?.(msg);
    waiting.delete(msg.id);
  });
  const request = (method, params) =>
    new Promise((resolve) => {
      const id = next++;
      waiting.set(id, resolve);
      ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
  try {
    await new Promise((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
      ws.once("unexpected-response", (_q, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
    const init = await request("initialize", INIT);
    if (init.error) throw new Error(`initialize: ${init.error.message}`);
    const s = await request("session/new", { cwd: tmpdir(), mcpServers: [] });
    if (s.error) throw new Error(`session/new: ${s.error.message}`);
    setupTimes.push(performance.now() - t0);
    for (let i = 0; i < TURNS; i++) {
      const t1 = performance.now();
      const r = await request("session/prompt", {
        sessionId: s.result.sessionId,
        prompt: [{ type: "text", text: `BENCH-INSTANT client ${n} turn ${i}` }],
      });
      if (r.error || r.result.stopReason !== "end_turn") throw new Error(`prompt: ${JSON.stringify(r.error ?? r.result)}`);
      turnTimes.push(performance.now() - t1);
    }
  } catch (e) {
    errors.push(`client ${n}: ${e.message}`);
  }
  return ws;
}

const t0 = performance.now();
const sockets = await Promise.all(Array.from({ length: CONNECTIONS }, (_, n) => client(n)));
const wall = performance.now() - t0;
const status = readFileSync(`/proc/${server.pid}/status`, "utf8");
const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)[1]);
const hwmKb = Number(/VmHWM:\s+(\d+)/.exec(status)[1]);
for (const ws of sockets) ws.close();

server.kill("SIGTERM");
const [code] = await once(server, "exit");
model.kill("SIGTERM");

const ms = (x) => `${x.toFixed(1)} ms`;
const rows = [
  ["connections (concurrent)", String(CONNECTIONS)],
  ["turns", `${turnTimes.length} of ${CONNECTIONS * TURNS}`],
  ["errors", String(errors.length)],
  ["connect + initialize + session/new p50 / p99", `${ms(percentile(setupTimes, 0.5))} / ${ms(percentile(setupTimes, 0.99))}`],
  ["turn latency p50", ms(percentile(turnTimes, 0.5))],
  ["turn latency p99", ms(percentile(turnTimes, 0.99))],
  ["wall time, all clients", ms(wall)],
  ["server RSS with all connections open", `${(rssKb / 1024).toFixed(1)} MB`],
  ["server peak RSS (VmHWM)", `${(hwmKb / 1024).toFixed(1)} MB`],
  ["server exit code after SIGTERM", String(code)],
];
printTable(["metric", "result"], rows);
console.log(`\nbinary ${corvidBin()}`);
for (const e of errors.slice(0, 10)) console.error(e);
process.exit(errors.length === 0 && code === 0 ? 0 : 1);

// Soak: one `corvid acp` process, 100 sessions × 20 turns, each turn with a file write and a
// command (both answered permission requests), a read and a streamed answer, against the
// fake model. Prints a table (RSS, fds, threads, child processes, zombies, turn latency) and
// exits non-zero when a resource grew past its stated bound.
//
//   npm run soak    (SOAK_SESSIONS, SOAK_TURNS, SOAK_CONCURRENCY override the shape)
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { once } from "node:events";
import { agentEnv, corvidBin } from "../support/agent.mjs";
import { percentile, printTable } from "./report.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const SESSIONS = Number(process.env.SOAK_SESSIONS ?? 100);
const TURNS = Number(process.env.SOAK_TURNS ?? 20);
const CONCURRENCY = Number(process.env.SOAK_CONCURRENCY ?? 10);
// Bounds: what may remain after every session is closed, over the idle process at the start.
const BOUND = { rssMb: 48, fds: 8, threads: 8, children: 0, zombies: 0 };

const model = spawn(process.execPath, [join(here, "fake-server.mjs")], { stdio: ["ignore", "pipe", "inherit"] });
const [urlLine] = await once(model.stdout, "data");
const env = { ...agentEnv({ fake: { url: urlLine.toString().trim() } }), CORVID_LOG: "warn" };

const agent = spawn(corvidBin(), ["acp"], { env, stdio: ["pipe", "pipe", "inherit"] });
const waiting = new Map();
let permissions = 0;
let updates = 0;
let buf = "";
let next = 1;
agent.stdout.setEncoding("utf8");
agent.stdout.on("data", (chunk) => {
  buf += chunk;
  let nl;
  while ((nl = buf.indexOf("\n")) >= 0) {
    const msg = JSON.parse(buf.slice(0, nl));
    buf = buf.slice(nl + 1);
    if (msg.method === "session/update") updates++;
    else if (msg.method === "session/request_permission") {
      permissions++;
      send({ jsonrpc: "2.0", id: msg.id, result: { outcome: { outcome: "selected", optionId: "allow_once" } } });
    } else if ("id" in msg && !("method" in msg)) {
      waiting.get(msg.id)?.(msg);
      waiting.delete(msg.id);
    }
  }
});
const send = (m) => agent.stdin.write(JSON.stringify(m) + "\n");
function request(method, params) {
  const id = next++;
  const p = new Promise((r) => waiting.set(id, r));
  send({ jsonrpc: "2.0", id, method, params });
  return p;
}

/** The agent's resources, from /proc. */
function sample() {
  const pid = agent.pid;
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)[1]);
  const kids = readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .map((d) => {
      try {
        // pid (comm) state ppid … ; comm may hold spaces, so split after the last ')'.
        const stat = readFileSync(`/proc/${d}/stat`, "utf8");
        const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        return { state, ppid: Number(ppid) };
      } catch {
        return null;
      }
    })
    .filter((p) => p && p.ppid === pid);
  return {
    rssMb: kb("VmRSS") / 1024,
    hwmMb: kb("VmHWM") / 1024,
    fds: readdirSync(`/proc/${pid}/fd`).length,
    threads: kb("Threads"),
    children: kids.filter((k) => k.state !== "Z").length,
    zombies: kids.filter((k) => k.state === "Z").length,
  };
}

const init = await request("initialize", { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "soak", version: "1" } });
if (init.error) throw new Error(JSON.stringify(init.error));
// Warm up once (opens the store, starts the writer and the HTTP client), then take the baseline.
{
  const s = (await request("session/new", { cwd: mkdtempSync(join(tmpdir(), "corvid-soak-")), mcpServers: [] })).result.sessionId;
  await request("session/prompt", { sessionId: s, prompt: [{ type: "text", text: "SOAK-TURN warm-up" }] });
  await request("session/close", { sessionId: s });
}
await new Promise((r) => setTimeout(r, 500));
const start = sample();

const turnTimes = [];
const errors = [];
let nextSession = 0;
async function worker() {
  while (nextSession < SESSIONS) {
    const n = nextSession++;
    const cwd = mkdtempSync(join(tmpdir(), "corvid-soak-"));
    const created = await request("session/new", { cwd, mcpServers: [] });
    if (created.error) {
      errors.push(`session ${n}: ${created.error.message}`);
      continue;
    }
    const sessionId = created.result.sessionId;
    for (let t = 0; t < TURNS; t++) {
      const t0 = performance.now();
      const r = await request("session/prompt", { sessionId, prompt: [{ type: "text", text: `SOAK-TURN ${n}.${t}` }] });
      turnTimes.push(performance.now() - t0);
      if (r.error || r.result.stopReason !== "end_turn") errors.push(`session ${n} turn ${t}: ${JSON.stringify(r.error ?? r.result)}`);
    }
    await request("session/close", { sessionId });
  }
}
const t0 = performance.now();
await Promise.all(Array.from({ length: CONCURRENCY }, worker));
const wall = performance.now() - t0;
const busy = sample(); // right after the last turn
// Idle worker threads (tokio's blocking pool) retire after 10 s; measure once they may have.
await new Promise((r) => setTimeout(r, 11_000));
const end = sample();

agent.stdin.end();
const [code] = await once(agent, "exit");
model.kill("SIGTERM");

const over = Object.keys(BOUND).filter((k) => end[k] - (k === "children" || k === "zombies" ? 0 : start[k]) > BOUND[k]);
const f1 = (x) => x.toFixed(1);
const rows = [
  ["shape", `${SESSIONS} sessions × ${TURNS} turns, ${CONCURRENCY} at a time`],
  ["turns / errors", `${turnTimes.length} / ${errors.length}`],
  ["permission requests answered / updates", `${permissions} / ${updates}`],
  ["turn latency p50 / p99", `${f1(percentile(turnTimes, 0.5))} / ${f1(percentile(turnTimes, 0.99))} ms`],
  ["wall time", `${f1(wall / 1000)} s (${f1(turnTimes.length / (wall / 1000))} turns/s)`],
  ["RSS start / after turns / end", `${f1(start.rssMb)} / ${f1(busy.rssMb)} / ${f1(end.rssMb)} MB (bound +${BOUND.rssMb})`],
  ["peak RSS (VmHWM)", `${f1(end.hwmMb)} MB`],
  ["open fds start / after turns / end", `${start.fds} / ${busy.fds} / ${end.fds} (bound +${BOUND.fds})`],
  ["threads start / after turns / end", `${start.threads} / ${busy.threads} / ${end.threads} (bound +${BOUND.threads})`],
  ["child processes / zombies at the end", `${end.children} / ${end.zombies} (bound 0 / 0)`],
  ["exit code on stdin EOF", String(code)],
];
printTable(["metric", "result"], rows);
console.log(`\nbinary ${corvidBin()}`);
for (const e of errors.slice(0, 10)) console.error(e);
if (over.length) console.error(`over the bound: ${over.join(", ")}`);
process.exit(errors.length === 0 && over.length === 0 && code === 0 ? 0 : 1);

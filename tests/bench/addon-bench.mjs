// In-process (napi addon) versus stdio (`corvid acp`): time to the initialize response,
// session/new, updates/s for a 10,000-chunk answer, and how much of Corvid's own file (the
// addon's `.node` in Node's process, the binary in its own) is resident after those streams:
// in an editor the addon's pages are part of the extension host's memory. Prints a table.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createAgent } from "corvid-acp";
import { CLOSED_URL, corvidBin } from "../support/agent.mjs";
import { printTable } from "./report.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const RUNS = Number(process.env.BENCH_RUNS ?? 20);
const server = spawn(process.execPath, [join(here, "fake-server.mjs")], { stdio: ["ignore", "pipe", "inherit"] });
const [urlLine] = await once(server.stdout, "data");
const fakeUrl = urlLine.toString().trim();

const dir = mkdtempSync(join(tmpdir(), "corvid-abench-"));
writeFileSync(join(dir, "config.toml"), `[discovery]\nollama_url = "${CLOSED_URL}"\n`);
const env = { PATH: process.env.PATH, HOME: dir, CORVID_CONFIG: join(dir, "config.toml"), CORVID_DATA_DIR: join(dir, "data"), CORVID_BASE_URL: fakeUrl, CORVID_MODEL: "fake-model", CORVID_LOG: "warn" };
const options = { configFile: env.CORVID_CONFIG, dataDir: env.CORVID_DATA_DIR, baseUrl: fakeUrl, model: "fake-model" };

/** A client over message objects, counting agent_message_chunks. */
function client(send) {
  const waiting = new Map();
  let next = 1;
  const c = {
    chunks: 0,
    deliver(msg) {
      if (msg.method === "session/update") {
        if (msg.params.update.sessionUpdate === "agent_message_chunk") c.chunks++;
        return;
      }
      waiting.get(msg.id)?.(msg);
      waiting.delete(msg.id);
    },
    request(method, params) {
      const id = next++;
      const p = new Promise((r) => waiting.set(id, r));
      send({ jsonrpc: "2.0", id, method, params });
      return p;
    },
  };
  return c;
}

function inProcess() {
  const agent = createAgent(options);
  const writer = agent.writable.getWriter();
  const c = client((m) => writer.write(m));
  (async () => {
    for await (const m of agent.readable) c.deliver(m);
  })();
  c.close = () => agent.close();
  c.residentKb = () => fileResidentKb("self", (path) => /corvid[^/]*\.node$/.test(path));
  return c;
}

function overStdio() {
  const child = spawn(corvidBin(), ["acp"], { env, stdio: ["pipe", "pipe", "inherit"] });
  const c = client((m) => child.stdin.write(JSON.stringify(m) + "\n"));
  let buf = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      c.deliver(JSON.parse(buf.slice(0, nl)));
      buf = buf.slice(nl + 1);
    }
  });
  c.close = async () => {
    child.stdin.end();
    await once(child, "exit");
  };
  c.residentKb = () => fileResidentKb(child.pid, (path) => path === realpathSync(corvidBin()));
  return c;
}

/** Resident kB of the mappings of `pid` whose file `isOurs` (code, read-only data, relocated data). */
function fileResidentKb(pid, isOurs) {
  let ours = false;
  let kb = 0;
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) ours = isOurs(head[1]);
    else if (ours && line.startsWith("Rss:")) kb += Number(line.split(/\s+/)[1]);
  }
  return kb;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const INIT = { protocolVersion: 1, clientCapabilities: {} };

async function measure(make) {
  const init = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    const c = make();
    await c.request("initialize", INIT);
    init.push(performance.now() - t0);
    await c.close();
  }
  const c = make();
  await c.request("initialize", INIT);
  const news = [];
  let sessionId;
  for (let i = 0; i < RUNS * 3; i++) {
    const t0 = performance.now();
    sessionId = (await c.request("session/new", { cwd: tmpdir(), mcpServers: [] })).result.sessionId;
    news.push(performance.now() - t0);
  }
  const rates = [];
  for (let i = 0; i < 5; i++) {
    const s = (await c.request("session/new", { cwd: tmpdir(), mcpServers: [] })).result.sessionId;
    const before = c.chunks;
    const t0 = performance.now();
    await c.request("session/prompt", { sessionId: s, prompt: [{ type: "text", text: "BENCH-STREAM" }] });
    const n = c.chunks - before;
    if (n !== 10000) throw new Error(`got ${n} chunks`);
    rates.push(n / ((performance.now() - t0) / 1000));
  }
  const residentKb = c.residentKb();
  await c.close();
  return { init: median(init), sessionNew: median(news), rate: median(rates), residentKb };
}

const stdio = await measure(overStdio);
const inproc = await measure(inProcess);
server.kill("SIGTERM");
const rows = [
  ["start → initialize response", `${inproc.init.toFixed(2)} ms`, `${stdio.init.toFixed(2)} ms`],
  ["session/new", `${inproc.sessionNew.toFixed(2)} ms`, `${stdio.sessionNew.toFixed(2)} ms`],
  ["streaming, 10,000 chunks", `${Math.round(inproc.rate).toLocaleString("en")} updates/s`, `${Math.round(stdio.rate).toLocaleString("en")} updates/s`],
  ["Corvid's file resident after the streams", `${(inproc.residentKb / 1024).toFixed(1)} MB (.node)`, `${(stdio.residentKb / 1024).toFixed(1)} MB (binary)`],
];
const head = ["metric (median)", "in-process (addon)", "stdio (corvid acp)"];
printTable(head, rows);
console.log(`\n${RUNS} starts, ${RUNS * 3} session/new, 5 streams each; same store directory for both`);

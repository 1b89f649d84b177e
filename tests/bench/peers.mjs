// Corvid beside a peer agent, in one run, both driven by the official TypeScript SDK against
// the same fake model: prints both agents' figures and the ratios. Numbers belong in issue
// notes, never in timed tests.
//
//   npm run bench:peers      (Corvid from target/release/corvid or $CORVID_BIN)
//
// The peer is codex-acp (Zed's, the fastest peer we know), installed from npm into
// $CORVID_PEERS_DIR (default ~/.cache/corvid/peers) when missing. It is pointed at the fake
// model through its own config.toml: a model provider with a loopback base_url and
// wire_api = "responses" (the fake model speaks the Responses API too).
//
// Figures (medians of RUNS repetitions, each in a fresh process):
// - spawn → initialize response
// - session/new
// - first prompt turn, instant model (prompt → response)
// - process-tree peak RSS: the sum of VmHWM over the agent and its descendants after that turn
// - for scale: the harness's floor, spawning a shell that answers `initialize` with a canned
//   line, and each agent's initialize above it (what the agent itself takes)
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, corvidBin } from "../support/agent.mjs";
import { percentile, printTable } from "./report.mjs";

const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const CODEX_ACP = "@zed-industries/codex-acp@0.16.0";
const MARKER = "PEER-INSTANT";

/** codex-acp's binary, installed from npm into the peers folder when missing. */
function codexAcpBin() {
  const dir = process.env.CORVID_PEERS_DIR ?? join(homedir(), ".cache", "corvid", "peers");
  const bin = join(dir, "node_modules", "@zed-industries", "codex-acp-linux-x64", "bin", "codex-acp");
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true });
    process.stderr.write(`installing ${CODEX_ACP} into ${dir}\n`);
    execFileSync("npm", ["install", "--no-save", "--no-audit", "--no-fund", "--prefix", dir, CODEX_ACP], { stdio: "inherit" });
  }
  return bin;
}

/** Peak RSS of `pid` and every descendant (VmHWM, kB), read from /proc. */
function treePeakKb(pid) {
  const children = new Map();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1].split(" ")[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(entry));
    } catch {}
  }
  let total = 0;
  const stack = [pid];
  while (stack.length) {
    const p = stack.pop();
    try {
      const m = readFileSync(`/proc/${p}/status`, "utf8").match(/VmHWM:\s+(\d+)/);
      total += m ? Number(m[1]) : 0;
    } catch {}
    stack.push(...(children.get(p) ?? []));
  }
  return total;
}

/** One agent process through the SDK's ClientSideConnection. */
async function measureOnce(agent) {
  const t0 = performance.now();
  const child = spawn(agent.bin, agent.args, { env: agent.env, stdio: ["pipe", "pipe", "ignore"] });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  // Permission requests are not expected (the instant answer calls no tool); refusing keeps a
  // surprise from hanging the run.
  const conn = acp
    .client({ name: "corvid-peers-bench" })
    .onRequest(acp.methods.client.session.requestPermission, () => ({ outcome: { outcome: "cancelled" } }))
    .connect(stream);
  try {
    const ctx = conn.agent;
    await ctx.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
    const initMs = performance.now() - t0;
    const t1 = performance.now();
    const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: agent.cwd, mcpServers: [] });
    const newMs = performance.now() - t1;
    const asked = fake.requests.filter((q) => q.api === agent.api).length;
    const t2 = performance.now();
    const r = await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: MARKER }] });
    const turnMs = performance.now() - t2;
    if (r.stopReason !== "end_turn") throw new Error(`${agent.name}: the turn ended with ${r.stopReason}`);
    // The answer came from the fake model, not from an error path that also ends the turn.
    if (fake.requests.filter((q) => q.api === agent.api).length <= asked) throw new Error(`${agent.name}: no model request`);
    return { initMs, newMs, turnMs, rssKb: treePeakKb(child.pid) };
  } finally {
    conn.close();
    child.kill("SIGKILL");
  }
}

/** What any agent's initialize costs this harness: `sh` answering with a canned line (the SDK's first request id is 0). */
async function floorOnce() {
  const answer = JSON.stringify({ jsonrpc: "2.0", id: 0, result: { protocolVersion: 1, agentCapabilities: {}, authMethods: [] } });
  const t0 = performance.now();
  const child = spawn("sh", ["-c", `IFS= read -r line; printf '%s\\n' '${answer}'; exec cat >/dev/null`], { stdio: ["pipe", "pipe", "ignore"] });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const conn = acp.client({ name: "corvid-peers-bench" }).connect(stream);
  try {
    await conn.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
    return performance.now() - t0;
  } finally {
    conn.close();
    child.kill("SIGKILL");
  }
}

async function measure(agent) {
  const runs = [];
  for (let i = 0; i < RUNS; i++) runs.push(await measureOnce(agent));
  const pick = (k) => percentile(runs.map((r) => r[k]), 0.5);
  return { initMs: pick("initMs"), newMs: pick("newMs"), turnMs: pick("turnMs"), rssKb: pick("rssKb") };
}

const fake = await startFakeModel();
fake.script(MARKER, { chunks: [{ content: "ok" }] });
const cwd = mkdtempSync(join(tmpdir(), "corvid-peers-"));

const corvidEnv = { ...agentEnv({ fake }), CORVID_LOG: "warn" };
const codexHome = mkdtempSync(join(tmpdir(), "corvid-peers-codex-"));
writeFileSync(
  join(codexHome, "config.toml"),
  [
    `model = "fake-model"`,
    `model_provider = "fake"`,
    `approval_policy = "never"`,
    `[model_providers.fake]`,
    `name = "fake"`,
    `base_url = "${fake.url}"`,
    `wire_api = "responses"`,
    `env_key = "FAKE_API_KEY"`,
    "",
  ].join("\n"),
);
const codexEnv = { PATH: process.env.PATH, HOME: codexHome, CODEX_HOME: codexHome, FAKE_API_KEY: "test-key", RUST_LOG: "warn" };

const agents = [
  { name: "Corvid", bin: corvidBin(), args: ["acp"], env: corvidEnv, cwd, api: "openai" },
  { name: "codex-acp 0.16.0", bin: codexAcpBin(), args: [], env: codexEnv, cwd, api: "responses" },
];
// Interleaved warm-up, so neither agent alone pays for a cold page cache.
for (const a of agents) await measureOnce(a);
await floorOnce();
const results = [];
for (const a of agents) results.push(await measure(a));
const floors = [];
for (let i = 0; i < RUNS; i++) floors.push(await floorOnce());
const floorMs = percentile(floors, 0.5);
await fake.close();

const [c, p] = results;
const ms = (v) => `${v.toFixed(1)} ms`;
const mb = (kb) => `${(kb / 1024).toFixed(1)} MB`;
const ratio = (peer, ours) => `${(peer / ours).toFixed(1)}×`;
printTable(
  ["figure", agents[0].name, agents[1].name, "ratio"],
  [
    ["spawn → initialize response", ms(c.initMs), ms(p.initMs), ratio(p.initMs, c.initMs)],
    [`  above the harness's floor (${ms(floorMs)})`, ms(c.initMs - floorMs), ms(p.initMs - floorMs), ratio(p.initMs - floorMs, c.initMs - floorMs)],
    ["session/new", ms(c.newMs), ms(p.newMs), ratio(p.newMs, c.newMs)],
    ["first prompt turn, instant model", ms(c.turnMs), ms(p.turnMs), ratio(p.turnMs, c.turnMs)],
    ["process-tree peak RSS", mb(c.rssKb), mb(p.rssKb), ratio(p.rssKb, c.rssKb)],
  ],
);
console.log(`\nmedians of ${RUNS} runs each, one fresh process per run; Corvid: ${corvidBin()}`);

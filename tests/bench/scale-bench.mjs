// Scale figures, each beside its obvious reference; prints a table (numbers go into issue
// notes, never into timed tests).
//
//   npm run bench:scale   (target/release/corvid or $CORVID_BIN; `rg` on PATH for the references;
//                          BENCH_ONLY=search,glob,edit,list,load,turns runs only those;
//                          BENCH_STORE=none runs the tool agent without a store, to see what
//                          storing the updates costs)
//
// - search / glob: the tools over a generated tree of 100,000 files (about 1 GB, kept in
//   $BENCH_TREE, by default ~/.cache/corvid/bench-tree, and reused), timed from the tool's
//   `tool_call` frame to its final update, against `rg` (contents) and `rg --files -g` (names)
//   on the same tree with the same rules (hidden files, .gitignore without git); warm cache,
//   median of BENCH_RUNS (default 5)
// - session/list: the first page with 10,000 stored sessions (made as forks of one prompted
//   session), in a process that has just started, and again in the same process
// - session/load: replay of a session holding 100,000 updates, request → response in a fresh
//   process, and that process's peak RSS
// - 1,000 turns in one session with `/compact` every 100: the agent's RSS after turns 1, 100,
//   500 and 1,000
// - edit_file on a 50,000-line file (auto-edit mode, so no permission question): tool call →
//   result
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv } from "../support/agent.mjs";
import { median, startCardClient } from "./card-client.mjs";
import { printTable } from "./report.mjs";

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const TREE = process.env.BENCH_TREE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "corvid", "bench-tree");
const INIT = { protocolVersion: 1, clientCapabilities: {} };
const ms = (x) => `${x.toFixed(1)} ms`;
const text = (t) => [{ type: "text", text: t }];

const only = process.env.BENCH_ONLY?.split(",");
const want = (name) => !only || only.includes(name);
const fake = await startFakeModel();
const rows = [];

// ---- the tree: 100 × 10 folders of 100 files, ~10 KB each; 50 files hold a needle ----
const FILES = 100_000;
const NEEDLES = 50;
function makeTree() {
  if (existsSync(join(TREE, ".complete"))) return;
  rmSync(TREE, { recursive: true, force: true });
  // Pseudo-source from a fixed seed: 64 distinct bodies, so the search reads real text.
  let seed = 42;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const words = ["let", "value", "count", "index", "return", "fn", "match", "self", "items", "result", "map", "push", "len", "config", "error"];
  const bodies = Array.from({ length: 64 }, () => {
    let s = "";
    while (s.length < 10_000) s += `    ${Array.from({ length: 8 }, () => words[Math.floor(rand() * words.length)]).join(" ")};\n`;
    return s;
  });
  for (let i = 0; i < FILES; i++) {
    const dir = join(TREE, `d${String(Math.floor(i / 1000)).padStart(2, "0")}`, `s${Math.floor(i / 100) % 10}`);
    if (i % 100 === 0) mkdirSync(dir, { recursive: true });
    const needle = i % (FILES / NEEDLES) === 7 ? `    // NEEDLE_QUUX_${i}\n` : "";
    writeFileSync(join(dir, `f${String(i % 100).padStart(4, "0")}.rs`), `// file ${i}\n${bodies[i % 64]}${needle}`);
  }
  writeFileSync(join(TREE, ".gitignore"), ".complete\n");
  writeFileSync(join(TREE, ".complete"), "");
}
const t0 = performance.now();
if (want("search") || want("glob")) makeTree();
const made = performance.now() - t0;

function hasRg() {
  return new Promise((resolve) => {
    const c = spawn("rg", ["--version"], { stdio: "ignore" });
    c.on("error", () => resolve(false));
    c.on("exit", (code) => resolve(code === 0));
  });
}
/** Runs `rg args` in the tree; its milliseconds and its output's line count (read through a pipe, so rg does not take /dev/null's shortcut). */
function rg(args) {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const c = spawn("rg", args, { cwd: TREE, stdio: ["ignore", "pipe", "inherit"] });
    let lines = 0;
    c.stdout.on("data", (d) => {
      for (const b of d) if (b === 10) lines++;
    });
    c.on("error", reject);
    c.on("close", () => resolve({ ms: performance.now() - start, lines }));
  });
}

const tools = { env: { ...agentEnv({ fake }), CORVID_LOG: "warn" } };
const treeAgent = startCardClient(tools.env, process.env.BENCH_STORE ? ["--store", process.env.BENCH_STORE] : []);
await treeAgent.request("initialize", INIT);
/** Times `call` (a tool call the model makes) RUNS times after one warm-up; checks each result with `ok`. */
async function timeTool(agent, cwd, name, args, ok) {
  const times = [];
  for (let i = 0; i <= RUNS; i++) {
    const marker = `SCALE-${name.toUpperCase()}-${i}-${Math.random()}`;
    fake.script(marker, { steps: [{ toolCalls: [{ name, arguments: typeof args === "function" ? args(i) : args }] }, { chunks: [{ content: "ok" }] }] });
    const { sessionId } = (await agent.request("session/new", { cwd, mcpServers: [] })).result;
    if (agent.mode) await agent.request("session/set_config_option", { sessionId, configId: "mode", value: agent.mode });
    const { ms: t, last } = await agent.timeCall(sessionId, marker);
    ok(last, i);
    if (i > 0) times.push(t);
  }
  return median(times);
}
const rgOk = await hasRg();
const rgMedian = async (args, expect) => {
  if (!rgOk) return null;
  const times = [];
  for (let i = 0; i <= RUNS; i++) {
    const r = await rg(args);
    if (r.lines !== expect) throw new Error(`rg ${args.join(" ")}: ${r.lines} lines, expected ${expect}`);
    if (i > 0) times.push(r.ms);
  }
  return median(times);
};
const vs = (ours, ref, goal) => [ref === null ? "rg not on PATH" : `${ms(ref)} (${(ours / ref).toFixed(2)}×)`, goal];

const PATTERN = "NEEDLE_QUUX_[0-9]+";
if (want("search")) {
  const search = await timeTool(treeAgent, TREE, "search", { pattern: PATTERN }, (last) => {
    if (last.rawOutput?.matches !== NEEDLES) throw new Error(`search found ${JSON.stringify(last.rawOutput)}`);
  });
  const rgSearch = await rgMedian(["-n", "--no-heading", "--hidden", "--no-require-git", "-e", PATTERN], NEEDLES);
  rows.push(["search, 100,000 files (~1 GB), 50 matches", ms(search), ...vs(search, rgSearch, "≤ 1.3× rg")]);
}

// 1,000 files match (f0042.rs in every folder): under the tool's 1,000-path cap.
if (want("glob")) {
  const glob = await timeTool(treeAgent, TREE, "glob", { pattern: "**/f0042.rs" }, (last) => {
    if (last.rawOutput?.count !== 1000 || last.rawOutput?.truncated) throw new Error(`glob found ${JSON.stringify(last.rawOutput)}`);
  });
  const rgGlob = await rgMedian(["--files", "--hidden", "--no-require-git", "-g", "f0042.rs"], 1000);
  rows.push(["glob, same tree, 1,000 matches", ms(glob), ...vs(glob, rgGlob, "")]);
}

// ---- edit_file on a 50,000-line file ----
if (want("edit")) {
  const editDir = realpathSync(mkdtempSync(join(tmpdir(), "corvid-scale-edit-")));
  const big = Array.from({ length: 50_000 }, (_, i) => (i % 5000 === 2500 ? `value_${i / 5000 - 0.5} = 0\n` : `    line ${i}: let value = compute(${i});\n`)).join("");
  writeFileSync(join(editDir, "big.rs"), big);
  treeAgent.mode = "auto-edit";
  const edit = await timeTool(treeAgent, editDir, "edit_file", (i) => ({ path: "big.rs", old_text: `value_${i} = 0`, new_text: `value_${i} = 1` }), (last, i) => {
    if (!readFileSync(join(editDir, "big.rs"), "utf8").includes(`value_${i} = 1`)) throw new Error(`edit ${i} not on disk: ${JSON.stringify(last).slice(0, 300)}`);
  });
  treeAgent.mode = null;
  rows.push(["edit_file, 50,000-line file (2 MB)", ms(edit), "", "≤ 20 ms"]);
}
await treeAgent.close();

// ---- session/list with 10,000 stored sessions ----
if (want("list")) {
  const listEnv = { ...agentEnv({ fake }), CORVID_LOG: "warn" };
  const listCwd = realpathSync(mkdtempSync(join(tmpdir(), "corvid-scale-list-")));
  {
    const a = startCardClient(listEnv);
    await a.request("initialize", INIT);
    fake.script("SCALE-LIST", { chunks: [{ content: "listed" }] });
    const { sessionId } = (await a.request("session/new", { cwd: listCwd, mcpServers: [] })).result;
    await a.request("session/prompt", { sessionId, prompt: text("SCALE-LIST") });
    const forkTimes = [];
    for (let i = 1; i < 10_000; i++) {
      const f0 = performance.now();
      const fork = await a.request("session/fork", { sessionId, cwd: listCwd, mcpServers: [] });
      forkTimes.push(performance.now() - f0);
      if (!fork.result) throw new Error(JSON.stringify(fork));
      // Closed again: a client forking 10,000 times would not keep them all open.
      await a.request("session/close", { sessionId: fork.result.sessionId });
    }
    rows.push(["  (making them: session/fork of a one-turn session)", ms(median(forkTimes)), "", ""]);
    await a.close();
  }
  {
    const firstTimes = [];
    const againTimes = [];
    let total = 0;
    for (let i = 0; i <= RUNS; i++) {
      const a = startCardClient(listEnv);
      await a.request("initialize", INIT);
      let l0 = performance.now();
      let page = await a.request("session/list", {});
      if (i > 0) firstTimes.push(performance.now() - l0);
      l0 = performance.now();
      await a.request("session/list", {});
      if (i > 0) againTimes.push(performance.now() - l0);
      if (i === 0) {
        // Every page once, to check the count.
        total = page.result.sessions.length;
        while (page.result.nextCursor) {
          page = await a.request("session/list", { cursor: page.result.nextCursor });
          total += page.result.sessions.length;
        }
        if (total !== 10_000) throw new Error(`listed ${total}`);
      }
      await a.close();
    }
    rows.push(["session/list, 10,000 sessions: first page, new process", ms(median(firstTimes)), "", "≤ 20 ms"]);
    rows.push(["  the same page again", ms(median(againTimes)), "", ""]);
  }
}

// ---- session/load of a 100,000-update session ----
if (want("load")) {
  const loadEnv = { ...agentEnv({ fake }), CORVID_LOG: "warn" };
  let bigSession;
  {
    const a = startCardClient(loadEnv);
    await a.request("initialize", INIT);
    fake.script("SCALE-100K", { repeat: { content: "tok ", count: 100_000 } });
    bigSession = (await a.request("session/new", { cwd: tmpdir(), mcpServers: [] })).result.sessionId;
    const r = await a.request("session/prompt", { sessionId: bigSession, prompt: text("SCALE-100K") });
    if (r.result?.stopReason !== "end_turn" || a.updates !== 100_000) throw new Error(`${a.updates} updates: ${JSON.stringify(r)}`);
    await a.close();
  }
  {
    const times = [];
    const peaks = [];
    for (let i = 0; i <= RUNS; i++) {
      const a = startCardClient(loadEnv);
      await a.request("initialize", INIT);
      const l0 = performance.now();
      const r = await a.request("session/load", { sessionId: bigSession, cwd: tmpdir(), mcpServers: [] });
      const t = performance.now() - l0;
      if (!r.result || a.updates !== 100_000) throw new Error(`replayed ${a.updates}: ${JSON.stringify(r)}`);
      if (i > 0) {
        times.push(t);
        peaks.push(a.rss().peak);
      }
      await a.close();
    }
    rows.push(["session/load replay, 100,000 updates", ms(median(times)), "", "≤ 300 ms"]);
    rows.push(["  peak RSS of that process", `${median(peaks).toFixed(1)} MB`, "", "bounded"]);
  }
}

// ---- 1,000 turns in one session, /compact every 100 ----
if (want("turns")) {
    const a = startCardClient({ ...agentEnv({ fake }), CORVID_LOG: "warn" });
    await a.request("initialize", INIT);
    fake.script("SCALE-TURN", { chunks: [{ content: "An answer of a few hundred bytes. ".repeat(8) }] });
    const { sessionId } = (await a.request("session/new", { cwd: tmpdir(), mcpServers: [] })).result;
    const at = {};
    const padding = "Some context the user pasted. ".repeat(16);
    for (let turn = 1; turn <= 1000; turn++) {
      const r = await a.request("session/prompt", { sessionId, prompt: text(`SCALE-TURN ${turn} ${padding}`) });
      if (r.result?.stopReason !== "end_turn") throw new Error(`turn ${turn}: ${JSON.stringify(r)}`);
      if (turn % 100 === 0) await a.request("session/prompt", { sessionId, prompt: text("/compact") });
      if ([1, 100, 500, 1000].includes(turn)) at[turn] = a.rss();
    }
    await a.close();
    const mb = (x) => `${x.now.toFixed(1)} MB`;
    rows.push(["RSS in one session after turn 1 / 100 / 500 / 1,000", `${mb(at[1])} / ${mb(at[100])} / ${mb(at[500])} / ${mb(at[1000])}`, "", "bounded"]);
    rows.push(["  peak RSS over the 1,000 turns", `${at[1000].peak.toFixed(1)} MB`, "", ""]);
}

await fake.close();
printTable(["figure", "Corvid", "reference", "goal"], rows);
console.log(`\n${RUNS} timed runs each after one warm-up; tree ${TREE}${made > 1000 ? ` (made in ${(made / 1000).toFixed(0)} s)` : ""}`);

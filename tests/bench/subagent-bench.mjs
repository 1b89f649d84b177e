// What a subagent costs: time from the parent's tool call (its `tool_call` frame) to its result
// (the card's final `tool_call_update`), median over BENCH_RUNS (default 20) turns, with the fake
// model answering instantly. Compared: a direct `read_file`; `delegate` whose child answers at
// once (one extra model request); `delegate` whose child reads the file first (two), each with
// and without the `subagents` client capability.
//
//   npm run bench:subagents   (uses target/release/corvid or $CORVID_BIN)
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { agentEnv } from "../support/agent.mjs";
import { median, startCardClient } from "./card-client.mjs";
import { printTable } from "./report.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const RUNS = Number(process.env.BENCH_RUNS ?? 20);

const server = spawn(process.execPath, [join(here, "fake-server.mjs")], { stdio: ["ignore", "pipe", "inherit"] });
const [urlLine] = await once(server.stdout, "data");
const env = { ...agentEnv({ fake: { url: urlLine.toString().trim() } }), CORVID_LOG: "warn" };
const cwd = realpathSync(mkdtempSync(join(tmpdir(), "corvid-subbench-")));
writeFileSync(join(cwd, "notes.txt"), "the notes say hello\n");

async function measure(marker, subagents) {
  const agent = startCardClient(env);
  await agent.request("initialize", { protocolVersion: 1, clientCapabilities: subagents ? { subagents: {} } : {} });
  const times = [];
  for (let i = 0; i < RUNS + 2; i++) {
    // A fresh session each time: the parent's context stays one turn long.
    const { result } = await agent.request("session/new", { cwd, mcpServers: [] });
    const { ms } = await agent.timeCall(result.sessionId, marker);
    if (i >= 2) times.push(ms); // the first turns warm up the connection pool and the store
  }
  await agent.close();
  return median(times);
}

const direct = await measure("BENCH-TOOL-DIRECT", false);
const rows = [["read_file, direct", `${direct.toFixed(2)} ms`, ""]];
for (const subagents of [false, true]) {
  const caps = subagents ? "with `subagents`" : "without `subagents`";
  for (const [marker, what] of [
    ["BENCH-TOOL-DELEGATE-ANSWER", "delegate, child answers at once"],
    ["BENCH-TOOL-DELEGATE-READ", "delegate, child reads the file"],
  ]) {
    const t = await measure(marker, subagents);
    rows.push([`${what} (${caps})`, `${t.toFixed(2)} ms`, `+${(t - direct).toFixed(2)} ms`]);
  }
}
printTable(["tool call → result (median of " + RUNS + ")", "time", "vs direct"], rows);
server.kill("SIGTERM");

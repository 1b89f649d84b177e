// A long tool-heavy session through compaction; prints a table (figures go into issue notes).
//
//   npm run bench:context   (target/release/corvid or $CORVID_BIN; BENCH_TURNS, default 200;
//                            BENCH_WINDOW, the window in tokens, default 32,000)
//
// Each turn reads one of 50 files of 8 KB and answers. The fake server refuses any request
// over the window (bytes / 4), so a session that failed to compact would fail its turns. The
// table: turns that ended `end_turn`, compactions (summary requests), refusals, the largest
// request sent, the agent's peak RSS, and the wall time per turn.
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv } from "../support/agent.mjs";
import { startCardClient } from "./card-client.mjs";
import { printTable } from "./report.mjs";

const TURNS = Number(process.env.BENCH_TURNS ?? 200);
const WINDOW = Number(process.env.BENCH_WINDOW ?? 32_000);
const text = (t) => [{ type: "text", text: t }];

const fake = await startFakeModel();
const root = join(realpathSync(mkdtempSync(join(tmpdir(), "corvid-context-bench-"))), "project");
mkdirSync(root);
for (let i = 0; i < 50; i++) {
  const lines = Array.from({ length: 120 }, (_, l) => `fn f${i}_${l}(x: i32) -> i32 { x * ${l} + ${i} } // filler`);
  writeFileSync(join(root, `f${i}.rs`), lines.join("\n") + "\n");
}
fake.script("Summarize the conversation so far", { chunks: [{ content: "SUMMARY: the user asked for files to be read; each was read; nothing changed." }] });
fake.limitContext(WINDOW);

const rows = [];
for (const configured of [true, false]) {
  const config = configured ? `[models."fake-model"]\ncontext_window = ${WINDOW}\n` : "";
  const a = startCardClient(agentEnv({ fake, config }));
  await a.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const { result } = await a.request("session/new", { cwd: root, mcpServers: [] });
  const sessionId = result.sessionId;
  await a.request("session/set_config_option", { sessionId, configId: "mode", value: "full" });
  const from = fake.requests.length;
  let ended = 0;
  const started = performance.now();
  for (let turn = 0; turn < TURNS; turn++) {
    const marker = `BENCH<${configured}-${turn}>`;
    fake.script(marker, { steps: [{ toolCalls: [{ name: "read_file", arguments: { path: `f${turn % 50}.rs` } }] }, { chunks: [{ content: `read f${turn % 50}` }] }] });
    const r = await a.request("session/prompt", { sessionId, prompt: text(marker) });
    if (r.result?.stopReason === "end_turn") ended++;
  }
  const elapsed = performance.now() - started;
  const sent = fake.requests.slice(from).filter((r) => r.body);
  const summaries = sent.filter((r) => JSON.stringify(r.body.messages.at(-1)).includes("Summarize the conversation so far")).length;
  const refused = sent.filter((r) => r.refused).length;
  const largest = Math.max(...sent.filter((r) => !r.refused).map((r) => r.bytes));
  rows.push([
    configured ? "configured" : "found by refusal",
    `${ended}/${TURNS}`,
    String(summaries),
    String(refused),
    `${(largest / 1024).toFixed(1)} KB (~${Math.round(largest / 4)} tok)`,
    `${a.rss().peak.toFixed(1)} MB`,
    `${(elapsed / TURNS).toFixed(1)} ms`,
  ]);
  await a.close();
}
await fake.close();
console.log(`\n${TURNS} turns, each a read_file of an 8 KB file, window ${WINDOW} tokens\n`);
printTable(["window", "end_turn", "compactions", "refused", "largest request", "peak RSS", "per turn"], rows);

// What prompt caching saves: a 30-request Anthropic tool loop against the fake server billing
// as Anthropic's prompt cache does (`fake.billCache`); prints a table (figures go into issue
// notes).
//
//   npm run bench:cache   (target/release/corvid or $CORVID_BIN; BENCH_REQUESTS, default 30)
//
// One prompt whose model reads a 4 KB file per request, 29 times, then answers. The cost is
// claude-sonnet-4-5's (per million: $3 input, $3.75 cache write, $0.30 cache read, $15 output);
// "without caching" prices the same requests' input at the input rate alone.
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv } from "../support/agent.mjs";
import { startCardClient } from "./card-client.mjs";
import { printTable } from "./report.mjs";

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 30);
const PRICE = { input: 3, write: 3.75, read: 0.3, output: 15 };

const fake = await startFakeModel();
fake.billCache(true);
const root = join(realpathSync(mkdtempSync(join(tmpdir(), "corvid-cache-bench-"))), "project");
mkdirSync(root);
for (let i = 0; i < REQUESTS; i++) writeFileSync(join(root, `f${i}.txt`), `line of file ${i}\n`.repeat(256));

const steps = Array.from({ length: REQUESTS - 1 }, (_, i) => ({ toolCalls: [{ name: "read_file", id: `toolu_${i}`, arguments: { path: `f${i}.txt` } }] }));
steps.push({ chunks: [{ content: "read them all" }] });
fake.script("CACHE-BENCH", { steps });

const a = startCardClient(agentEnv({ fake, model: "claude-sonnet-4-5", extra: { CORVID_PROVIDER: "anthropic" }, config: "[limits]\nmax_turn_requests = 100\n" }));
await a.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
const { result } = await a.request("session/new", { cwd: root, mcpServers: [] });
await a.request("session/set_config_option", { sessionId: result.sessionId, configId: "mode", value: "full" });
const r = await a.request("session/prompt", { sessionId: result.sessionId, prompt: [{ type: "text", text: "CACHE-BENCH" }] });
await a.close();
await fake.close();

const billed = fake.requests.filter((q) => q.api === "anthropic" && q.usage);
const sum = (f) => billed.reduce((s, q) => s + f(q.usage), 0);
const input = sum((u) => u.input_tokens);
const read = sum((u) => u.cache_read_input_tokens);
const write = sum((u) => u.cache_creation_input_tokens);
const output = billed.length * 5;
const withCache = (input * PRICE.input + write * PRICE.write + read * PRICE.read + output * PRICE.output) / 1e6;
const without = ((input + read + write) * PRICE.input + output * PRICE.output) / 1e6;
console.log(`\n${billed.length} requests in one turn (stop: ${r.result?.stopReason ?? JSON.stringify(r.error)}), claude-sonnet-4-5 prices\n`);
printTable(
  ["", "input tokens", "uncached", "cache write", "cache read", "cost"],
  [
    ["without caching", String(input + read + write), String(input + read + write), "0", "0", `$${without.toFixed(4)}`],
    ["with caching", String(input + read + write), String(input), String(write), String(read), `$${withCache.toFixed(4)} (${((withCache / without) * 100).toFixed(0)} %)`],
  ],
);

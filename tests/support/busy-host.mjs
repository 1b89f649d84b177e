// A Node host whose main thread is busy while the in-process agent streams (for
// tests/addon/addon.test.mjs): one turn through the raw NativeAgent, and right after its first
// chunk a synchronous wait of BUSY_MS on the main thread. Prints one JSON line: how much the
// process's RSS grew during the wait, the chunks that arrived (in all, and before the prompt's
// answer), and the stop reason.
//   node busy-host.mjs '<NativeAgent options JSON>' <prompt text>
import { NativeAgent } from "corvid-acp";
const opts = JSON.parse(process.argv[2]);
const marker = process.argv[3];
const waiters = new Map();
const keepAlive = setInterval(() => {}, 1000);
let chunks = 0, chunksBeforeAnswer = -1, firstChunk;
const chunkSeen = new Promise((r) => (firstChunk = r));
const agent = new NativeAgent(opts, (m) => {
  if (!m) return;
  const f = JSON.parse(m);
  if ("id" in f && !("method" in f)) {
    if (f.id === 3) chunksBeforeAnswer = chunks;
    waiters.get(f.id)?.(f);
  }
  if (f.params?.update?.sessionUpdate === "agent_message_chunk") { chunks++; firstChunk(); }
});
const req = (id, method, params) => new Promise((r) => { waiters.set(id, r); agent.send(JSON.stringify({ jsonrpc: "2.0", id, method, params })); });
await req(1, "initialize", { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "bp", version: "1" } });
const { result } = await req(2, "session/new", { cwd: process.cwd(), mcpServers: [] });
const answered = req(3, "session/prompt", { sessionId: result.sessionId, prompt: [{ type: "text", text: marker }] });
await chunkSeen;
const before = process.memoryUsage().rss;
// The main thread is busy (a long synchronous task) while the agent streams.
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Number(process.env.BUSY_MS ?? 3000));
const during = process.memoryUsage().rss;
const response = await answered;
await agent.close();
clearInterval(keepAlive);
console.log(JSON.stringify({ grownMB: (during - before) / 1e6, chunks, chunksBeforeAnswer, stop: response.result?.stopReason }));

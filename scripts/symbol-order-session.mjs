// The session scripts/symbol-order.mjs traces: what an editor's typical use of `corvid acp`
// runs (initialize, a new session, a streamed answer with a thought, an edit the user allows,
// the file tools, a command through the sandbox launcher, session/list, session/load), against
// the fake model. $CORVID_BIN
// is the binary, or a wrapper that runs it under valgrind (hence the long deadlines).
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeModel } from "../tests/support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../tests/support/agent.mjs";

const SLOW = 600_000;
const fake = await startFakeModel();
const cwd = mkdtempSync(join(tmpdir(), "corvid-symbol-order-"));
writeFileSync(join(cwd, "a.txt"), "header\n" + "alpha\nbeta\ngamma\n".repeat(50));
fake.script("CHAT", { chunks: [{ reasoning: "Thinking. " }, ...Array.from({ length: 100 }, (_, i) => ({ content: `word${i} ` }))] });
fake.script("ASK", {
  steps: [{ toolCalls: [{ name: "edit_file", arguments: { path: "a.txt", old_text: "header", new_text: "HEADER" } }] }, { chunks: [{ content: "Edited." }] }],
});
fake.script("TOOLS", {
  steps: [
    { toolCalls: [{ name: "read_file", arguments: { path: "a.txt" } }, { name: "list_directory", arguments: { path: "." } }] },
    { toolCalls: [{ name: "edit_file", arguments: { path: "a.txt", old_text: "alpha\nbeta\ngamma\nalpha", new_text: "ALPHA\nbeta\ngamma\nalpha" } }] },
    { toolCalls: [{ name: "write_file", arguments: { path: "b.txt", content: "new file\n" } }, { name: "search", arguments: { pattern: "gamma" } }] },
    { toolCalls: [{ name: "glob", arguments: { pattern: "*.txt" } }, { name: "run_command", arguments: { command: "ls" } }] },
    { chunks: [{ content: "Done." }] },
  ],
});

const agent = spawnAgent({ env: agentEnv({ fake }) });
const ask = async (id, method, params) => {
  const r = await agent.request(id, method, params, SLOW);
  if (r.error) throw new Error(`${method}: ${JSON.stringify(r.error)}`);
  return r.result;
};
// Capabilities spelled out as editors send them (their parsing is code too); the file tools
// run locally.
const capabilities = { fs: { readTextFile: false, writeTextFile: false }, terminal: false };
await ask(1, "initialize", { protocolVersion: 1, clientCapabilities: capabilities, clientInfo: { name: "trace", version: "1" } });
const { sessionId } = await ask(2, "session/new", { cwd, mcpServers: [] });
await ask(3, "session/prompt", { sessionId, prompt: [{ type: "text", text: "CHAT" }] });
// An edit in the default mode: the user is asked, and allows it.
const asked = agent.request(30, "session/prompt", { sessionId, prompt: [{ type: "text", text: "ASK" }] }, SLOW);
const question = await Promise.race([
  agent.waitFor((f) => f.method === "session/request_permission", SLOW, "a permission request"),
  asked.then((r) => Promise.reject(new Error(`the turn ended without asking: ${JSON.stringify(r)}`))),
]);
agent.send({ jsonrpc: "2.0", id: question.id, result: { outcome: { outcome: "selected", optionId: "allow_once" } } });
if ((await asked).result?.stopReason !== "end_turn") throw new Error("the asked edit did not end its turn");
await ask(4, "session/set_config_option", { sessionId, configId: "mode", value: "full" });
const turn = await ask(5, "session/prompt", { sessionId, prompt: [{ type: "text", text: "TOOLS" }] });
if (turn.stopReason !== "end_turn") throw new Error(`the tool turn ended with ${turn.stopReason}`);
await ask(6, "session/list", {});
await ask(7, "session/load", { sessionId, cwd, mcpServers: [] });
await agent.stop();
await fake.close();

// `corvid acp` driven by the official TypeScript SDK 1.9.0 (`ClientSideConnection`), the API
// most shipping ACP clients were written against.
import assert from "node:assert/strict";
import { tmpdir } from "node:os";
import { after, before, test } from "node:test";
import * as acp1 from "acp-sdk-v1";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent, textOf } from "../support/agent.mjs";

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

async function connect() {
  const agent = spawnAgent({ env: agentEnv({ fake }) });
  const updates = [];
  const client = {
    async sessionUpdate(params) {
      updates.push(params);
    },
    async requestPermission() {
      return { outcome: { outcome: "cancelled" } };
    },
  };
  const conn = new acp1.ClientSideConnection(() => client, await agent.sdkStream(acp1.ndJsonStream));
  return { agent, conn, updates };
}

test("SDK 1.x: handshake, prompt with streaming, cancel", async () => {
  const { agent, conn, updates } = await connect();
  try {
    const init = await conn.initialize({
      protocolVersion: acp1.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
      clientInfo: { name: "v1-client", version: "1.9.0" },
    });
    assert.equal(init.protocolVersion, 1);
    assert.equal(init.agentInfo.name, "corvid");

    fake.script("V1-HELLO", { chunks: [{ reasoning: "hmm" }, { content: "Hi " }, { content: "there" }] });
    const { sessionId } = await conn.newSession({ cwd: tmpdir(), mcpServers: [] });
    const res = await conn.prompt({ sessionId, prompt: [{ type: "text", text: "V1-HELLO" }] });
    assert.equal(res.stopReason, "end_turn");
    const mine = updates.filter((u) => u.sessionId === sessionId).map((u) => u.update);
    assert.equal(textOf(mine, "agent_message_chunk"), "Hi there");
    assert.equal(textOf(mine, "agent_thought_chunk"), "hmm");

    fake.script("V1-LONG", { chunks: Array.from({ length: 100 }, () => ({ content: "x" })), delayMs: 15 });
    const pending = conn.prompt({ sessionId, prompt: [{ type: "text", text: "V1-LONG" }] });
    await agent.waitFor((f) => f.method === "session/update" && f.params.update.content?.text === "x");
    await conn.cancel({ sessionId });
    assert.equal((await pending).stopReason, "cancelled");
    assert.deepEqual(agent.violations, []);
  } finally {
    await agent.stop();
  }
});

test("SDK 1.x: errors surface as RequestError with the agent's code", async () => {
  const { agent, conn } = await connect();
  try {
    await conn.initialize({ protocolVersion: 1, clientCapabilities: {} });
    await assert.rejects(conn.newSession({ cwd: "not/absolute", mcpServers: [] }), (e) => e.code === -32602 && /absolute/.test(e.message));
    await assert.rejects(conn.prompt({ sessionId: "missing", prompt: [{ type: "text", text: "x" }] }), (e) => e.code === -32002);
    assert.deepEqual(agent.violations, []);
  } finally {
    await agent.stop();
  }
});

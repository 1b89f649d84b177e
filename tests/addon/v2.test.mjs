// ACP v2 (preview) in-process: the shared scenarios (tests/support/v2-scenarios.mjs) against
// the napi addon through the `corvid-acp` package, plus a session made over v1 in-process and
// resumed over v2. Scripted fake model over loopback HTTP, a real SQLite file.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import * as acp1 from "@agentclientprotocol/sdk";
import * as acp from "@agentclientprotocol/sdk/experimental/v2";
import { createAgent } from "corvid-acp";
import { startFakeModel } from "../support/fake-model.mjs";
import { CLOSED_URL } from "../support/agent.mjs";
import { tapStream } from "../support/tap.mjs";
import { v2Validator } from "../support/schema.mjs";
import { connect, idleWith, marker, registerV2Scenarios, text, workspace } from "../support/v2-scenarios.mjs";

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

/** The addon in this process; a place is createAgent's options (config, data dir, model). */
const addon = {
  name: "addon",
  place({ model }) {
    const dir = mkdtempSync(join(tmpdir(), "corvid-addon-v2-"));
    const configFile = join(dir, "config.toml");
    writeFileSync(configFile, `[discovery]\nollama_url = "${CLOSED_URL}"\n`);
    const options = { configFile, dataDir: join(dir, "data") };
    return model ? { ...options, baseUrl: fake.url, model: "fake-model", apiKey: "k" } : options;
  },
  async open(options) {
    let logs = "";
    const stream = tapStream(createAgent({ ...options, onLog: (line) => (logs += `${line}\n`) }), v2Validator().validateAgentFrame);
    return { stream, frames: stream.frames, violations: stream.violations, logs: () => logs, stop: () => stream.close() };
  },
};

registerV2Scenarios(addon, () => fake);

test("a session made over v1 in-process resumes over v2 in-process, its history in v2's words [addon]", async () => {
  const place = addon.place({ model: true });
  const cwd = workspace();
  const m = marker("ADDON-V1");
  fake.script(m, { chunks: [{ content: "said over v1" }] });
  const v1 = tapStream(createAgent(place));
  const conn1 = acp1.client({ name: "addon-v1" }).connect(v1);
  await conn1.agent.request(acp1.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
  const { sessionId } = await conn1.agent.request(acp1.methods.agent.session.new, { cwd, mcpServers: [] });
  const r = await conn1.agent.request(acp1.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: `${m} hi` }] });
  assert.equal(r.stopReason, "end_turn");
  await v1.close();
  conn1.close();
  assert.deepEqual(v1.violations, []);

  const c = await connect(addon, { place });
  await c.ctx.request(acp.methods.agent.session.resume, { sessionId, cwd, replayFrom: { type: "start" } });
  const ups = c.of(sessionId);
  assert.equal(ups.find((u) => u.sessionUpdate === "user_message").content[0].text, `${m} hi`);
  // The reply, stored as chunks, replays whole (issue 44; it was replayed as its chunks).
  assert.deepEqual(ups.filter((u) => u.sessionUpdate === "agent_message").map((u) => u.content), [[{ type: "text", text: "said over v1" }]]);
  assert.ok(!ups.some((u) => u.sessionUpdate === "agent_message_chunk"));
  const m2 = marker("ADDON-V2");
  fake.script(m2, { chunks: [{ content: "and over v2" }] });
  await c.prompt(sessionId, m2);
  await c.until(sessionId, (u) => idleWith("end_turn")(u) && text(c.of(sessionId), "agent_message_chunk").endsWith("and over v2"), 10000, "the v2 turn");
  await c.done();
});

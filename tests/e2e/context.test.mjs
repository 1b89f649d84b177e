// What the model sees, through the real binary and a scripted model: the system prompt's
// environment and instruction files (CLAUDE.md, the user's own, a nested one after a read
// beneath it), long sessions that stay inside a small window (compacted before the request,
// or after the server refused one), and long outputs capped for the model with the whole
// saved beside. Every frame is schema-validated.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../support/agent.mjs";

const call = (name, args) => ({ toolCalls: [{ name, arguments: args }] });
const say = (text) => ({ chunks: [{ content: text }] });
const SUMMARY_MARKER = "Summarize the conversation so far";

/** A project (a git repository on branch `feature-x`) with twenty 6 KB files. */
function project() {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "corvid-context-")));
  const root = join(base, "project");
  mkdirSync(join(root, "sub", "deeper"), { recursive: true });
  execFileSync("git", ["init", "-q", "-b", "feature-x", root]);
  for (let i = 0; i < 20; i++) {
    const lines = Array.from({ length: 100 }, (_, l) => `file ${i} line ${l}: ${"lorem ipsum ".repeat(4)}`);
    writeFileSync(join(root, `file${i}.txt`), lines.join("\n") + "\n");
  }
  writeFileSync(join(root, "CLAUDE.md"), "PROJECT-RULE: use tabs, never spaces.\n");
  writeFileSync(join(root, "sub", "AGENTS.md"), "SUB-RULE: files here are generated; never edit them.\n");
  writeFileSync(join(root, "sub", "deeper", "data.txt"), "deep data\n");
  return { base, root };
}

/** An agent with a session in `root`, in full-access mode; `prompt(spec)` scripts one turn. */
async function start(fake, root, { config = "", capabilities = {} } = {}) {
  const env = agentEnv({ fake, config });
  writeFileSync(join(dirname(env.CORVID_CONFIG), "AGENTS.md"), "USER-RULE: answer in English.\n");
  const agent = spawnAgent({ env });
  await agent.request("i", "initialize", { protocolVersion: 1, clientCapabilities: capabilities });
  const sessionId = (await agent.request("n", "session/new", { cwd: root, mcpServers: [] })).result.sessionId;
  await agent.request("m", "session/set_config_option", { sessionId, configId: "mode", value: "full" });
  let n = 0;
  const prompt = async (steps, ms = 20000) => {
    const marker = `CTX<${++n}>`;
    fake.script(marker, { steps });
    const r = await agent.request(`p${n}`, "session/prompt", { sessionId, prompt: [{ type: "text", text: marker }] }, ms);
    assert.ok(r.result, JSON.stringify(r.error));
    return r.result;
  };
  return { agent, env, sessionId, prompt };
}

/** The model's requests for turns (not the summaries), and the summary requests. */
const split = (fake) => ({
  turns: fake.requests.filter((r) => r.body && !JSON.stringify(r.body.messages.at(-1)).includes(SUMMARY_MARKER)),
  summaries: fake.requests.filter((r) => r.body && JSON.stringify(r.body.messages.at(-1)).includes(SUMMARY_MARKER)),
});

test("the system prompt says where, when, how and what the project and the user ask; nested rules come with a read", async () => {
  const fake = await startFakeModel();
  const { root } = project();
  const t = await start(fake, root);
  await t.prompt([say("hello")]);
  const system = fake.requests.at(-1).body.messages[0];
  assert.equal(system.role, "system");
  const today = new Date();
  const date = `${today.getFullYear()}-${String(today.getMonth() + 1).padStart(2, "0")}-${String(today.getDate()).padStart(2, "0")}`;
  assert.match(system.content, /Commands run with: \S*sh -c/);
  for (const needle of ["Operating system: Linux", `Today's date: ${date}`, "branch feature-x", "Permission mode: Full access", "PROJECT-RULE", "USER-RULE", `Working directory: ${root}`]) {
    assert.ok(system.content.includes(needle), `${needle} in:\n${system.content}`);
  }
  assert.ok(system.content.indexOf("USER-RULE") < system.content.indexOf("PROJECT-RULE"), "the user's file first");
  assert.ok(!system.content.includes("SUB-RULE"), "a nested file waits for a read beneath it");

  // A read beneath sub/ brings its AGENTS.md, once.
  await t.prompt([call("read_file", { path: "sub/deeper/data.txt" }), say("read")]);
  const result = fake.requests.at(-1).body.messages.filter((m) => m.role === "tool").at(-1).content;
  assert.match(result, /deep data/);
  assert.match(result, /SUB-RULE: files here are generated/);
  await t.prompt([call("list_directory", { path: "sub" }), say("listed")]);
  const again = fake.requests.at(-1).body.messages.filter((m) => m.role === "tool").at(-1).content;
  assert.ok(!again.includes("SUB-RULE"), again);
  // The prefix is the same from request to request (provider caches rely on it).
  const systems = new Set(fake.requests.filter((r) => r.body).map((r) => r.body.messages[0].content));
  assert.equal(systems.size, 1);
  await t.agent.stop();
  assert.deepEqual(t.agent.violations, []);
  await fake.close();
});

/** Sixteen turns, each reading a 6 KB file, against a server that refuses past 12,000 tokens. */
async function longSession({ config, capabilities }) {
  const fake = await startFakeModel();
  const { root } = project();
  const t = await start(fake, root, { config, capabilities });
  fake.script(SUMMARY_MARKER, { chunks: [{ content: "SUMMARY: files were read one by one; nothing was changed." }] });
  fake.limitContext(12000);
  const stops = [];
  for (let i = 0; i < 16; i++) {
    const r = await t.prompt([call("read_file", { path: `file${i}.txt` }), say(`read file ${i}`)]);
    stops.push(r.stopReason);
  }
  return { fake, t, stops, root };
}

test("a long session stays in a configured window: compacted before any request is refused", async () => {
  const { fake, t, stops, root } = await longSession({
    config: '[models."fake-model"]\ncontext_window = 12000\n',
    capabilities: { session: { compaction: {} } },
  });
  assert.deepEqual(stops, Array(16).fill("end_turn"));
  const { turns, summaries } = split(fake);
  assert.equal(fake.requests.filter((r) => r.refused).length, 0, "nothing was refused");
  assert.ok(summaries.length >= 2, `${summaries.length} compactions`);
  for (const s of summaries) assert.ok(s.body.tools?.length > 0, "the summary request carries the tools");
  assert.ok(Math.max(...fake.requests.filter((r) => r.body).map((r) => r.bytes)) <= 48000);
  // The last request: the summary, then recent work verbatim; the model still reads its latest file.
  const last = turns.at(-1).body.messages;
  assert.ok(last.some((m) => m.role === "user" && m.content.includes("SUMMARY: files were read")));
  assert.ok(last.some((m) => m.role === "tool" && m.content.includes("file 15 line 0")));
  // The client saw each compaction, and a reload replays them as they were.
  const updates = t.agent.updates(t.sessionId);
  const done = updates.filter((u) => u.sessionUpdate === "compaction_update" && u.status === "completed");
  assert.equal(done.length, summaries.length);
  const usage = updates.filter((u) => u.sessionUpdate === "usage_update").at(-1);
  assert.equal(usage.size, 12000, "usage_update's size is the model's window");
  const before = t.agent.frames.length;
  const loaded = await t.agent.request("load", "session/load", { sessionId: t.sessionId, cwd: root, mcpServers: [] }, 10000);
  assert.ok(loaded.result, JSON.stringify(loaded.error));
  const replayed = t.agent.frames.slice(before).filter((f) => f.params?.update?.sessionUpdate === "compaction_update");
  assert.deepEqual(
    replayed.map((f) => f.params.update),
    updates.filter((u) => u.sessionUpdate === "compaction_update"),
    "the replay shows the compactions as the client saw them",
  );
  await t.agent.stop();
  assert.deepEqual(t.agent.violations, []);
  await fake.close();
});

for (const api of ["openai", "anthropic"]) {
  test(`a long session survives a window nobody configured: the ${api} server's refusal compacts and retries`, async () => {
    const fake = await startFakeModel();
    const { root } = project();
    const env = agentEnv({ fake, extra: api === "anthropic" ? { CORVID_PROVIDER: "anthropic" } : {} });
    const agent = spawnAgent({ env });
    await agent.request("i", "initialize", { protocolVersion: 1, clientCapabilities: {} });
    const sessionId = (await agent.request("n", "session/new", { cwd: root, mcpServers: [] })).result.sessionId;
    await agent.request("m", "session/set_config_option", { sessionId, configId: "mode", value: "full" });
    fake.script(SUMMARY_MARKER, { chunks: [{ content: "SUMMARY: files were read one by one." }] });
    fake.limitContext(12000);
    const stops = [];
    for (let i = 0; i < 16; i++) {
      const marker = `OVER<${api}-${i}>`;
      fake.script(marker, { steps: [call("read_file", { path: `file${i}.txt` }), say(`read file ${i}`)] });
      const r = await agent.request(`p${i}`, "session/prompt", { sessionId, prompt: [{ type: "text", text: marker }] }, 20000);
      assert.ok(r.result, JSON.stringify(r.error));
      stops.push(r.result.stopReason);
    }
    assert.deepEqual(stops, Array(16).fill("end_turn"));
    const refused = fake.requests.filter((r) => r.refused).length;
    assert.ok(refused >= 1, "the window was found by a refusal");
    assert.ok(refused <= 3, `${refused} refusals: the session learned the window and compacts before it`);
    const { summaries } = split(fake);
    assert.ok(summaries.length >= 2);
    for (const s of summaries) assert.ok(s.body.tools?.length > 0, "the summary request carries the tools");
    const said = agent.updates(sessionId).filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");
    assert.match(said, /Context compacted/);
    assert.doesNotMatch(said, /check that model/);
    await agent.stop();
    assert.deepEqual(agent.violations, []);
    await fake.close();
  });
}

test("a 2 MB command output and a 2 MB one-line file reach the model capped, head and tail, the whole saved", async () => {
  const fake = await startFakeModel();
  const { root } = project();
  writeFileSync(join(root, "minified.js"), `BEGIN${"x".repeat(2_000_000)}END`);
  const t = await start(fake, root);
  await t.prompt([call("run_command", { command: "seq 1 300000" }), say("ran")], 30000);
  const toolResult = () => fake.requests.at(-1).body.messages.filter((m) => m.role === "tool").at(-1).content;
  const out = toolResult();
  assert.ok(out.length < 34 * 1024, `${out.length} bytes`);
  assert.match(out, /^1\n2\n3\n/);
  assert.match(out, /299999\n300000\n\[exit code 0\]$/);
  const saved = out.match(/saved in (\S+): read_file it with offset=(\d+)/);
  assert.ok(saved, out.slice(16000, 16600));
  assert.equal(saved[1], join(t.env.CORVID_DATA_DIR, "outputs", t.sessionId, "t1-1.txt"));
  // The model pages through the saved output with read_file.
  await t.prompt([call("read_file", { path: saved[1], offset: 150000, limit: 2 }), say("paged")]);
  assert.match(toolResult(), /^150000\t150000\n150001\t150001\n/m);
  await t.prompt([call("read_file", { path: "minified.js" }), say("read")]);
  const file = toolResult();
  assert.ok(file.length < 4000, `${file.length} bytes`);
  assert.match(file, /BEGIN/);
  assert.match(file, /END\n/);
  await t.agent.stop();
  assert.deepEqual(t.agent.violations, []);
  await fake.close();
});

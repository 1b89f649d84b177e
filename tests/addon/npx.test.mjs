// `npx corvid-acp` (bin/corvid-acp.mjs): the in-process agent served over stdio as `corvid acp`
// serves it, driven with raw lines (every frame schema-validated, nothing but frames on
// stdout): a prompt turn against the fake model, bad input answered without harm, the end of
// stdin ending the process, and the ACP Registry's own auth check (tests/registry).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../support/agent.mjs";
import { authCheck } from "../registry/checks.mjs";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const bin = join(repo, "bin", "corvid-acp.mjs");
let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

const spawnNpx = (env, args = []) => spawnAgent({ env, bin: process.execPath, args: [bin, ...args] });

test("a prompt turn over stdio; a bad line gets -32700 and the next request still works; EOF ends it", async () => {
  const agent = spawnNpx(agentEnv({ fake }));
  const init = await agent.request("i", "initialize", { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "npx-test", version: "1" } }, 15000);
  assert.equal(init.result.protocolVersion, 1);
  assert.equal(init.result.agentInfo.name, "corvid");
  agent.write("{not json");
  const bad = await agent.waitFor((f) => f.error?.code === -32700, 5000, "the parse error");
  assert.equal(bad.id, null);
  const { sessionId } = (await agent.request("n", "session/new", { cwd: repo, mcpServers: [] })).result;
  fake.script("NPX-TURN", { chunks: [{ content: "from " }, { content: "npx" }] });
  const answer = await agent.request("p", "session/prompt", { sessionId, prompt: [{ type: "text", text: "NPX-TURN" }] }, 15000);
  assert.equal(answer.result.stopReason, "end_turn");
  const text = agent.updates(sessionId).filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");
  assert.equal(text, "from npx");
  agent.child.stdin.end();
  const exit = await agent.exited;
  assert.equal(exit.code, 0, agent.stderr);
  assert.deepEqual(agent.violations, [], "every stdout line is a valid ACP frame");
});

test("flags: --version, --help, and an unknown one refused on stderr with nothing on stdout", () => {
  for (const [args, code, stdout] of [[["--version"], 0, /^corvid-acp \d+\.\d+\.\d+\n$/], [["acp", "--help"], 0, /^usage: corvid-acp/], [["--bogus"], 2, /^$/]]) {
    const r = spawnSync(process.execPath, [bin, ...args], { encoding: "utf8", input: "" });
    assert.equal(r.status, code, `${args}: ${r.stderr}`);
    assert.match(r.stdout, stdout, `${args}`);
    if (code !== 0) assert.match(r.stderr, /^corvid-acp: /);
  }
});

test("the ACP Registry's auth check passes against `node bin/corvid-acp.mjs`", async () => {
  const { problems, response } = await authCheck(process.execPath, [bin], { timeoutMs: 60_000 });
  assert.deepEqual(problems, []);
  assert.ok(response.result.authMethods.some((m) => m.type === "terminal"), "the validator signals terminal auth");
});

test("terminal sign-in: the client runs the method's `--login` in a pseudo-terminal, then session/new works on the same connection", async () => {
  const env = agentEnv(); // no provider configured
  const agent = spawnNpx(env);
  const init = await agent.request("i", "initialize", { protocolVersion: 1, clientCapabilities: { _meta: { "terminal-auth": true } } }, 15000);
  const method = init.result.authMethods.find((m) => m.type === "terminal");
  assert.deepEqual(method?.args, ["--login"], JSON.stringify(init.result.authMethods));
  const before = await agent.request("n0", "session/new", { cwd: tmpdir(), mcpServers: [] });
  assert.equal(before.error?.code, -32000, JSON.stringify(before));
  // What the client does: the agent's own command (here `node bin/corvid-acp.mjs`) with the
  // method's args, in a terminal the user types into (a scripted provider URL, model and key).
  const ptyRun = join(repo, "tests", "support", "pty-run.py");
  const answers = `openai\n${fake.url}\nfake-model\nsk-from-npx\n`;
  const login = spawnSync("python3", [ptyRun, process.execPath, bin, ...method.args], { env, input: answers, encoding: "utf8", timeout: 20000 });
  assert.equal(login.status, 0, login.stdout + login.stderr);
  assert.match(login.stdout, /Saved to /);
  assert.match(readFileSync(env.CORVID_CONFIG, "utf8"), /api_key = "sk-from-npx"/);
  const s = await agent.request("n1", "session/new", { cwd: tmpdir(), mcpServers: [] });
  assert.ok(s.result?.sessionId, JSON.stringify(s));
  fake.script("NPX-AFTER-LOGIN", { chunks: [{ content: "signed in" }] });
  const r = await agent.request("p", "session/prompt", { sessionId: s.result.sessionId, prompt: [{ type: "text", text: "NPX-AFTER-LOGIN" }] }, 15000);
  assert.equal(r.result.stopReason, "end_turn");
  assert.equal(fake.requests.at(-1).headers.authorization, "Bearer sk-from-npx");
  await agent.stop();
  assert.deepEqual(agent.violations, []);
});

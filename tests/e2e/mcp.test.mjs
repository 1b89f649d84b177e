// Per-session MCP servers: real servers (official MCP TypeScript SDK) over stdio and HTTP,
// called by the scripted model through the permission flow; isolation between sessions;
// failures reported; no orphan processes. Every frame is schema-validated.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../support/agent.mjs";

const SERVER = join(dirname(fileURLToPath(import.meta.url)), "..", "support", "mcp-server.mjs");
const stdio = (name) => ({ name, command: process.execPath, args: [SERVER, name], env: [] });

let fake;
let httpServer;
let httpUrl;
before(async () => {
  fake = await startFakeModel();
  httpServer = spawn(process.execPath, [SERVER, "beta", "--http"], { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise((resolve) => httpServer.stdout.on("data", (d) => resolve(/PORT (\d+)/.exec(String(d))[1])));
  httpUrl = `http://127.0.0.1:${port}/mcp`;
});
after(async () => {
  httpServer.kill();
  await fake.close();
});

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
async function gone(pid, ms = 5000) {
  const t0 = Date.now();
  while (alive(pid) && Date.now() - t0 < ms) await new Promise((r) => setTimeout(r, 20));
  return !alive(pid);
}

let marker = 0;
/** An agent whose permission requests are answered by `answer`; returns helpers. */
async function start({ config = "", capabilities = {}, answer = () => "allow_once" } = {}) {
  const agent = spawnAgent({ env: agentEnv({ fake, config }) });
  await agent.request("i", "initialize", { protocolVersion: 1, clientCapabilities: capabilities });
  const asked = [];
  const seen = new Set();
  const timer = setInterval(() => {
    for (const f of agent.frames) {
      if (f.method === "session/request_permission" && !seen.has(f.id)) {
        seen.add(f.id);
        asked.push(f.params);
        agent.send({ jsonrpc: "2.0", id: f.id, result: { outcome: { outcome: "selected", optionId: answer(f.params) } } });
      }
    }
  }, 5);
  timer.unref(); // a test that fails before done() must not keep its file running
  let n = 0;
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), "corvid-mcp-")));
  return {
    agent,
    asked,
    async session(mcpServers) {
      const r = await agent.request(`n${++n}`, "session/new", { cwd, mcpServers }, 30000);
      assert.ok(r.result, JSON.stringify(r.error));
      return r.result;
    },
    async call(sessionId, tool, args = {}) {
      const m = `MCP-${++marker}`;
      fake.script(m, { steps: [{ toolCalls: [{ name: tool, arguments: args }] }, { chunks: [{ content: "done" }] }] });
      const r = await agent.request(`p${++n}`, "session/prompt", { sessionId, prompt: [{ type: "text", text: m }] }, 30000);
      const toolResult = fake.requests.at(-1).body.messages.filter((x) => x.role === "tool").at(-1)?.content;
      const card = agent.updates(sessionId).filter((u) => u.toolCallId).slice(-1)[0];
      return { stop: r.result?.stopReason, toolResult, card, tools: fake.requests.at(-2).body.tools.map((t) => t.function.name) };
    },
    async done() {
      clearInterval(timer);
      await agent.stop();
      assert.deepEqual(agent.violations, [], "every frame is valid ACP");
    },
  };
}

test("stdio and HTTP servers: tools offered as mcp__server__tool, called with permission; failures reported", async () => {
  const t = await start();
  const s = await t.session([stdio("alpha"), { type: "http", name: "beta", url: httpUrl, headers: [] }, { name: "broken", command: "/nonexistent/mcp", args: [], env: [] }]);
  const states = Object.fromEntries(s._meta.corvid.mcpServers.map((x) => [x.name, x]));
  assert.equal(states.alpha.state, "connected");
  assert.equal(states.alpha.tools, 6);
  assert.equal(states.beta.state, "connected");
  assert.equal(states.broken.state, "failed");
  assert.match(states.broken.error, /cannot start `\/nonexistent\/mcp`/);
  // No session.notices capability: the failure is an agent message.
  await t.agent.waitFor((f) => f.params?.update?.content?.text?.includes("MCP server `broken` is not available"));

  const a = await t.call(s.sessionId, "mcp__alpha__echo", { text: "hi" });
  assert.equal(a.stop, "end_turn");
  assert.equal(a.toolResult, "alpha says: hi");
  assert.ok(a.tools.includes("mcp__alpha__echo") && a.tools.includes("mcp__beta__whoami"));
  assert.ok(!a.tools.some((x) => x.startsWith("mcp__broken")));
  assert.equal(t.asked.length, 1, "an MCP tool asks for permission like a built-in one");
  assert.equal(t.asked[0].toolCall.title, "alpha · echo");
  assert.equal(a.card.status, "completed");
  assert.deepEqual(a.card.content, [{ type: "content", content: { type: "text", text: "alpha says: hi" } }]);

  const b = await t.call(s.sessionId, "mcp__beta__echo", { text: "over http" });
  assert.equal(b.toolResult, "beta says: over http");

  const peek = await t.call(s.sessionId, "mcp__alpha__peek");
  assert.equal(peek.toolResult, "peeked");
  assert.equal(t.asked.length, 2, "a read-only tool does not ask");

  const pic = await t.call(s.sessionId, "mcp__alpha__picture");
  assert.match(pic.toolResult, /^here it is\n\[IMAGE: .*uploads\/[0-9a-f]{64}\.png \(image\/png, \d+ bytes\)\]\n\[This model does not take images, so the image is not shown to it\.\]$/);
  assert.equal(pic.card.content[1].content.type, "image");
  await t.done();
});

test("the client sees failures as notices when it advertises session.notices", async () => {
  const t = await start({ capabilities: { session: { notices: {} } } });
  const s = await t.session([{ name: "broken", command: "/nonexistent/mcp", args: [], env: [] }]);
  const notice = await t.agent.waitFor((f) => f.params?.update?.sessionUpdate === "notice");
  assert.equal(notice.params.sessionId, s.sessionId);
  assert.equal(notice.params.update.severity, "warning");
  assert.match(notice.params.update.title, /broken/);
  await t.done();
});

test("sessions are isolated: one session cannot see or call another's servers", async () => {
  const t = await start();
  const one = await t.session([stdio("alpha")]);
  const two = await t.session([stdio("gamma")]);
  const r = await t.call(two.sessionId, "mcp__alpha__echo", { text: "sneaky" });
  assert.ok(r.tools.includes("mcp__gamma__echo"));
  assert.ok(!r.tools.some((x) => x.startsWith("mcp__alpha")), "session two was not offered alpha's tools");
  assert.equal(r.card.status, "failed");
  assert.match(r.toolResult, /unknown tool `mcp__alpha__echo`/);
  assert.equal((await t.call(one.sessionId, "mcp__alpha__echo", { text: "mine" })).toolResult, "alpha says: mine");
  await t.done();
});

test("a crashing server and a hanging call fail the tool call; the session goes on", async () => {
  const t = await start({ config: "[limits]\nmcp_call_timeout_secs = 1\n", answer: () => "allow_once" });
  const s = await t.session([stdio("alpha"), stdio("delta")]);
  const slow = await t.call(s.sessionId, "mcp__delta__slow");
  assert.equal(slow.card.status, "failed");
  assert.match(slow.toolResult, /MCP server `delta` did not answer within 1 s/);
  const crash = await t.call(s.sessionId, "mcp__alpha__crash");
  assert.equal(crash.card.status, "failed");
  assert.match(crash.toolResult, /MCP server `alpha` failed/);
  const after = await t.call(s.sessionId, "mcp__delta__echo", { text: "still here" });
  assert.equal(after.toolResult, "delta says: still here");
  await t.done();
});

test("no orphans: servers die with session/close and with the agent", async () => {
  const t = await start();
  const one = await t.session([stdio("alpha")]);
  const two = await t.session([stdio("gamma")]);
  const pidOf = async (sessionId, server) => JSON.parse((await t.call(sessionId, `mcp__${server}__whoami`)).toolResult).pid;
  const p1 = await pidOf(one.sessionId, "alpha");
  const p2 = await pidOf(two.sessionId, "gamma");
  assert.ok(alive(p1) && alive(p2));
  await t.agent.request("c", "session/close", { sessionId: one.sessionId });
  assert.ok(await gone(p1), "session/close ended its server");
  assert.ok(alive(p2), "the other session's server lives on");
  await t.done(); // stdin closes: the agent exits
  assert.ok(await gone(p2), "the agent's exit ended the remaining server");
  assert.ok(existsSync(SERVER));
});

test("[mcp.servers.NAME] sandbox = true runs that stdio server in the session's sandbox; others run as before", async () => {
  const t = await start({ config: "[mcp.servers.alpha]\nsandbox = true\n" });
  const s = await t.session([stdio("alpha"), stdio("gamma")]);
  const pidOf = async (server) => JSON.parse((await t.call(s.sessionId, `mcp__${server}__whoami`)).toolResult).pid;
  const status = (pid) => Object.fromEntries(readFileSync(`/proc/${pid}/status`, "utf8").split("\n").map((l) => l.split(/:\s*/)));
  const sandboxed = status(await pidOf("alpha"));
  const plain = status(await pidOf("gamma"));
  // no_new_privs and a seccomp filter are what the launcher set before starting the server.
  assert.equal(sandboxed.NoNewPrivs, "1");
  assert.equal(sandboxed.Seccomp, "2");
  assert.equal(plain.NoNewPrivs, "0");
  assert.equal(plain.Seccomp, "0");
  // Its tools work as before.
  assert.equal((await t.call(s.sessionId, "mcp__alpha__echo", { text: "boxed" })).toolResult, "alpha says: boxed");
  const alpha = await pidOf("alpha");
  await t.agent.request("c", "session/close", { sessionId: s.sessionId });
  assert.ok(await gone(alpha), "session/close ended the sandboxed server too");
  await t.done();
});

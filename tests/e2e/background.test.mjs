// Background commands through the real binary, driven by the official SDK and the scripted
// fake model: `run_command` with `background: true` asks its permission like any command,
// returns after about 2 s with the first output and an id; `command_output` reads what came
// since; `kill_command` ends the command and what it started (a setsid'd grandchild too); the
// model is told in the next user message which ones still run; and every one ends with the
// agent, whether it exits or is killed (checked from outside, in /proc). Skipped (with the
// reason) where the kernel has no Landlock: without the launcher nothing survives a crash
// of Corvid's to kill a command.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, realpathSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import * as acp from "@agentclientprotocol/sdk";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, corvidBin, spawnAgent } from "../support/agent.mjs";
import { launcherRefusal } from "../support/landlock.mjs";
import { v2Validator } from "../support/schema.mjs";
import { until } from "../support/processes.mjs";

const skip = launcherRefusal(corvidBin(), [], "/nonexistent") ?? false;

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

/** Pids of processes whose command line mentions `tag` (the launcher, the shell, the program). */
function withTag(tag) {
  const found = [];
  for (const pid of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(tag)) found.push(Number(pid));
    } catch {}
  }
  return found;
}

let marker = 0;
const uniqueTag = () => `${5000 + Math.floor(Math.random() * 4000)}.${++marker}7`;

/**
 * An agent with a session in $HOME/project (default mode: commands ask), a ticker script there
 * that prints `ready` and then a line every 200 ms, and `turn(steps)` that runs one scripted
 * prompt (each step one tool call, then "done") and returns the tool results as the model read
 * them, with the user message the model got.
 */
async function setup() {
  const env = agentEnv({ fake });
  const home = realpathSync(env.HOME);
  const root = join(home, "project");
  mkdirSync(root);
  writeFileSync(
    join(root, "ticker.py"),
    "import sys, time\nprint('ready', flush=True)\nfor i in range(100000):\n    print(f'tick {i}', flush=True)\n    time.sleep(0.2)\n",
  );
  const agent = spawnAgent({ env });
  const updates = [];
  const questions = [];
  const app = acp
    .client({ name: "corvid-e2e" })
    .onNotification(acp.methods.client.session.update, ({ params }) => void updates.push({ at: Date.now(), ...params.update }))
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      questions.push(params);
      return { outcome: { outcome: "selected", optionId: "allow_once" } };
    });
  const conn = app.connect(await agent.sdkStream(acp.ndJsonStream));
  await conn.agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: "corvid-e2e", version: "1.0.0" },
  });
  const { sessionId } = await conn.agent.request(acp.methods.agent.session.new, { cwd: root, mcpServers: [] });
  return {
    root,
    agent,
    updates,
    questions,
    async turn(steps) {
      const m = `BACKGROUND-${++marker}-TURN`;
      const script = steps.map(([name, args], i) => ({ toolCalls: [{ name, arguments: args, id: `c${i}` }] }));
      fake.script(m, { steps: [...script, { chunks: [{ content: "done" }] }] });
      const t0 = Date.now();
      const r = await conn.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: m }] });
      assert.equal(r.stopReason, "end_turn");
      const messages = fake.requests.at(-1).body.messages;
      const results = messages.filter((msg) => msg.role === "tool").slice(-steps.length).map((msg) => msg.content);
      const content = messages.findLast((msg) => msg.role === "user").content;
      const user = typeof content === "string" ? content : content.map((b) => b.text ?? "").join("");
      return { results, user, ms: Date.now() - t0 };
    },
    async exit() {
      conn.close();
      await agent.stop();
      assert.deepEqual(agent.violations, [], "every frame is valid ACP");
      assert.doesNotMatch(agent.stderr, /panicked/);
    },
  };
}

test("a background command: asked for, back in about 2 s with its first output, read on, killed with its grandchild", { skip }, async () => {
  const t = await setup();
  const tag = uniqueTag();
  const command = `setsid sleep ${tag} & exec python3 -u ticker.py ${tag}`;
  const { results, ms } = await t.turn([
    ["run_command", { command, background: true }],
    ["run_command", { command: "sleep 1" }],
    ["command_output", { id: "bg1" }],
    ["kill_command", { id: "bg1" }],
    ["command_output", { id: "bg1" }],
  ]);
  const [started, , read, killed, after] = results;
  // The start: the id, still running, what it printed in its first moments.
  assert.match(started, /id: bg1 \(still running after 2 s\)/, started);
  assert.match(started, /^ready$/m, started);
  assert.match(started, /^tick 0$/m, started);
  // Two commands asked (the background one like any other); reading and killing ask nothing.
  assert.equal(t.questions.length, 2, JSON.stringify(t.questions.map((q) => q.toolCall.title)));
  assert.match(t.questions[0].toolCall.title, /in the background/);
  // The read gets only what came since, and says it still runs.
  assert.doesNotMatch(read, /^ready$/m, read);
  assert.match(read, /^tick \d+$/m, read);
  assert.match(read, /\[id: bg1: still running\]$/, read);
  const lastStarted = Number(started.match(/tick (\d+)\n*$/)?.[1]);
  const firstRead = Number(read.match(/^tick (\d+)$/m)?.[1]);
  assert.equal(firstRead, lastStarted + 1, "no line lost or repeated between reads");
  // Killed: the whole tree, the setsid'd sleep included.
  assert.match(killed, /\[id: bg1: killed\]$/, killed);
  assert.deepEqual(withTag(tag), [], "nothing of the command is left after kill_command");
  assert.match(after, /\(no new output\)\n\[id: bg1: killed\]$/, after);
  // The whole turn took the 2 s wait and the 1 s sleep, not a command timeout.
  assert.ok(ms < 15000, `the turn took ${ms} ms`);
  // Nothing more is said of it: its end was read.
  const next = await t.turn([["run_command", { command: "true" }]]);
  assert.doesNotMatch(next.user, /Background commands/, next.user);
  await t.exit();
});

test("the model is told which background commands run; they end when the agent exits", { skip }, async () => {
  const t = await setup();
  const tag = uniqueTag();
  const { results } = await t.turn([
    ["run_command", { command: `setsid sleep ${tag} & exec python3 -u ticker.py ${tag}`, background: true }],
    ["run_command", { command: "exit 3", background: true }],
  ]);
  assert.match(results[0], /id: bg1/);
  assert.match(results[1], /id: bg2; it has already exited with code 3/, results[1]);
  await until("the command to run", () => withTag(tag).length >= 3, 5000);
  // The next user message lists what still runs (the ended one was told already).
  const { user, results: [unknown] } = await t.turn([["command_output", { id: "bg9" }]]);
  assert.match(user, /\[Background commands .*\n- id: bg1 `setsid sleep [^`]*`: still running\]$/, user);
  assert.doesNotMatch(user, /bg2/, user);
  assert.match(unknown, /no background command `bg9` in this session \(known: bg1, bg2\)/, unknown);
  const pids = withTag(tag);
  await t.exit();
  await until("the background command to end with the agent", () => withTag(tag).length === 0, 10_000);
  // Each pid is gone, or a zombie not yet reaped by init (no command line left).
  for (const pid of pids) {
    let stat = "";
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {}
    assert.ok(stat === "" || / Z /.test(stat), `pid ${pid} still runs: ${stat}`);
  }
});

test("a background command dies with Corvid when it is killed with SIGKILL (grandchildren too)", { skip }, async () => {
  const t = await setup();
  const tag = uniqueTag();
  await t.turn([["run_command", { command: `setsid sleep ${tag} & exec python3 -u ticker.py ${tag}`, background: true }]]);
  assert.ok(withTag(tag).length >= 3, "running after its turn");
  t.agent.child.kill("SIGKILL");
  await t.agent.exited;
  await until("nothing of the command to be left", () => withTag(tag).length === 0, 10_000);
});

test("v2: a background command is an agent-owned terminal that streams after its turn; terminal/cancel kills it", { skip }, async () => {
  const env = agentEnv({ fake });
  const cwd = realpathSync(env.HOME);
  writeFileSync(join(cwd, "ticker.py"), "import time\nfor i in range(100000):\n    print(f'tick {i}', flush=True)\n    time.sleep(0.2)\n");
  const a = spawnAgent({ env, validator: v2Validator() });
  await a.request("i", "initialize", { protocolVersion: 2, info: { name: "bg", version: "1" }, capabilities: {} });
  const { sessionId } = (await a.request("n", "session/new", { cwd })).result;
  await a.request("m", "session/set_config_option", { sessionId, configId: "mode", value: "full" });
  const tag = uniqueTag();
  const m = `BACKGROUND-${++marker}-V2`;
  fake.script(m, { steps: [{ toolCalls: [{ name: "run_command", arguments: { command: `exec python3 -u ticker.py ${tag}`, background: true } }] }, { chunks: [{ content: "started" }] }] });
  await a.request("p", "session/prompt", { sessionId, prompt: [{ type: "text", text: m }] });
  const ups = () => a.updates(sessionId);
  await a.waitFor((f) => f.params?.update?.sessionUpdate === "state_update" && f.params.update.state === "idle", 15000, "the turn's end");
  const started = ups().find((u) => u.sessionUpdate === "terminal_update" && u.command);
  assert.ok(started, "the terminal was announced");
  assert.match(started.command, new RegExp(tag.replace(".", "\\.")));
  const card = ups().findLast((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed");
  assert.deepEqual(card.content, [{ type: "terminal", terminalId: started.terminalId }]);
  // Output keeps coming after the turn ended.
  const idleAt = a.frames.findIndex((f) => f.params?.update?.sessionUpdate === "state_update" && f.params.update.state === "idle");
  await a.waitFor((f, i) => a.frames.indexOf(f) > idleAt && f.params?.update?.sessionUpdate === "terminal_output_chunk", 5000, "output after the turn");
  const r = await a.request("c", "terminal/cancel", { sessionId, terminalId: started.terminalId });
  assert.deepEqual(r.result, {});
  await a.waitFor((f) => f.params?.update?.sessionUpdate === "terminal_update" && f.params.update.exitStatus, 5000, "the terminal's exit");
  await until("the command to be gone", () => withTag(tag).length === 0, 3000);
  const again = await a.request("c2", "terminal/cancel", { sessionId, terminalId: started.terminalId });
  assert.equal(again.error?.code, -32602, "an ended terminal cannot be cancelled");
  await a.stop();
  assert.deepEqual(a.violations, []);
});

// ACP v2 (preview) scenarios, driven by the official SDK's `experimental/v2` client (SDK 2.4.0)
// with every frame validated against that SDK's v2 schema (`$defs` per method), run against
// each way of reaching Corvid: the real binary over stdio (tests/e2e/v2.test.mjs) and the
// in-process addon (tests/addon/v2.test.mjs). A transport says how to make a place (a config
// and a store) and how to open a connection there:
//
//   transport.name                      "binary" or "addon", in the test names
//   transport.place({ model })          a fresh config and store (`model: false`: no provider)
//   transport.open(place)               { stream, frames, violations, logs(), stop() }
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import * as acp from "@agentclientprotocol/sdk/experimental/v2";

/**
 * Live updates as a v2 replay sends them: each run of one reply's `agent_message_chunk`s as one
 * `agent_message` holding its whole content (adjacent texts joined), and each thought's
 * `agent_thought_chunk`s as one `agent_thought`.
 */
function wholeReplies(updates) {
  const whole = { agent_message_chunk: "agent_message", agent_thought_chunk: "agent_thought" };
  const out = [];
  for (const u of updates) {
    const open = out.at(-1);
    const kind = whole[u.sessionUpdate];
    if (!kind) out.push(u);
    else if (open?.sessionUpdate === kind && open.messageId === u.messageId) {
      const last = open.content.at(-1);
      if (last?.type === "text" && u.content.type === "text") last.text += u.content.text;
      else open.content.push({ ...u.content });
    } else out.push({ sessionUpdate: kind, messageId: u.messageId, content: [{ ...u.content }] });
  }
  return out;
}

let n = 0;
export const marker = (name) => `V2-${name}-${++n}`;
export const workspace = () => realpathSync(mkdtempSync(join(tmpdir(), "corvid-v2-")));
export const idleWith = (stop) => (u) => u.sessionUpdate === "state_update" && u.state === "idle" && u.stopReason === stop;
export const text = (ups, kind) => ups.filter((u) => u.sessionUpdate === kind).map((u) => u.content.text).join("");

/**
 * Opens a connection through `transport` (at `place`, a fresh one with the fake model by
 * default), connects the SDK's v2 client and initializes. `answer(params)` answers permission
 * requests (an optionId, or null for cancelled); `elicit(params)` answers forms (offered when
 * given: `capabilities.elicitation.form`).
 */
export async function connect(transport, { place = transport.place({ model: true }), answer = () => null, elicit = null } = {}) {
  const opened = await transport.open(place);
  const updates = [];
  const permissions = [];
  const forms = [];
  let app = acp
    .client({ name: "corvid-v2-e2e" })
    .onNotification(acp.methods.client.session.update, ({ params }) => void updates.push(params))
    .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
      permissions.push(params);
      const optionId = await answer(params);
      return { outcome: optionId === null ? { outcome: "cancelled" } : { outcome: "selected", optionId } };
    });
  if (elicit) {
    app = app.onRequest(acp.methods.client.elicitation.create, async ({ params }) => {
      forms.push(params);
      return elicit(params);
    });
  }
  const conn = app.connect(opened.stream);
  const init = await conn.agent.request(acp.methods.agent.initialize, {
    protocolVersion: 2,
    info: { name: "corvid-v2-e2e", version: "1.0.0" },
    capabilities: elicit ? { elicitation: { form: {} } } : {},
  });
  const ctx = conn.agent;
  return {
    init,
    ctx,
    updates,
    permissions,
    forms,
    place,
    frames: opened.frames,
    of: (sessionId) => updates.filter((u) => u.sessionId === sessionId).map((u) => u.update),
    /** Resolves with the first update of `sessionId` (seen or future) matching `pred`. */
    async until(sessionId, pred, ms = 10000, what = "update") {
      const t0 = performance.now();
      for (;;) {
        const found = updates.find((u) => u.sessionId === sessionId && pred(u.update));
        if (found) return found.update;
        if (performance.now() - t0 > ms) throw new Error(`no ${what} within ${ms} ms; log:\n${opened.logs().slice(-1500)}`);
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    newSession: (cwd = workspace()) => ctx.request(acp.methods.agent.session.new, { cwd }),
    prompt: (sessionId, text) => ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] }),
    async done() {
      conn.close();
      await opened.stop();
      assert.deepEqual(opened.violations, [], "every frame is valid ACP v2");
      assert.doesNotMatch(opened.logs(), /panicked/);
    },
  };
}

/** The bytes of agent-owned terminal `id` as a client rebuilds them from `ups` (chunks appended, `output` replacing). */
export function terminalText(ups, id) {
  let text = "";
  for (const u of ups) {
    if (u.terminalId !== id) continue;
    if (u.sessionUpdate === "terminal_output_chunk") text += Buffer.from(u.data, "base64").toString();
    if (u.sessionUpdate === "terminal_update" && u.output) text = Buffer.from(u.output.data, "base64").toString();
  }
  return text;
}

/** A session in mode "full" (commands run without a question). */
export async function fullSession(c, cwd = workspace()) {
  const s = await c.newSession(cwd);
  await c.ctx.request(acp.methods.agent.session.setConfigOption, { sessionId: s.sessionId, configId: "mode", value: "full" });
  return s;
}

/** Registers the scenarios every transport must pass. `getFake()`: the running fake model. */
export function registerV2Scenarios(transport, getFake) {
  const named = (title) => `${title} [${transport.name}]`;
  const fake = {
    script: (...args) => getFake().script(...args),
    get requests() {
      return getFake().requests;
    },
  };
  const connect_ = (opts) => connect(transport, opts);

  test(named("handshake; prompt → messageId → user_message echo → streamed answer → idle/end_turn"), async () => {
    const c = await connect_();
    assert.equal(c.init.protocolVersion, 2);
    assert.equal(c.init.info.name, "corvid");
    assert.ok(c.init.capabilities.session.prompt, "prompt capabilities under session");
    assert.equal(c.init._meta.steering, undefined, "v2 inserts mid-turn prompts itself: no _session/steering");
    const m = marker("STREAM");
    fake.script(m, { chunks: [{ reasoning: "Thinking." }, { content: "Hello" }, { content: ", v2!" }] });
    const s = await c.newSession();
    assert.match(s.sessionId, /^[0-9a-f-]{36}$/);
    assert.ok(s.configOptions.some((o) => o.configId === "model"), JSON.stringify(s.configOptions));
    assert.ok(s.availableCommands.every((cmd) => cmd.type === "command"));
    const res = await c.prompt(s.sessionId, `${m} please`);
    assert.match(res.messageId, /^[0-9a-f-]{36}$/);
    await c.until(s.sessionId, idleWith("end_turn"), 10000, "idle end_turn");
    const ups = c.of(s.sessionId);
    const kinds = ups.map((u) => (u.sessionUpdate === "state_update" ? `state:${u.state}` : u.sessionUpdate));
    const echo = ups.find((u) => u.sessionUpdate === "user_message");
    assert.equal(echo.messageId, res.messageId, "the echo carries the prompt's messageId");
    assert.equal(echo.content[0].text, `${m} please`);
    assert.ok(kinds.indexOf("user_message") < kinds.indexOf("state:running"), kinds.join(","));
    assert.ok(kinds.indexOf("state:running") < kinds.indexOf("agent_message_chunk"), kinds.join(","));
    assert.equal(kinds.at(-1), "state:idle", "idle is the turn's last word");
    assert.equal(text(ups, "agent_message_chunk"), "Hello, v2!");
    assert.equal(text(ups, "agent_thought_chunk"), "Thinking.");
    await c.done();
  });

  test(named("a permission turn: requires_action while asked, running once allowed; the edit lands as a v2 diff"), async () => {
    const c = await connect_({ answer: (p) => p.options.find((o) => o.kind === "allow_once").optionId });
    const cwd = workspace();
    const s = await c.newSession(cwd);
    const m = marker("WRITE");
    fake.script(m, {
      steps: [{ toolCalls: [{ name: "write_file", arguments: { path: "a.txt", content: "one\ntwo\n" } }] }, { chunks: [{ content: "Written." }] }],
    });
    await c.prompt(s.sessionId, m);
    await c.until(s.sessionId, idleWith("end_turn"), 10000, "idle end_turn");
    assert.equal(c.permissions.length, 1);
    const asked = c.permissions[0];
    assert.match(asked.title, /a\.txt/);
    assert.equal(asked.subject.type, "tool_call");
    const states = c.of(s.sessionId).filter((u) => u.sessionUpdate === "state_update").map((u) => u.state);
    assert.deepEqual(states, ["running", "requires_action", "running", "idle"]);
    const diff = c
      .of(s.sessionId)
      .filter((u) => u.sessionUpdate === "tool_call_update")
      .flatMap((u) => u.content ?? [])
      .find((x) => x.type === "diff");
    assert.deepEqual(diff.changes, [{ operation: "add", path: join(cwd, "a.txt"), fileType: "text" }]);
    assert.match(diff.patch.text, /^diff --git .*\nnew file mode 100644\n--- \/dev\/null\n\+\+\+ .*a\.txt\n@@ -0,0 \+1,2 @@\n\+one\n\+two\n$/m);
    await c.done();
  });

  test(named("a prompt sent while a turn runs is inserted: both get a messageId, the model reads the second in the same turn"), async () => {
    const c = await connect_();
    const s = await c.newSession();
    const first = marker("LONG");
    const second = marker("INSERTED");
    fake.script(first, { chunks: Array.from({ length: 30 }, (_, i) => ({ content: `w${i} ` })), delayMs: 15 });
    fake.script(second, { chunks: [{ content: "answered the inserted one" }] });
    const before = fake.requests.length;
    const a = await c.prompt(s.sessionId, first);
    await c.until(s.sessionId, (u) => u.sessionUpdate === "agent_message_chunk");
    const b = await c.prompt(s.sessionId, `${second}: and this too`);
    assert.notEqual(a.messageId, b.messageId);
    await c.until(s.sessionId, (u) => u.sessionUpdate === "agent_message_chunk" && u.content.text.includes("inserted one"), 10000);
    await c.until(s.sessionId, idleWith("end_turn"));
    const echoes = c.of(s.sessionId).filter((u) => u.sessionUpdate === "user_message").map((u) => u.messageId);
    assert.deepEqual(echoes, [a.messageId, b.messageId]);
    const idles = c.of(s.sessionId).filter(idleWith("end_turn"));
    assert.equal(idles.length, 1, "one turn took both prompts");
    const lastRequest = fake.requests.slice(before).filter((q) => q.api === "openai").at(-1);
    assert.match(JSON.stringify(lastRequest.body.messages), new RegExp(second));
    await c.done();
  });

  test(named("session/cancel ends the turn with idle/cancelled and nothing after it"), async () => {
    const c = await connect_();
    const s = await c.newSession();
    const m = marker("SLOW");
    fake.script(m, { chunks: Array.from({ length: 200 }, (_, i) => ({ content: `x${i} ` })), delayMs: 20 });
    await c.prompt(s.sessionId, m);
    await c.until(s.sessionId, (u) => u.sessionUpdate === "agent_message_chunk");
    await c.ctx.notify(acp.methods.agent.session.cancel, { sessionId: s.sessionId });
    await c.until(s.sessionId, idleWith("cancelled"), 10000, "idle cancelled");
    await new Promise((r) => setTimeout(r, 300));
    const ups = c.of(s.sessionId);
    assert.equal(ups.at(-1).state, "idle", "nothing is sent after the turn's end");
    assert.ok(!text(ups, "agent_message_chunk").includes("x199"));
    await c.done();
  });

  test(named("tool_call/cancel stops one running command: the card ends cancelled, the model is told, the turn goes on"), async () => {
    const c = await connect_();
    const s = await c.newSession();
    await c.ctx.request(acp.methods.agent.session.setConfigOption, { sessionId: s.sessionId, configId: "mode", value: "full" });
    const m = marker("STOPME");
    fake.script(m, {
      steps: [{ toolCalls: [{ name: "run_command", arguments: { command: "sleep 30" } }] }, { chunks: [{ content: "Understood, stopped." }] }],
    });
    const before = fake.requests.length;
    const t0 = performance.now();
    await c.prompt(s.sessionId, m);
    const running = await c.until(s.sessionId, (u) => u.sessionUpdate === "tool_call_update" && u.status === "in_progress");
    assert.deepEqual(running.capabilities, { cancel: {} }, "a running call advertises cancel");
    assert.deepEqual(await c.ctx.request(acp.methods.agent.toolCall.cancel, { sessionId: s.sessionId, toolCallId: running.toolCallId }), {});
    const ended = await c.until(s.sessionId, (u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === running.toolCallId && u.status === "cancelled");
    assert.equal(ended.capabilities, null, "a final call can no longer be cancelled");
    assert.ok(ended.content.some((x) => x.type === "terminal"), "the command's terminal stays on the card");
    assert.ok(c.of(s.sessionId).some((u) => u.sessionUpdate === "terminal_update" && u.exitStatus), "the terminal says the command ended");
    await c.until(s.sessionId, idleWith("end_turn"), 10000, "the turn goes on to end_turn");
    assert.ok(performance.now() - t0 < 10000, "the command was stopped, not waited for");
    assert.equal(text(c.of(s.sessionId), "agent_message_chunk"), "Understood, stopped.");
    const told = JSON.stringify(fake.requests.slice(before).filter((q) => q.api === "openai").at(-1).body.messages.at(-1));
    assert.match(told, /stopped this tool call/);
    // Already final: -32602.
    await assert.rejects(c.ctx.request(acp.methods.agent.toolCall.cancel, { sessionId: s.sessionId, toolCallId: running.toolCallId }), (e) => e.code === -32602);
    await c.done();
  });

  test(named("MCP servers in v2's shape (stdio with its `type`): connected and their tools offered"), async () => {
    const c = await connect_();
    const server = join(dirname(fileURLToPath(import.meta.url)), "mcp-server.mjs");
    const s = await c.ctx.request(acp.methods.agent.session.new, {
      cwd: workspace(),
      mcpServers: [{ type: "stdio", name: "alpha", command: process.execPath, args: [server, "alpha"], env: [] }],
    });
    const alpha = s._meta.corvid.mcpServers.find((x) => x.name === "alpha");
    assert.equal(alpha.state, "connected", JSON.stringify(s._meta));
    const m = marker("MCP");
    fake.script(m, { chunks: [{ content: "ok" }] });
    await c.prompt(s.sessionId, m);
    await c.until(s.sessionId, idleWith("end_turn"));
    const tools = fake.requests.filter((q) => q.api === "openai").at(-1).body.tools.map((t) => t.function.name);
    assert.ok(tools.includes("mcp__alpha__echo"), tools.join(","));
    await c.done();
  });

  test(named("v2 without a provider: auth methods in v2's words; session/new is -32000; auth/login retries"), async () => {
    const c = await connect_({ place: transport.place({ model: false }) });
    const setup = c.init.authMethods.find((a) => a.methodId === "corvid-setup");
    assert.equal(setup.type, "agent");
    await assert.rejects(c.newSession(), (e) => e.code === -32000);
    await assert.rejects(c.ctx.request(acp.methods.agent.auth.login, { methodId: "corvid-setup" }), (e) => e.code === -32000);
    await c.done();
  });

  test(named("a command runs in an agent-owned terminal: announced with command and cwd, output streamed as chunks, exit status, the card shows the terminal"), async () => {
    const c = await connect_();
    const cwd = workspace();
    const s = await fullSession(c, cwd);
    const m = marker("TERM");
    fake.script(m, {
      steps: [{ toolCalls: [{ name: "run_command", arguments: { command: "printf 'one\\ntwo\\n'; sleep 0.3; echo three; exit 3" } }] }, { chunks: [{ content: "Ran it." }] }],
    });
    const before = fake.requests.length;
    await c.prompt(s.sessionId, m);
    await c.until(s.sessionId, idleWith("end_turn"), 10000, "idle end_turn");
    const ups = c.of(s.sessionId);
    const opened = ups.find((u) => u.sessionUpdate === "terminal_update" && u.command);
    assert.ok(opened, "the terminal is announced");
    const id = opened.terminalId;
    assert.match(opened.command, /exit 3$/);
    assert.equal(opened.cwd, cwd);
    assert.deepEqual(opened.capabilities, { cancel: {} }, "a running command can be cancelled");
    const cards = ups.filter((u) => u.sessionUpdate === "tool_call_update" && (u.content ?? []).some((x) => x.type === "terminal"));
    assert.ok(cards.length > 0 && cards.every((u) => u.content.every((x) => x.type === "terminal" && x.terminalId === id)), "the card shows the terminal, not text");
    const idx = (pred) => ups.findIndex(pred);
    assert.ok(idx((u) => u === opened) < idx((u) => u === cards[0]), "the terminal exists before the card names it");
    assert.ok(ups.filter((u) => u.sessionUpdate === "terminal_output_chunk").length >= 2, "streamed in more than one chunk");
    assert.equal(terminalText(ups, id), "one\ntwo\nthree\n");
    const exited = ups.find((u) => u.sessionUpdate === "terminal_update" && u.exitStatus);
    assert.equal(exited.exitStatus.exitCode, 3);
    assert.equal(exited.capabilities, null, "an exited command can no longer be cancelled");
    assert.ok(idx((u) => u.sessionUpdate === "terminal_output_chunk") < idx((u) => u === exited), "output before the exit");
    const final = ups.filter((u) => u.sessionUpdate === "tool_call_update" && u.status === "failed").at(-1);
    assert.ok(final, "a non-zero exit fails the call");
    assert.ok(idx((u) => u === exited) < idx((u) => u === final), "the terminal exits before the call ends");
    const told = JSON.stringify(fake.requests.slice(before).filter((q) => q.api === "openai").at(-1).body.messages.at(-1));
    assert.match(told, /one\\ntwo\\nthree/);
    assert.match(told, /exit code 3/);
    await c.done();
  });

  test(named("terminal/cancel kills one command: exitStatus confirms it, the model reads that the user stopped it, the turn goes on"), async () => {
    const c = await connect_();
    const s = await fullSession(c);
    const m = marker("KILLCMD");
    fake.script(m, {
      steps: [{ toolCalls: [{ name: "run_command", arguments: { command: "echo started; sleep 30; echo never" } }] }, { chunks: [{ content: "The command was stopped." }] }],
    });
    const before = fake.requests.length;
    const t0 = performance.now();
    await c.prompt(s.sessionId, m);
    const chunk = await c.until(s.sessionId, (u) => u.sessionUpdate === "terminal_output_chunk", 10000, "the first output");
    assert.equal(Buffer.from(chunk.data, "base64").toString(), "started\n");
    assert.deepEqual(await c.ctx.request(acp.methods.agent.terminal.cancel, { sessionId: s.sessionId, terminalId: chunk.terminalId }), {});
    const exited = await c.until(s.sessionId, (u) => u.sessionUpdate === "terminal_update" && u.exitStatus, 10000, "exitStatus");
    assert.ok(exited.exitStatus.signal || exited.exitStatus.exitCode !== null, JSON.stringify(exited));
    await c.until(s.sessionId, idleWith("end_turn"), 10000, "the turn goes on to end_turn");
    assert.ok(performance.now() - t0 < 10000, "the command was killed, not waited for");
    const ups = c.of(s.sessionId);
    assert.ok(!terminalText(ups, chunk.terminalId).includes("never"));
    assert.equal(text(ups, "agent_message_chunk"), "The command was stopped.");
    const told = JSON.stringify(fake.requests.slice(before).filter((q) => q.api === "openai").at(-1).body.messages.at(-1));
    assert.match(told, /stopped by the user/);
    // Exited, and unknown: -32602.
    await assert.rejects(c.ctx.request(acp.methods.agent.terminal.cancel, { sessionId: s.sessionId, terminalId: chunk.terminalId }), (e) => e.code === -32602);
    await assert.rejects(c.ctx.request(acp.methods.agent.terminal.cancel, { sessionId: s.sessionId, terminalId: "nope" }), (e) => e.code === -32602);
    await c.done();
  });

  test(named("a long output streams its first MiB, then its end replaces the stream"), async () => {
    const c = await connect_();
    const s = await fullSession(c);
    const m = marker("FLOOD");
    // 3 MiB of numbered lines, then a last line to find.
    fake.script(m, {
      steps: [{ toolCalls: [{ name: "run_command", arguments: { command: "seq 1 400000; echo THE-END" } }] }, { chunks: [{ content: "ok" }] }],
    });
    await c.prompt(s.sessionId, m);
    await c.until(s.sessionId, idleWith("end_turn"), 20000, "idle end_turn");
    const ups = c.of(s.sessionId);
    const streamed = ups.filter((u) => u.sessionUpdate === "terminal_output_chunk").reduce((n, u) => n + Buffer.from(u.data, "base64").length, 0);
    assert.equal(streamed, 1024 * 1024, "the stream stops at 1 MiB");
    const id = ups.find((u) => u.sessionUpdate === "terminal_output_chunk").terminalId;
    const shown = terminalText(ups, id);
    assert.match(shown, /^\[the first \d+ bytes of the output are not shown\]\n/);
    assert.ok(shown.endsWith("399999\n400000\nTHE-END\n"), shown.slice(-40));
    assert.ok(shown.length < 70 * 1024, "the replacement is the output's end");
    await c.done();
  });

  test(named("ask_user over v2 shows a form (elicitation/create): requires_action while it waits, the answer reaches the model"), async () => {
    const c = await connect_({ elicit: () => ({ action: "accept", content: { answer: "blue" } }) });
    const s = await c.newSession();
    const m = marker("ASK");
    fake.script(m, {
      steps: [{ toolCalls: [{ name: "ask_user", arguments: { question: "Which colour?", choices: ["red", "blue"] } }] }, { chunks: [{ content: "Blue it is." }] }],
    });
    const before = fake.requests.length;
    await c.prompt(s.sessionId, m);
    await c.until(s.sessionId, idleWith("end_turn"), 10000, "idle end_turn");
    assert.equal(c.forms.length, 1, "one form");
    assert.equal(c.forms[0].message, "Which colour?");
    assert.equal(c.forms[0].mode, "form");
    assert.equal(c.forms[0].sessionId, s.sessionId);
    assert.equal(c.permissions.length, 0, "a form, not a permission question");
    const states = c.of(s.sessionId).filter((u) => u.sessionUpdate === "state_update").map((u) => u.state);
    assert.deepEqual(states, ["running", "requires_action", "running", "idle"]);
    const told = JSON.stringify(fake.requests.slice(before).filter((q) => q.api === "openai").at(-1).body.messages.at(-1));
    assert.match(told, /The user answered: blue/);
    await c.done();
  });

  test(named("a v2 session in a second connection: listed, resumed with its history in v2's words, closed, deleted"), async () => {
    const place = transport.place({ model: true });
    const cwd = workspace();
    const first = await connect_({ place });
    const s = await fullSession(first, cwd);
    const m = marker("AGAIN");
    fake.script(m, { steps: [{ toolCalls: [{ name: "run_command", arguments: { command: "echo kept" } }] }, { chunks: [{ content: "first turn" }] }] });
    const sent = await first.prompt(s.sessionId, m);
    await first.until(s.sessionId, idleWith("end_turn"), 10000, "idle end_turn");
    const live = first.of(s.sessionId).filter((u) => u.sessionUpdate !== "state_update" && u.sessionUpdate !== "available_commands_update");
    await first.done();

    const c = await connect_({ place });
    const listed = await c.ctx.request(acp.methods.agent.session.list, { cwd });
    assert.deepEqual(listed.sessions.map((x) => x.sessionId), [s.sessionId]);
    await c.ctx.request(acp.methods.agent.session.resume, { sessionId: s.sessionId, cwd, replayFrom: { type: "start" } });
    // The state follows the replay (the SDK may hand notifications over after the answer).
    await c.until(s.sessionId, (u) => u.sessionUpdate === "state_update", 10000, "the state after the replay");
    const replayed = c.of(s.sessionId).filter((u) => u.sessionUpdate !== "state_update" && u.sessionUpdate !== "available_commands_update");
    // Issue 44: a reply the first client was sent in chunks replays whole (`agent_message`).
    assert.deepEqual(replayed, wholeReplies(live), "the replay is what the first client was sent, each reply whole");
    assert.ok(live.some((u) => u.sessionUpdate === "agent_message_chunk") && !replayed.some((u) => u.sessionUpdate === "agent_message_chunk"));
    assert.equal(replayed.find((u) => u.sessionUpdate === "user_message").messageId, sent.messageId);
    assert.ok(replayed.some((u) => u.sessionUpdate === "terminal_output_chunk"), "the command's terminal replays too");
    await c.ctx.request(acp.methods.agent.session.close, { sessionId: s.sessionId });
    await c.ctx.request(acp.methods.agent.session.delete, { sessionId: s.sessionId });
    assert.deepEqual((await c.ctx.request(acp.methods.agent.session.list, { cwd })).sessions, []);
    await c.done();
  });

  test(named("what v1 sessions have carries over in v2's words: an image prompt, the title, usage, a plan, /compact"), async () => {
    const c = await connect_();
    const s = await c.newSession();
    const m = marker("CARRY");
    const entries = [
      { content: "Look around", priority: "high", status: "in_progress" },
      { content: "Fix it", priority: "medium", status: "pending" },
    ];
    fake.script(m, { steps: [{ toolCalls: [{ name: "update_plan", arguments: { entries } }] }, { chunks: [{ content: "planned" }] }] });
    const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    const image = { type: "image", mimeType: "image/png", data: png };
    await c.ctx.request(acp.methods.agent.session.prompt, { sessionId: s.sessionId, prompt: [{ type: "text", text: m }, image] });
    await c.until(s.sessionId, idleWith("end_turn"), 10000, "idle end_turn");
    const ups = c.of(s.sessionId);
    const echo = ups.find((u) => u.sessionUpdate === "user_message");
    assert.deepEqual(echo.content.map((b) => b.type), ["text", "image"], "the echo holds both blocks");
    assert.equal(ups.find((u) => u.sessionUpdate === "session_info_update").title, m, "the first prompt titles the session");
    assert.ok(ups.some((u) => u.sessionUpdate === "usage_update" && u.used > 0), "usage");
    const plan = ups.find((u) => u.sessionUpdate === "plan_update").plan;
    assert.equal(plan.type, "items");
    assert.deepEqual(plan.entries.map((e) => [e.content, e.status]), [["Look around", "in_progress"], ["Fix it", "pending"]]);

    fake.script("Summarize the conversation so far", { chunks: [{ content: "SUMMARY " }, { content: "of it" }] });
    await c.prompt(s.sessionId, "/compact");
    await c.until(s.sessionId, () => c.of(s.sessionId).filter(idleWith("end_turn")).length === 2, 10000, "the /compact turn's idle");
    const compaction = c.of(s.sessionId).filter((u) => u.sessionUpdate.startsWith("compaction_"));
    assert.deepEqual(compaction.map((u) => u.sessionUpdate), ["compaction_update", "compaction_summary_chunk", "compaction_summary_chunk", "compaction_update"]);
    assert.deepEqual([compaction[0].status, compaction[3].status], ["in_progress", "completed"]);
    await c.done();
  });

  test(named("a command in an agent-owned terminal stays confined: a write beside the workspace is refused"), async () => {
    const c = await connect_();
    const cwd = workspace();
    const s = await fullSession(c, cwd);
    // Unique to this run too: a file left by an earlier run (one whose command was not
    // confined) must not fail this one.
    const outside = join(dirname(cwd), `${marker("escape")}-${process.pid}-${Date.now()}.txt`);
    const m = marker("ESCAPE");
    fake.script(m, { steps: [{ toolCalls: [{ name: "run_command", arguments: { command: `echo pwned > ${outside}` } }] }, { chunks: [{ content: "tried" }] }] });
    await c.prompt(s.sessionId, m);
    await c.until(s.sessionId, idleWith("end_turn"), 10000, "idle end_turn");
    const ups = c.of(s.sessionId);
    const id = ups.find((u) => u.sessionUpdate === "terminal_update" && u.command).terminalId;
    assert.match(terminalText(ups, id), /Permission denied|Read-only file system/);
    assert.notEqual(ups.find((u) => u.sessionUpdate === "terminal_update" && u.exitStatus).exitStatus.exitCode, 0);
    assert.equal(existsSync(outside), false, "nothing was written outside the session's folder");
    await c.done();
  });
}

// Client-side capabilities, driven by the official SDK 2.x client: file reads and writes
// through the editor (fs/*), commands in the editor's terminals (terminal/*), and questions
// through elicitation forms or the permission fallback. The client here is a small editor:
// unsaved buffers in memory, real processes for terminals. Every frame is schema-validated.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import * as acp from "@agentclientprotocol/sdk";
import { startFakeModel } from "../support/fake-model.mjs";
import { startHitServer } from "../support/hit-server.mjs";
import { agentEnv, corvidBin, spawnAgent } from "../support/agent.mjs";

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

let nextMarker = 0;
const call = (name, args) => ({ toolCalls: [{ name, arguments: args }] });
const say = (text) => ({ chunks: [{ content: text }] });
const lastToolResult = () => fake.requests.at(-1).body.messages.filter((m) => m.role === "tool").at(-1)?.content;

function workspace() {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "corvid-client-")));
  const root = join(base, "project");
  mkdirSync(join(root, "src"), { recursive: true });
  mkdirSync(join(base, "outside"));
  writeFileSync(join(root, "src", "main.rs"), "fn main() {}\n");
  writeFileSync(join(base, "outside", "secret.txt"), "top secret\n");
  return { base, root };
}

/** A tiny editor: `buffers` hold unsaved text by path; terminals are real processes. */
function editor({ permission = () => ({ outcome: { outcome: "selected", optionId: "allow_once" } }), elicit } = {}) {
  const calls = []; // [method, params] in order
  const buffers = new Map();
  const terminals = new Map();
  let nextTerminal = 0;
  const app = acp
    .client({ name: "corvid-e2e-editor" })
    .onNotification(acp.methods.client.session.update, () => {})
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      calls.push(["session/request_permission", params]);
      return permission(params);
    })
    .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
      calls.push(["fs/read_text_file", params]);
      if (buffers.has(params.path)) return { content: buffers.get(params.path) };
      if (existsSync(params.path)) return { content: readFileSync(params.path, "utf8") };
      throw acp.RequestError.resourceNotFound(params.path);
    })
    .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
      calls.push(["fs/write_text_file", params]);
      buffers.set(params.path, params.content); // lands in the editor, unsaved
      return {};
    })
    .onRequest(acp.methods.client.terminal.create, ({ params }) => {
      calls.push(["terminal/create", params]);
      const env = { ...process.env };
      for (const { name, value } of params.env ?? []) env[name] = value;
      const child = spawn(params.command, params.args ?? [], { cwd: params.cwd, env, detached: true });
      const t = { child, output: "", exit: null };
      t.exited = new Promise((r) => child.on("exit", (code, signal) => r((t.exit = { exitCode: code, signal }))));
      child.stdout.on("data", (d) => (t.output += d));
      child.stderr.on("data", (d) => (t.output += d));
      const terminalId = `term-${++nextTerminal}`;
      terminals.set(terminalId, t);
      return { terminalId };
    })
    .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => {
      calls.push(["terminal/wait_for_exit", params]);
      return await terminals.get(params.terminalId).exited;
    })
    .onRequest(acp.methods.client.terminal.output, ({ params }) => {
      calls.push(["terminal/output", params]);
      const t = terminals.get(params.terminalId);
      return { output: t.output, truncated: false, exitStatus: t.exit };
    })
    .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
      calls.push(["terminal/kill", params]);
      try {
        process.kill(-terminals.get(params.terminalId).child.pid, "SIGKILL");
      } catch {}
      return {};
    })
    .onRequest(acp.methods.client.terminal.release, ({ params }) => {
      calls.push(["terminal/release", params]);
      return {};
    })
    .onRequest(acp.methods.client.elicitation.create, ({ params }) => {
      calls.push(["elicitation/create", params]);
      return elicit(params);
    });
  return { app, calls, buffers, terminals, methods: () => calls.map(([m]) => m) };
}

/** Connects `ed` to a fresh agent with `capabilities`, opens a session in `root`, runs `fn`. */
async function withSession(root, ed, capabilities, fn) {
  const agent = spawnAgent({ env: agentEnv({ fake }) });
  const conn = ed.app.connect(await agent.sdkStream(acp.ndJsonStream));
  try {
    await conn.agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: capabilities,
      clientInfo: { name: "corvid-e2e-editor", version: "1.0.0" },
    });
    const { sessionId } = await conn.agent.request(acp.methods.agent.session.new, { cwd: root, mcpServers: [] });
    const turn = (steps) => {
      const marker = `CLIENT-${++nextMarker}`;
      fake.script(marker, { steps });
      return conn.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: marker }] });
    };
    const prompt = (text) =>
      conn.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
    const cancel = () => conn.agent.notify(acp.methods.agent.session.cancel, { sessionId });
    await fn({ turn, prompt, cancel, agent, updates: () => agent.updates(sessionId), sessionId });
    assert.deepEqual(agent.violations, [], "every frame is valid ACP");
  } finally {
    conn.close();
    await agent.stop();
  }
}

const FS = { fs: { readTextFile: true, writeTextFile: true }, terminal: false };

test("client fs: reads see the editor's unsaved buffer, not the disk", async () => {
  const { root } = workspace();
  const ed = editor();
  const path = join(root, "src", "main.rs");
  ed.buffers.set(path, "fn main() { println!(\"unsaved\"); }\n");
  await withSession(root, ed, FS, async ({ turn }) => {
    const r = await turn([call("read_file", { path: "src/main.rs" }), say("ok")]);
    assert.equal(r.stopReason, "end_turn");
    assert.match(lastToolResult(), /unsaved/);
    const reads = ed.calls.filter(([m]) => m === "fs/read_text_file").map(([, p]) => p.path);
    assert.deepEqual(reads, [path], "asked for the canonical absolute path");
  });
});

test("client fs: writes and edits land in the editor (diffs against the buffer), not on disk", async () => {
  const { root } = workspace();
  const ed = editor();
  const main = join(root, "src", "main.rs");
  ed.buffers.set(main, "fn main() { old(); }\n");
  await withSession(root, ed, FS, async ({ turn, updates }) => {
    await turn([call("write_file", { path: "notes.md", content: "hello\n" }), say("ok")]);
    assert.equal(ed.buffers.get(join(root, "notes.md")), "hello\n");
    assert.equal(existsSync(join(root, "notes.md")), false, "Corvid did not write the disk itself");
    const created = updates().filter((u) => u.status === "completed").at(-1).content[0];
    assert.deepEqual(created, { type: "diff", path: join(root, "notes.md"), oldText: null, newText: "hello\n" });

    await turn([call("edit_file", { path: "src/main.rs", old_text: "old()", new_text: "new()" }), say("ok")]);
    assert.equal(ed.buffers.get(main), "fn main() { new(); }\n");
    assert.equal(readFileSync(main, "utf8"), "fn main() {}\n", "the saved file is untouched");
    const edited = updates().filter((u) => u.status === "completed").at(-1).content[0];
    assert.equal(edited.oldText, "fn main() { old(); }\n");
    const writes = ed.calls.filter(([m]) => m === "fs/write_text_file").map(([, p]) => p.path);
    assert.deepEqual(writes, [join(root, "notes.md"), main]);
    // The new file was never asked for (the editor's answer would be an error some clients
    // show); the existing one was read for the diff and again right before the write.
    const reads = ed.calls.filter(([m]) => m === "fs/read_text_file").map(([, p]) => p.path);
    assert.deepEqual(reads, [main, main]);
  });
});

test("client fs: the jail still holds: the editor is never asked about paths outside the roots", async () => {
  const { root } = workspace();
  const ed = editor();
  await withSession(root, ed, FS, async ({ turn, updates }) => {
    await turn([call("read_file", { path: "../outside/secret.txt" }), say("ok")]);
    await turn([call("write_file", { path: "../outside/new.txt", content: "x" }), say("ok")]);
    assert.equal(ed.calls.filter(([m]) => m.startsWith("fs/")).length, 0);
    const failed = updates().filter((u) => u.status === "failed");
    assert.equal(failed.length, 2);
    assert.match(failed[0].content[0].content.text, /outside the session's folders/);
  });
});

test("client terminal: the command runs in an editor terminal embedded in the tool card", async () => {
  const { root } = workspace();
  const ed = editor();
  await withSession(root, ed, { terminal: true }, async ({ turn, updates }) => {
    const r = await turn([call("run_command", { command: "echo hello from $PWD; echo key=[$CORVID_API_KEY]; exit 3" }), say("ok")]);
    assert.equal(r.stopReason, "end_turn");
    assert.deepEqual(ed.methods(), ["session/request_permission", "terminal/create", "terminal/wait_for_exit", "terminal/output", "terminal/release"]);
    const create = ed.calls[1][1];
    // The editor is asked to run the sandbox launcher, which then runs `sh -c CMD` confined.
    assert.equal(create.command, corvidBin());
    assert.equal(create.args[0], "sandbox");
    assert.deepEqual(create.args.slice(-3), ["sh", "-c", "echo hello from $PWD; echo key=[$CORVID_API_KEY]; exit 3"]);
    assert.equal(create.cwd, root);
    assert.ok(create.env.some((v) => v.name === "CORVID_API_KEY" && v.value === ""), "provider keys are blanked");
    const id = updates().find((u) => u.sessionUpdate === "tool_call").toolCallId;
    const card = updates().filter((u) => u.toolCallId === id);
    const embedded = card.findIndex((u) => u.content?.[0]?.type === "terminal");
    assert.ok(embedded > 0, "the terminal is embedded");
    assert.equal(card[embedded].content[0].terminalId, "term-1");
    const last = card.at(-1);
    assert.equal(last.status, "failed", "exit code 3 fails the call");
    assert.deepEqual(last.content, [{ type: "terminal", terminalId: "term-1" }]);
    assert.equal(last.rawOutput.exitCode, 3);
    // The output too, for clients that do not draw terminals.
    assert.equal(last.rawOutput.output, `hello from ${root}\nkey=[]\n`);
    assert.match(lastToolResult(), new RegExp(`hello from ${root}\\nkey=\\[\\]\\n\\[exit code 3\\]`));
  });
});

test("client terminal: the sandbox holds in the editor's terminal too (a write beside the folder fails)", async () => {
  const { base, root } = workspace();
  const ed = editor();
  await withSession(root, ed, { terminal: true }, async ({ turn }) => {
    const r = await turn([call("run_command", { command: "echo inside > in.txt; echo pwned > ../outside/escape.txt" }), say("ok")]);
    assert.equal(r.stopReason, "end_turn");
    assert.ok(ed.methods().includes("terminal/create"), ed.methods().join());
    assert.equal(readFileSync(join(root, "in.txt"), "utf8"), "inside\n");
    assert.equal(existsSync(join(base, "outside", "escape.txt")), false, "the write beside the folder was refused");
    assert.match(lastToolResult(), /Permission denied/);
  });
});

test("client terminal: an allowed network escalation reaches the network from the editor's terminal; a plain command does not", async () => {
  const server = await startHitServer();
  const { hits, url } = server;
  const { root } = workspace();
  const ed = editor();
  try {
    await withSession(root, ed, { terminal: true }, async ({ turn }) => {
      await turn([call("run_command", { command: `curl -sS -m 3 ${url}/plain` }), say("ok")]);
      assert.deepEqual(hits, [], "no network without an escalation");
      await turn([call("run_command", { command: `curl -sS -m 3 ${url}/lifted`, escalate: "network", reason: "fetch" }), say("ok")]);
      assert.match(lastToolResult(), /reached\n\[exit code 0\]/);
      assert.deepEqual(hits, ["/lifted"]);
      const creates = ed.calls.filter(([m]) => m === "terminal/create").map(([, p]) => p);
      // What the editor shows its user: the launcher, then their command; the policy (with the
      // escalation) travels in the terminal's environment.
      for (const [c, command] of creates.map((c, i) => [c, [`curl -sS -m 3 ${url}/plain`, `curl -sS -m 3 ${url}/lifted`][i]])) {
        assert.deepEqual(c.args, ["sandbox", "--", "sh", "-c", command]);
        assert.doesNotMatch(JSON.stringify([c.command, c.args]), /roots|forbidden|\{/, "no policy JSON on the command line");
      }
      const policy = (create) => JSON.parse(create.env.find((v) => v.name === "CORVID_SANDBOX_POLICY").value);
      assert.deepEqual(creates.map((c) => policy(c).network), [false, true], "the escalation travels in the launcher's policy");
      const question = ed.calls.filter(([m]) => m === "session/request_permission").at(-1)[1];
      assert.match(question.toolCall.title, /with network access$/);
    });
  } finally {
    await server.close();
  }
});

test("client terminal: cancel kills and releases the terminal; the turn ends cancelled", async () => {
  const { root } = workspace();
  const ed = editor();
  await withSession(root, ed, { terminal: true }, async ({ turn, cancel }) => {
    const pending = turn([call("run_command", { command: "sleep 30" }), say("never")]);
    while (!ed.methods().includes("terminal/wait_for_exit")) await new Promise((r) => setTimeout(r, 10));
    await cancel();
    assert.equal((await pending).stopReason, "cancelled");
    while (!ed.methods().includes("terminal/release")) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(ed.methods().slice(-2), ["terminal/kill", "terminal/release"]);
    const t = ed.terminals.get("term-1");
    await t.exited;
    assert.equal(t.exit.signal, "SIGKILL", "the process is gone");
  });
});

test("ask_user: an elicitation form when the client offers one", async () => {
  const { root } = workspace();
  const ed = editor({ elicit: () => ({ action: "accept", content: { answer: "blue" } }) });
  const caps = { elicitation: { form: {} } };
  await withSession(root, ed, caps, async ({ turn, updates, sessionId }) => {
    const r = await turn([call("ask_user", { question: "Which colour?", choices: ["red", "blue"] }), say("ok")]);
    assert.equal(r.stopReason, "end_turn");
    assert.equal(lastToolResult(), "The user answered: blue");
    const [method, params] = ed.calls[0];
    assert.equal(method, "elicitation/create");
    assert.equal(params.mode, "form");
    assert.equal(params.message, "Which colour?");
    assert.equal(params.sessionId, sessionId);
    assert.equal(params.toolCallId, updates().find((u) => u.sessionUpdate === "tool_call").toolCallId);
    assert.deepEqual(params.requestedSchema.properties.answer.enum, ["red", "blue"]);
    assert.deepEqual(params.requestedSchema.required, ["answer"]);
    assert.equal(updates().find((u) => u.sessionUpdate === "tool_call").title, "Ask: Which colour?");
    const formCard = updates().filter((u) => u.toolCallId === params.toolCallId);
    assert.deepEqual(formCard.map((u) => u.status).filter(Boolean), ["pending", "completed"], "pending while the form is open");

    // A free-form question and a declined form.
    ed.calls.length = 0;
    await turn([call("ask_user", { question: "Name?" }), say("ok")]);
    assert.equal(ed.calls[0][1].requestedSchema.properties.answer.enum, undefined);
    assert.equal(lastToolResult(), "The user answered: blue");
  });
  const declining = editor({ elicit: () => ({ action: "decline" }) });
  await withSession(root, declining, caps, async ({ turn }) => {
    await turn([call("ask_user", { question: "Name?" }), say("ok")]);
    assert.equal(lastToolResult(), "The user did not answer (the user declined to answer).");
  });
});

test("ask_user: without elicitation, choices become permission options; no choices fails fast", async () => {
  const { root } = workspace();
  let reply = (p) => ({ outcome: { outcome: "selected", optionId: p.options[1].optionId } });
  const ed = editor({ permission: (p) => reply(p) });
  await withSession(root, ed, {}, async ({ turn, updates }) => {
    await turn([call("ask_user", { question: "Which colour?", choices: ["red", "blue"] }), say("ok")]);
    const [, params] = ed.calls[0];
    assert.deepEqual(params.options.map((o) => [o.name, o.kind]), [["red", "allow_once"], ["blue", "allow_once"], ["Don't answer", "reject_once"]]);
    // One title on the card and in the question; pending until answered, then completed.
    const id = updates().find((u) => u.sessionUpdate === "tool_call").toolCallId;
    assert.equal(params.toolCall.title, "Ask: Which colour?");
    assert.equal(params.toolCall.toolCallId, id);
    const card = updates().filter((u) => u.toolCallId === id);
    assert.deepEqual(new Set(card.map((u) => u.title).filter(Boolean)), new Set(["Ask: Which colour?"]));
    assert.deepEqual(card.map((u) => u.status).filter(Boolean), ["pending", "completed"]);
    assert.equal(lastToolResult(), "The user answered: blue");

    ed.calls.length = 0;
    await turn([call("ask_user", { question: "Name?" }), say("ok")]);
    assert.equal(ed.calls.length, 0, "nothing was asked");
    assert.match(lastToolResult(), /cannot show free-form questions/);
    const failed = updates().filter((u) => u.status === "failed");
    assert.equal(failed.length, 1);
    // The card speaks to the user (what happened, the question), not the model's instruction.
    const shown = failed[0].content.map((c) => c.content?.text ?? "").join("\n");
    assert.match(shown, /Not asked here \(this editor cannot show a question without choices\)/);
    assert.match(shown, /> Name\?/);
    assert.doesNotMatch(shown, /offer choices|end the turn|elicitation/);

    reply = () => ({ outcome: { outcome: "cancelled" } });
    const r = await turn([call("ask_user", { question: "Which?", choices: ["a", "b"] }), say("never")]);
    assert.equal(r.stopReason, "cancelled", "a cancelled question ends the turn");
  });
});

test("/compact reports through compaction_update when the client advertises session.compaction", async () => {
  const { root } = workspace();
  await withSession(root, editor(), { session: { compaction: {} } }, async ({ prompt, updates }) => {
    fake.script("compaction question", { chunks: [{ content: "an answer" }] });
    await prompt("compaction question");
    fake.script("Summarize the conversation so far", { chunks: [{ content: "SUMMARY " }, { content: "of it" }] });
    const before = updates().length;
    assert.equal((await prompt("/compact")).stopReason, "end_turn");
    const ups = updates().slice(before).filter((u) => u.sessionUpdate !== "user_message_chunk");
    assert.deepEqual(ups.map((u) => u.sessionUpdate).filter((k) => k !== "usage_update"), [
      "compaction_update",
      "compaction_summary_chunk",
      "compaction_summary_chunk",
      "compaction_update",
    ]);
    const [start, , , end] = ups.filter((u) => u.sessionUpdate !== "usage_update");
    assert.equal(start.status, "in_progress");
    assert.equal(end.status, "completed");
    assert.equal(end.compactionId, start.compactionId);
    assert.deepEqual(end.summary, [{ type: "text", text: "SUMMARY of it" }]);
    // The next request carries the summary instead of the conversation.
    await prompt("next");
    assert.match(fake.requests.at(-1).body.messages[1].content, /SUMMARY of it/);
  });
});

// The ACP client glue against the real Corvid core, over both transports: in-process (the
// root package's createAgent over the napi addon) and stdio (the `corvid` binary, when
// CORVID_BIN is set). The editor side is a fake ClientHost that records what it was asked.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Stream } from "@agentclientprotocol/sdk";
import { AcpClient, CLIENT_CAPABILITIES, promptBlocks, sliceLines, type ClientHost, type PermissionChoice } from "../../src/acpClient";
import { partialMeta, reviewAnswer, reviewHunks } from "../../src/hunkReview";
import { restoreFiles, rewoundFiles } from "../../src/rewind";
import { stdioTransport } from "../../src/transport";
import { addPermission, applyUpdate, configSelects, initialState } from "../../src/viewModel";

const repo = resolve(__dirname, "../../..");
let fake: any;
let createAgent: (o: any) => Stream & { close(): Promise<void> };
before(async () => {
  fake = await (await import(pathToFileURL(join(repo, "tests/support/fake-model.mjs")).href)).startFakeModel();
  ({ createAgent } = await import(pathToFileURL(join(repo, "index.js")).href));
});
after(async () => fake.close());

function isolated() {
  const dir = mkdtempSync(join(tmpdir(), "corvid-vscode-unit-"));
  const configFile = join(dir, "config.toml");
  writeFileSync(configFile, `[discovery]\nollama_url = "http://127.0.0.1:9"\n`);
  const ws = join(dir, "ws");
  require("node:fs").mkdirSync(ws);
  return { dir, ws, configFile, dataDir: join(dir, "data") };
}

/** A fake editor: an in-memory "open document" layer over the disk. */
function fakeHost(ws: string, answer: (p: any) => string | PermissionChoice | null) {
  const open = new Map<string, string>();
  const calls: string[] = [];
  const state = initialState();
  const host: ClientHost = {
    readTextFile: async (p) => {
      calls.push(`read ${p}`);
      return open.get(p) ?? readFileSync(p, "utf8");
    },
    writeTextFile: async (p, c) => {
      calls.push(`write ${p}`);
      open.set(p, c); // like a WorkspaceEdit: the document changes, the disk does not
    },
    beforeCommand: async () => {
      calls.push("before-command");
      for (const [p, c] of open) writeFileSync(p, c); // like saving the agent's documents
      open.clear();
    },
    requestPermission: async (p) => {
      calls.push(`permission ${p.options.map((o) => o.optionId).join(",")}`);
      const a = answer(p);
      return typeof a === "string" ? { optionId: a } : a;
    },
    onUpdate: (n) => void applyUpdate(state, n.update),
    log: () => {},
    cwd: () => ws,
  };
  return { host, open, calls, state };
}

test("sliceLines applies 1-based line and limit", () => {
  assert.equal(sliceLines("a\nb\nc\nd", 2, 2), "b\nc");
  assert.equal(sliceLines("a\nb", null, null), "a\nb");
  assert.equal(sliceLines("a\nb\nc", 3), "c");
});

test("promptBlocks embeds the selection as a resource with its uri", () => {
  assert.deepEqual(promptBlocks("Explain", { uri: "file:///w/a.ts", text: "let x", mimeType: "text/x-typescript" }), [
    { type: "resource", resource: { uri: "file:///w/a.ts", text: "let x", mimeType: "text/x-typescript" } },
    { type: "text", text: "Explain" },
  ]);
});

async function fullTurn(stream: Stream & { close(): Promise<void> }, ws: string, marker: string) {
  writeFileSync(join(ws, "existing.txt"), "on disk\n");
  fake.script(marker, {
    steps: [
      { toolCalls: [{ name: "read_file", arguments: { path: "existing.txt" } }] },
      { toolCalls: [{ name: "write_file", arguments: { path: "existing.txt", content: "edited\n" } }] },
      { toolCalls: [{ name: "run_command", arguments: { command: "echo from-terminal; cat existing.txt" } }] },
      { chunks: [{ reasoning: "done thinking" }, { content: "All **done**." }] },
    ],
  });
  const f = fakeHost(ws, (p) => p.options.find((o: any) => o.kind === "allow_once")?.optionId ?? null);
  const client = new AcpClient(stream, f.host);
  const init = await client.initialize();
  assert.equal(init.protocolVersion, 1);
  const { sessionId } = await client.newSession(ws);
  f.state.sessionId = sessionId;
  const res = await client.prompt(sessionId, promptBlocks(marker));
  assert.equal(res.stopReason, "end_turn");
  // fs went through the editor, and the host was told before the command ran, so the command
  // saw the edited file (the fake host writes its "documents" out then, as the real one saves).
  const writeAt = f.calls.indexOf(`write ${join(ws, "existing.txt")}`);
  assert.ok(f.calls.includes(`read ${join(ws, "existing.txt")}`), f.calls.join("\n"));
  assert.ok(writeAt >= 0 && f.calls.indexOf("before-command") > writeAt, f.calls.join("\n"));
  assert.equal(readFileSync(join(ws, "existing.txt"), "utf8"), "edited\n");
  // Permissions were asked with every option; the command ran in our terminal.
  assert.ok(f.calls.filter((c) => c.startsWith("permission")).length >= 2);
  assert.ok(f.calls.find((c) => c.startsWith("permission"))!.includes("reject_once"));
  const tools = f.state.items.filter((i) => i.kind === "tool") as any[];
  assert.equal(tools.length, 3);
  assert.deepEqual(tools.map((t) => t.status), ["completed", "completed", "completed"]);
  assert.equal(tools[1].content[0].type, "diff");
  assert.equal(tools[1].content[0].oldText, "on disk\n");
  const term = tools[2].content.find((c: any) => c.type === "terminal");
  assert.ok(term, "run_command is embedded as a terminal");
  assert.match(client.terminals.peek(term.terminalId)!.output, /from-terminal\nedited\n/);
  assert.deepEqual(f.state.items.filter((i) => i.kind === "agent").map((i: any) => i.text), ["All **done**."]);
  assert.ok(f.state.items.some((i) => i.kind === "thought"));
  client.close();
  await stream.close();
}

test("in-process transport: a full turn with fs, terminal and permissions through the host", async () => {
  const iso = isolated();
  const stream = createAgent({ configFile: iso.configFile, dataDir: iso.dataDir, baseUrl: fake.url, model: "fake-model", apiKey: "k" });
  await fullTurn(stream, iso.ws, "UNIT-INPROC");
});

test("stdio transport: the same turn against the corvid binary", { skip: !process.env.CORVID_BIN && "CORVID_BIN not set" }, async () => {
  const iso = isolated();
  process.env.CORVID_CONFIG = iso.configFile;
  process.env.CORVID_DATA_DIR = iso.dataDir;
  const t = stdioTransport(process.env.CORVID_BIN!, ["acp"], { baseUrl: fake.url, model: "fake-model", apiKey: "k" }, iso.ws, () => {});
  await fullTurn({ ...t.stream, close: () => t.close() }, iso.ws, "UNIT-STDIO");
  assert.ok(existsSync(iso.dataDir));
});

test("in-process: a partial approval answered as the card does writes only the kept hunk, in the same turn", async () => {
  const iso = isolated();
  const lines = Array.from({ length: 20 }, (_, i) => `line ${i + 1}\n`);
  writeFileSync(join(iso.ws, "notes.txt"), lines.join(""));
  const edits = [
    { old_text: "line 2\n", new_text: "LINE TWO\n" },
    { old_text: "line 18\n", new_text: "LINE EIGHTEEN\n" },
  ];
  fake.script("UNIT-PARTIAL", { steps: [{ toolCalls: [{ name: "edit_file", arguments: { path: "notes.txt", edits } }] }, { chunks: [{ content: "ok" }] }] });
  let drawn: any[] = [];
  // The card: the question's diff as the view model holds it, hunk 2 rejected, Allow clicked.
  const f = fakeHost(iso.ws, (p) => {
    const state = initialState();
    addPermission(state, 1, p);
    const diffs = (state.items[0] as any).diffs;
    drawn = reviewHunks(diffs[0]);
    const answer = reviewAnswer(p.options, "allow_once", [{ diff: 0, hunk: 1 }], diffs);
    assert.equal(answer.partial, true, "the core numbered the hunks, so the allow stands");
    return { optionId: answer.optionId, meta: partialMeta(answer.rejected) };
  });
  const stream = createAgent({ configFile: iso.configFile, dataDir: iso.dataDir, baseUrl: fake.url, model: "fake-model", apiKey: "k" });
  const client = new AcpClient(stream, f.host);
  await client.initialize();
  const { sessionId } = await client.newSession(iso.ws);
  f.state.sessionId = sessionId;
  const requests = fake.requests.length;
  assert.equal((await client.prompt(sessionId, promptBlocks("UNIT-PARTIAL"))).stopReason, "end_turn");
  assert.deepEqual(drawn.map((h) => h.lines.filter((l: any) => l.op !== " ").map((l: any) => l.op + l.text)), [["-line 2", "+LINE TWO"], ["-line 18", "+LINE EIGHTEEN"]]);
  const written = f.open.get(join(iso.ws, "notes.txt"));
  assert.equal(written, lines.join("").replace("line 2\n", "LINE TWO\n"), "hunk 1 written, hunk 2 not");
  assert.equal(fake.requests.length - requests, 2, "no extra model turn");
  client.close();
  await stream.close();
});

test("capabilities advertised: fs read/write and terminal", () => {
  assert.deepEqual(CLIENT_CAPABILITIES, { fs: { readTextFile: true, writeTextFile: true }, terminal: true });
});

test("in-process: mode picker, selection as an embedded resource, history (list, then load replays)", async () => {
  const iso = isolated();
  const opts = { configFile: iso.configFile, dataDir: iso.dataDir, baseUrl: fake.url, model: "fake-model", apiKey: "k" };
  const stream = createAgent(opts);
  const f = fakeHost(iso.ws, () => null);
  const client = new AcpClient(stream, f.host);
  await client.initialize();
  assert.equal(client.init!.agentCapabilities?.loadSession, true);
  const res = await client.newSession(iso.ws);
  const mode = configSelects(res.configOptions).find((c) => c.id === "mode");
  assert.ok(mode && mode.options.length > 1, "a mode picker");
  const set = await client.setConfigOption(res.sessionId, "mode", "read-only");
  assert.equal(configSelects(set.configOptions).find((c) => c.id === "mode")!.currentValue, "read-only");
  fake.script("UNIT-RESOURCE", { chunks: [{ content: "seen" }] });
  f.state.sessionId = res.sessionId;
  const r = await client.prompt(res.sessionId, promptBlocks("UNIT-RESOURCE explain", { uri: "file:///w/a.ts", text: "const SELECTED = 1;" }));
  assert.equal(r.stopReason, "end_turn");
  const sent = fake.requests.filter((q: any) => q.api === "openai").at(-1).body;
  assert.match(JSON.stringify(sent.messages), /const SELECTED = 1;/);
  const { sessions } = await client.listSessions(iso.ws);
  assert.ok(sessions.some((s) => s.sessionId === res.sessionId));
  client.close();
  await stream.close();
  // A fresh agent on the same store: session/load replays the conversation into the view model.
  const stream2 = createAgent(opts);
  const f2 = fakeHost(iso.ws, () => null);
  const c2 = new AcpClient(stream2, f2.host);
  await c2.initialize();
  f2.state.sessionId = res.sessionId;
  await c2.loadSession(res.sessionId, iso.ws);
  assert.ok(f2.state.items.some((i) => i.kind === "user" && i.text.includes("UNIT-RESOURCE")), JSON.stringify(f2.state.items));
  assert.ok(f2.state.items.some((i) => i.kind === "agent" && i.text === "seen"));
  // The history list's rename (session/set_title) and delete (session/delete).
  assert.deepEqual(c2.sessionFeatures, { load: true, delete: true, rename: true });
  await c2.setSessionTitle(res.sessionId, "Renamed by the unit test");
  assert.equal((await c2.listSessions(iso.ws)).sessions.find((s) => s.sessionId === res.sessionId)?.title, "Renamed by the unit test");
  await c2.deleteSession(res.sessionId);
  assert.ok(!(await c2.listSessions(iso.ws)).sessions.some((s) => s.sessionId === res.sessionId), "deleted, not listed");
  c2.close();
  await stream2.close();
});

test("stdio transport: a command that cannot run fails the start at once, naming the command", async () => {
  const t = stdioTransport("/nonexistent/corvid-agent", ["acp"], {}, tmpdir(), () => {});
  await assert.rejects(t.failed, /could not run the agent command `\/nonexistent\/corvid-agent`: .*ENOENT/);
  await t.close(); // never started: returns without waiting for an exit
});

test("stdio transport: an agent that exits before answering fails the start", async () => {
  const t = stdioTransport(process.execPath, ["-e", "process.exit(3)"], {}, tmpdir(), () => {});
  const client = new AcpClient(t.stream, fakeHost(tmpdir(), () => null).host);
  // Either the closed stream or the exit ends the wait; the exit is reported with its code.
  await assert.rejects(Promise.race([client.initialize(), t.failed]));
  await assert.rejects(t.failed, /exited \(3\)/);
  client.close();
  await t.close();
});

test("in-process: rewind to a named prompt forks before it and the editor sets the file back, keeping a file the user changed", async () => {
  const iso = isolated();
  const [a, b] = [join(iso.ws, "a.txt"), join(iso.ws, "b.txt")];
  writeFileSync(a, "a0\n");
  writeFileSync(b, "b0\n");
  const edit = (path: string, old_text: string, new_text: string) => ({ toolCalls: [{ name: "edit_file", arguments: { path, old_text, new_text } }] });
  fake.script("UNIT-REW-1", { steps: [edit("a.txt", "a0", "a1"), { chunks: [{ content: "one" }] }] });
  fake.script("UNIT-REW-2", { steps: [edit("a.txt", "a1", "a2"), edit("b.txt", "b0", "b2"), { chunks: [{ content: "two" }] }] });
  const f = fakeHost(iso.ws, () => "allow_once");
  const stream = createAgent({ configFile: iso.configFile, dataDir: iso.dataDir, baseUrl: fake.url, model: "fake-model", apiKey: "k" });
  const client = new AcpClient(stream, f.host);
  await client.initialize();
  assert.equal(client.canRewind, true);
  const { sessionId } = await client.newSession(iso.ws);
  assert.equal((await client.prompt(sessionId, promptBlocks("UNIT-REW-1"), "p-1")).stopReason, "end_turn");
  assert.equal((await client.prompt(sessionId, promptBlocks("UNIT-REW-2"), "p-2")).stopReason, "end_turn");
  f.open.set(b, "b2 and mine\n"); // the user's edit after the agent's
  const res = await client.forkBefore(sessionId, iso.ws, "p-2");
  assert.notEqual(res.sessionId, sessionId);
  const files = rewoundFiles(res._meta)!;
  assert.deepEqual(files, [{ path: a, before: "a1\n", after: "a2\n" }, { path: b, before: "b0\n", after: "b2\n" }]);
  const outcome = await restoreFiles(files, {
    read: async (p) => f.open.get(p) ?? readFileSync(p, "utf8"),
    write: async (p, t) => void f.open.set(p, t),
    remove: async (p) => void f.open.delete(p),
  });
  assert.deepEqual(outcome, { restored: [a], removed: [], conflicts: [b] });
  assert.equal(f.open.get(a), "a1\n");
  assert.equal(f.open.get(b), "b2 and mine\n");
  await assert.rejects(client.forkBefore(sessionId, iso.ws, "p-unknown"), /no user prompt p-unknown/);
  client.close();
  await stream.close();
});

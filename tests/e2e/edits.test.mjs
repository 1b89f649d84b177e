// Forgiving edits and apply_patch (issue 42) through the real binary and a scripted model:
// each match rule, CRLF kept, replace_all, multi-edit all or nothing, and apply_patch offered
// to a GPT-family model, updating one file and adding another in one permission question.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../support/agent.mjs";

let fake;
before(async () => (fake = await startFakeModel({ models: ["fake-model", "gpt-4.1"] })));
after(async () => fake.close());

let nextMarker = 0;
function workspace(files) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "corvid-edits-")));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

const allowOnce = () => ({ outcome: { outcome: "selected", optionId: "allow_once" } });

async function setup(root, { model = "fake-model", answer = allowOnce } = {}) {
  const agent = spawnAgent({ env: agentEnv({ fake, model }) });
  await agent.request("init", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  const s = await agent.request("new", "session/new", { cwd: root, mcpServers: [] });
  const sessionId = s.result.sessionId;
  const asked = [];
  const answered = new Set();
  const timer = setInterval(() => {
    for (const f of agent.frames) {
      if (f.method === "session/request_permission" && !answered.has(f.id)) {
        answered.add(f.id);
        asked.push(f.params);
        agent.send({ jsonrpc: "2.0", id: f.id, result: answer(f.params) });
      }
    }
  }, 5);
  timer.unref();
  let n = 0;
  return {
    asked,
    async turn(steps) {
      const marker = `EDITS-${++nextMarker}`;
      fake.script(marker, { steps });
      const id = `p${++n}`;
      agent.send({ jsonrpc: "2.0", id, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: marker }] } });
      return agent.waitFor((f) => f.id === id, 15000, `prompt ${marker}`);
    },
    toolUpdates: (id) => agent.updates(sessionId).filter((u) => u.toolCallId === id),
    async done() {
      clearInterval(timer);
      await agent.stop();
      assert.deepEqual(agent.violations, [], "every frame is valid ACP");
    },
  };
}

const call = (name, args) => ({ toolCalls: [{ name, arguments: args }] });
const say = (text) => ({ chunks: [{ content: text }] });
const lastToolResult = () => fake.requests.at(-1).body.messages.filter((m) => m.role === "tool").at(-1)?.content;
const read = (root, path) => readFileSync(join(root, path), "utf8");

test("edit_file matches forgivingly, says which rule matched, and keeps a CRLF file CRLF", async () => {
  const root = workspace({
    "crlf.txt": "first\r\nsecond\r\nthird\r\n",
    "trail.py": "def f():  \n    return 1\t\n",
    "nested.rs": "fn a() {\n    if x {\n        go();\n    }\n}\n",
    "quotes.md": "He said \u201Cit\u2019s done\u201D \u2014 twice.\n",
  });
  const t = await setup(root);
  await t.turn([call("edit_file", { path: "crlf.txt", old_text: "first\nsecond\n", new_text: "one\ntwo\n" }), say("ok")]);
  assert.equal(read(root, "crlf.txt"), "one\r\ntwo\r\nthird\r\n");
  assert.match(lastToolResult(), /Edited crlf\.txt \(old_text matched after normalizing line endings\)/);

  await t.turn([call("edit_file", { path: "trail.py", old_text: "def f():\n    return 1\n", new_text: "def f():\n    return 2\n" }), say("ok")]);
  assert.equal(read(root, "trail.py"), "def f():\n    return 2\n");
  assert.match(lastToolResult(), /matched ignoring trailing whitespace/);

  await t.turn([call("edit_file", { path: "nested.rs", old_text: "if x {\n    go();\n}", new_text: "if x {\n    stop();\n}" }), say("ok")]);
  assert.equal(read(root, "nested.rs"), "fn a() {\n    if x {\n        stop();\n    }\n}\n");
  assert.match(lastToolResult(), /matched with different indentation/);

  await t.turn([call("edit_file", { path: "quotes.md", old_text: "\"it's done\" - twice", new_text: "\"it's over\"" }), say("ok")]);
  assert.equal(read(root, "quotes.md"), "He said \"it's over\".\n");
  assert.match(lastToolResult(), /matched after normalizing Unicode punctuation/);

  // An exact match says nothing more; a loose match in two places is refused, file untouched.
  await t.turn([call("edit_file", { path: "trail.py", old_text: "return 2", new_text: "return 3" }), say("ok")]);
  assert.equal(lastToolResult(), "Edited trail.py");
  writeFileSync(join(root, "twice.txt"), "a  \nb\na\t\nb\n");
  await t.turn([call("edit_file", { path: "twice.txt", old_text: "a\nb", new_text: "c" }), say("ok")]);
  assert.match(lastToolResult(), /occurs 2 times in twice\.txt \(ignoring trailing whitespace\)/);
  assert.equal(read(root, "twice.txt"), "a  \nb\na\t\nb\n");
  await t.done();
});

test("edit_file: replace_all, and several edits applied in order or not at all", async () => {
  const root = workspace({ "cfg.ini": "a=1\nb=1\nc=1\n" });
  const t = await setup(root);
  await t.turn([call("edit_file", { path: "cfg.ini", old_text: "=1", new_text: "=2", replace_all: true }), say("ok")]);
  assert.equal(read(root, "cfg.ini"), "a=2\nb=2\nc=2\n");
  assert.match(lastToolResult(), /replaced 3 occurrences/);

  const edits = [
    { old_text: "a=2", new_text: "alpha=2" },
    { old_text: "alpha=2\nb=2", new_text: "alpha=2\nbeta=2" },
  ];
  await t.turn([call("edit_file", { path: "cfg.ini", edits }), say("ok")]);
  assert.equal(read(root, "cfg.ini"), "alpha=2\nbeta=2\nc=2\n");
  // The permission question showed the combined change, in one diff.
  const proposed = t.asked.at(-1).toolCall.content;
  assert.equal(proposed.length, 1);
  assert.equal(proposed[0].oldText, "a=2\nb=2\nc=2\n");
  assert.equal(proposed[0].newText, "alpha=2\nbeta=2\nc=2\n");

  const asked = t.asked.length;
  const failing = [{ old_text: "c=2", new_text: "gamma=2" }, { old_text: "delta=9", new_text: "x" }];
  await t.turn([call("edit_file", { path: "cfg.ini", edits: failing }), say("ok")]);
  assert.match(lastToolResult(), /edit 2 of 2: old_text was not found in cfg\.ini.*Nothing was changed\./s);
  assert.equal(read(root, "cfg.ini"), "alpha=2\nbeta=2\nc=2\n", "the first edit was not written either");
  assert.equal(t.asked.length, asked, "an edit that cannot apply fails without asking");
  await t.done();
});

test("a partial approval writes only the kept hunks, tells the model which were not, and needs no second model turn", async () => {
  const lines = Array.from({ length: 30 }, (_, i) => `line ${i + 1}\n`);
  const root = workspace({ "notes.txt": lines.join("") });
  // Keep the first hunk, reject the second: the answer names it in _meta, as the VS Code
  // extension does when the user keeps some hunks of the proposed change.
  const t = await setup(root, {
    answer: () => ({ outcome: { outcome: "selected", optionId: "allow_once" }, _meta: { corvid: { rejectedHunks: [{ diff: 0, hunk: 1 }] } } }),
  });
  const requests = fake.requests.length;
  const edits = [
    { old_text: "line 2\n", new_text: "LINE TWO\n" },
    { old_text: "line 25\n", new_text: "LINE TWENTY-FIVE\n" },
  ];
  await t.turn([call("edit_file", { path: "notes.txt", edits }), say("ok")]);
  // The question numbered the hunks on its diff, 1-based as in a unified diff header.
  const [diff] = t.asked.at(-1).toolCall.content;
  assert.deepEqual(diff._meta.corvid.hunks, [
    { oldStart: 2, oldLines: 1, newStart: 2, newLines: 1 },
    { oldStart: 25, oldLines: 1, newStart: 25, newLines: 1 },
  ]);
  const expected = [...lines];
  expected[1] = "LINE TWO\n";
  assert.equal(read(root, "notes.txt"), expected.join(""), "only the kept hunk was written");
  assert.equal(fake.requests.length - requests, 2, "the prompt and the tool result: no extra turn to redo the edit");
  const result = lastToolResult();
  assert.match(result, /approved only part of this change\. Of its 2 hunks, hunk 1 was written; hunk 2 was rejected and NOT written/);
  assert.match(result, /-line 25\n\+LINE TWENTY-FIVE/);
  // The card's final diff is what was written.
  const diffs = t.toolUpdates(t.asked.at(-1).toolCall.toolCallId).flatMap((u) => (u.content ?? []).filter((c) => c.type === "diff"));
  assert.equal(diffs.at(-1).newText, read(root, "notes.txt"));

  // Every hunk rejected is a rejection: nothing written, the model told.
  const t2 = await setup(root, {
    answer: () => ({
      outcome: { outcome: "selected", optionId: "allow_once" },
      _meta: { corvid: { rejectedHunks: [{ diff: 0, hunk: 0 }, { diff: 0, hunk: 1 }] } },
    }),
  });
  const before = read(root, "notes.txt");
  await t2.turn([call("edit_file", { path: "notes.txt", edits: [{ old_text: "line 3\n", new_text: "x\n" }, { old_text: "line 20\n", new_text: "y\n" }] }), say("ok")]);
  assert.equal(read(root, "notes.txt"), before);
  assert.match(lastToolResult(), /rejected every part of the change/);
  await t.done();
  await t2.done();
});

test("apply_patch is offered to a GPT-family model and updates one file and adds another in one question", async () => {
  const root = workspace({ "src/app.py": "def greet():\r\n    print(\"Hi\")  \r\n\r\ndef main():\r\n    greet()\r\n" });
  const t = await setup(root, { model: "gpt-4.1" });
  const patch = [
    "*** Begin Patch",
    "*** Update File: src/app.py",
    "@@ def greet():",
    '-    print("Hi")',
    '+    print("Hello, world!")',
    "*** Add File: docs/hello.md",
    "+# Hello",
    "+",
    "+Says hello.",
    "*** End Patch",
  ].join("\n");
  await t.turn([call("apply_patch", { input: patch }), say("ok")]);
  const tools = fake.requests.at(-1).body.tools.map((x) => x.function.name);
  assert.ok(tools.includes("apply_patch") && tools.includes("edit_file"), tools.join(", "));
  const spec = fake.requests.at(-1).body.tools.find((x) => x.function.name === "apply_patch").function;
  assert.match(spec.description, /\*\*\* Begin Patch/);
  assert.equal(read(root, "src/app.py"), "def greet():\r\n    print(\"Hello, world!\")\r\n\r\ndef main():\r\n    greet()\r\n");
  assert.equal(read(root, "docs/hello.md"), "# Hello\n\nSays hello.\n");
  assert.match(lastToolResult(), /M src\/app\.py \(hunk 1 matched ignoring trailing whitespace\)\nA docs\/hello\.md/);
  // One question, showing both files' diffs.
  assert.equal(t.asked.length, 1);
  const diffs = t.asked[0].toolCall.content;
  assert.deepEqual(diffs.map((d) => [d.type, d.path]), [["diff", join(root, "src/app.py")], ["diff", join(root, "docs/hello.md")]]);
  assert.equal(diffs[1].oldText ?? null, null);
  assert.equal(t.toolUpdates("t1-1").at(-1).status, "completed");

  // All or nothing: a hunk that does not apply leaves every file, the added one too, as it was.
  const bad = ["*** Begin Patch", "*** Add File: new.txt", "+x", "*** Update File: src/app.py", "@@", "-nowhere", "+x", "*** End Patch"].join("\n");
  await t.turn([call("apply_patch", { input: bad }), say("ok")]);
  assert.match(lastToolResult(), /patch line 4: src\/app\.py: hunk 1 \(patch line 5\): these lines were not found/);
  assert.equal(existsSync(join(root, "new.txt")), false);
  // A malformed patch says where.
  await t.turn([call("apply_patch", { input: "*** Begin Patch\n*** Update File: src/app.py\n@@\n?x\n*** End Patch" }), say("ok")]);
  assert.match(lastToolResult(), /invalid patch: line 4: unexpected line in a hunk/);
  assert.equal(t.asked.length, 1, "patches that cannot apply fail without asking");
  await t.done();
});

test("apply_patch is not offered to other families", async () => {
  const root = workspace({ "a.txt": "a\n" });
  const t = await setup(root);
  await t.turn([say("hi")]);
  const tools = fake.requests.at(-1).body.tools.map((x) => x.function.name);
  assert.ok(tools.includes("edit_file") && !tools.includes("apply_patch"), tools.join(", "));
  await t.done();
});

test("apply_patch deletes and moves files, and every path, destinations too, stays in the jail", async () => {
  const root = workspace({ "old/name.txt": "keep\nchange\n", "obsolete.txt": "bye\n" });
  const t = await setup(root, { model: "gpt-4.1" });
  const patch = [
    "*** Begin Patch",
    "*** Update File: old/name.txt",
    "*** Move to: renamed/name.txt",
    "@@",
    " keep",
    "-change",
    "+changed",
    "*** Delete File: obsolete.txt",
    "*** End Patch",
  ].join("\n");
  await t.turn([call("apply_patch", { input: patch }), say("ok")]);
  assert.equal(read(root, "renamed/name.txt"), "keep\nchanged\n");
  assert.equal(existsSync(join(root, "old/name.txt")), false);
  assert.equal(existsSync(join(root, "obsolete.txt")), false);
  assert.match(lastToolResult(), /M old\/name\.txt -> renamed\/name\.txt\nD obsolete\.txt/);
  const escape = ["*** Begin Patch", "*** Update File: renamed/name.txt", "*** Move to: ../escaped.txt", "@@", "-keep", "+x", "*** End Patch"].join("\n");
  await t.turn([call("apply_patch", { input: escape }), say("ok")]);
  assert.match(lastToolResult(), /outside the session's folders/);
  assert.equal(read(root, "renamed/name.txt"), "keep\nchanged\n");
  assert.equal(existsSync(join(root, "..", "escaped.txt")), false);
  await t.done();
});

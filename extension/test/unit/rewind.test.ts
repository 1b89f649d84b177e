import { test } from "node:test";
import assert from "node:assert/strict";
import { memFs } from "./memFs";
import { restoreFiles, rewindSummary, rewoundFiles } from "../../src/rewind";
import { applyUpdate, initialState } from "../../src/viewModel";

test("a rewind sets back files as the agent left them, removes created ones, and keeps one the user changed", async () => {
  const { files, ops } = memFs({ "/w/a.py": "agent\n", "/w/new.py": "made\n", "/w/mine.py": "agent, then mine\n", "/w/back.py": "old\n" });
  const outcome = await restoreFiles(
    [
      { path: "/w/a.py", before: "old\n", after: "agent\n" },
      { path: "/w/new.py", before: null, after: "made\n" },
      { path: "/w/mine.py", before: "old\n", after: "agent\n" },
      { path: "/w/back.py", before: "old\n", after: "agent\n" }, // already as it was: nothing to do
      { path: "/w/gone.py", before: "old\n", after: "agent\n" }, // deleted since: a conflict
    ],
    ops,
  );
  assert.deepEqual(outcome, { restored: ["/w/a.py"], removed: ["/w/new.py"], conflicts: ["/w/mine.py", "/w/gone.py"] });
  assert.equal(files.get("/w/a.py"), "old\n");
  assert.equal(files.has("/w/new.py"), false);
  assert.equal(files.get("/w/mine.py"), "agent, then mine\n", "the user's edit is never overwritten");
  const text = rewindSummary(outcome, (p) => p.slice(3));
  assert.equal(text, "Rewound: set back a.py; removed new.py. Conflict: mine.py, gone.py changed after Corvid's edit, so they were left as they are.");
  assert.equal(rewindSummary({ restored: [], removed: [], conflicts: ["/w/x"] }, (p) => p), "Rewound: no file needed setting back. Conflict: /w/x changed after Corvid's edit, so it was left as it is.");
});

test("the fork's answer: files read from _meta.corvid.rewind, malformed entries dropped, none without a rewind", () => {
  const meta = { corvid: { rewind: { files: [{ path: "/a", before: null, after: "x" }, { path: "/b", before: 3, after: "y" }, { path: "/c", before: "o", after: "n" }] } } };
  assert.deepEqual(rewoundFiles(meta), [{ path: "/a", before: null, after: "x" }, { path: "/c", before: "o", after: "n" }]);
  assert.equal(rewoundFiles({}), null);
  assert.equal(rewoundFiles(undefined), null);
});

test("replayed prompts keep their messageIds and two in a row stay two messages", () => {
  const s = initialState();
  const chunk = (messageId: string, text: string) => applyUpdate(s, { sessionUpdate: "user_message_chunk", messageId, content: { type: "text", text } });
  chunk("u1", "first");
  chunk("u1", " part");
  chunk("u2", "second"); // a turn that failed before answering: no agent text between
  applyUpdate(s, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "ok" } });
  assert.deepEqual(s.items, [
    { kind: "user", text: "first part", messageId: "u1" },
    { kind: "user", text: "second", messageId: "u2" },
    { kind: "agent", text: "ok" },
  ]);
});

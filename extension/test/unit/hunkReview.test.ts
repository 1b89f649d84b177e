import { test } from "node:test";
import assert from "node:assert/strict";
import { followUpText, hunkLines, hunkSummary, numberList, partialMeta, reviewAnswer, reviewable, reviewHunks, validRejections, type Change } from "../../src/hunkReview";
import { addPermission, initialState, permissionSummary, resolvePermission, type Item } from "../../src/viewModel";

// Twelve lines; the edit changes line 2 and line 11, nine lines apart: two hunks with three
// lines of context (they merge when at most six unchanged lines lie between them).
const twelve = Array.from({ length: 12 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";
const twoHunks: Change = { path: "/w/notes.txt", oldText: twelve, newText: twelve.replace("line 2\n", "LINE TWO\n").replace("line 11\n", "LINE ELEVEN\n") };
const options = [
  { optionId: "allow_once", name: "Allow", kind: "allow_once" },
  { optionId: "allow_always", name: "Always allow", kind: "allow_always" },
  { optionId: "reject_once", name: "Reject", kind: "reject_once" },
  { optionId: "reject_always", name: "Always reject", kind: "reject_always" },
];

test("hunks: changes far apart are separate hunks with their context; near ones are one", () => {
  const hs = reviewHunks(twoHunks);
  assert.equal(hs.length, 2);
  assert.deepEqual(hs[0].lines.map((l) => l.op + l.text), [" line 1", "-line 2", "+LINE TWO", " line 3", " line 4", " line 5"]);
  assert.deepEqual(hs[1].lines.map((l) => l.op + l.text), [" line 8", " line 9", " line 10", "-line 11", "+LINE ELEVEN", " line 12"]);
  // Lines 2 and 9 changed: six unchanged lines between them, one hunk.
  const near: Change = { ...twoHunks, newText: twelve.replace("line 2\n", "X\n").replace("line 9\n", "Y\n") };
  assert.equal(reviewHunks(near).length, 1);
  assert.equal(reviewable(near), false);
  assert.equal(reviewable(twoHunks), true);
  // A new file is one piece: never reviewed hunk by hunk.
  assert.equal(reviewable({ path: "/w/new.txt", oldText: null, newText: "a\n\n\n\n\n\n\n\n\nb\n" }), false);
});

test("a hunk's lines and summary: a replacement, a removal, an insertion", () => {
  const [first, second] = reviewHunks(twoHunks);
  assert.equal(hunkLines(first), "line 2");
  assert.equal(hunkSummary(second), "replaces `line 11` with `LINE ELEVEN`");
  const removal = reviewHunks({ path: "p", oldText: twelve, newText: twelve.replace("line 4\nline 5\n", "") })[0];
  assert.equal(hunkLines(removal), "lines 4-5");
  assert.equal(hunkSummary(removal), "removes `line 4` (+1 more line)");
  const insertion = reviewHunks({ path: "p", oldText: twelve, newText: twelve.replace("line 6\n", "line 6\nnew `x`\n") })[0];
  assert.equal(hunkLines(insertion), "after line 6");
  assert.equal(hunkSummary(insertion), "adds `new 'x'`");
  assert.equal(hunkLines(reviewHunks({ path: "p", oldText: "a\n", newText: "top\na\n" })[0]), "at the start");
});

test("the follow-up names the rejected hunk, its lines and what it did, and what to keep", () => {
  const text = followUpText([twoHunks], [{ diff: 0, hunk: 1 }], (p) => p.replace("/w/", ""));
  assert.equal(
    text,
    "I rejected hunk 2 of 2 of your edit to notes.txt, so none of that edit was applied:\n" +
      "- hunk 2 (line 11): replaces `line 11` with `LINE ELEVEN`\n" +
      "Make the edit again without that hunk, keeping hunk 1 as you proposed it.",
  );
  const all = followUpText([twoHunks], [{ diff: 0, hunk: 0 }, { diff: 0, hunk: 1 }])!;
  assert.match(all, /^I rejected hunks 1 and 2 of 2 of your edit to \/w\/notes\.txt/);
  assert.match(all, /Leave that file as it is\.$/);
  assert.equal(followUpText([twoHunks], []), null);
  assert.equal(numberList([1, 2, 4]), "1, 2 and 4");
});

test("rejections from the webview are kept only where they name a hunk of a reviewable change", () => {
  const newFile: Change = { path: "/w/n.txt", oldText: null, newText: "x\n" };
  const sent = [{ diff: 0, hunk: 1 }, { diff: 0, hunk: 1 }, { diff: 0, hunk: 2 }, { diff: 1, hunk: 0 }, { diff: "0", hunk: 0 }, null, { diff: -1, hunk: 0 }];
  assert.deepEqual(validRejections([twoHunks, newFile], sent), [{ diff: 0, hunk: 0 }, { diff: 0, hunk: 1 }]);
  assert.deepEqual(validRejections([twoHunks], "nonsense"), []);
});

test("an approval with rejected hunks is answered with the reject option; other answers as clicked", () => {
  const r = [{ diff: 0, hunk: 1 }];
  assert.deepEqual(reviewAnswer(options, "allow_once", r, [twoHunks]), { optionId: "reject_once", rejected: r, partial: false });
  assert.deepEqual(reviewAnswer(options, "allow_always", r), { optionId: "reject_once", rejected: r, partial: false });
  assert.deepEqual(reviewAnswer(options, "allow_once", []), { optionId: "allow_once", rejected: [], partial: false });
  // Rejecting the whole call says nothing about hunks.
  assert.deepEqual(reviewAnswer(options, "reject_always", r), { optionId: "reject_always", rejected: [], partial: false });
  // No reject option offered: nothing to answer a partial approval with.
  assert.deepEqual(reviewAnswer(options.slice(0, 2), "allow_once", r), { optionId: "allow_once", rejected: [], partial: false });
});

// Corvid's numbering of twoHunks, as its question's diff carries it (_meta.corvid.hunks).
const numbered: Change = {
  ...twoHunks,
  hunks: [
    { oldStart: 2, oldLines: 1, newStart: 2, newLines: 1 },
    { oldStart: 11, oldLines: 1, newStart: 11, newLines: 1 },
  ],
};

test("a change the agent numbered: its hunks are drawn as numbered, and an allow with some rejected stays an allow", () => {
  assert.deepEqual(reviewHunks(numbered), reviewHunks(twoHunks), "the same hunks, context and line numbers");
  // The agent's numbering wins where ours would group differently: one range over both changes is one hunk.
  const one = reviewHunks({ ...twoHunks, hunks: [{ oldStart: 2, oldLines: 10, newStart: 2, newLines: 10 }] });
  assert.equal(one.length, 1);
  assert.deepEqual(one[0].lines.filter((l) => l.op !== " ").map((l) => l.op + l.text), ["-line 2", "+LINE TWO", "-line 11", "+LINE ELEVEN"]);
  assert.equal(one[0].oldStart, 1);
  // An insertion's range is empty on the old side and starts at the line it follows.
  const inserted = reviewHunks({ path: "p", oldText: twelve, newText: twelve.replace("line 6\n", "line 6\nnew\n"), hunks: [{ oldStart: 6, oldLines: 0, newStart: 7, newLines: 1 }] });
  assert.deepEqual(inserted[0].lines.map((l) => `${l.op}${l.text}:${l.oldNo ?? ""}/${l.newNo ?? ""}`), [" line 4:4/4", " line 5:5/5", " line 6:6/6", "+new:/7", " line 7:7/8", " line 8:8/9", " line 9:9/10"]);
  // Ranges that do not fit the texts are not used: the card numbers the hunks itself, and the answer falls back to a reject.
  const wrong: Change = { ...twoHunks, hunks: [{ oldStart: 2, oldLines: 1, newStart: 3, newLines: 1 }, { oldStart: 40, oldLines: 1, newStart: 40, newLines: 1 }] };
  assert.deepEqual(reviewHunks(wrong), reviewHunks(twoHunks));
  const r = [{ diff: 0, hunk: 1 }];
  assert.deepEqual(reviewAnswer(options, "allow_once", r, [wrong]), { optionId: "reject_once", rejected: r, partial: false });
  assert.deepEqual(reviewAnswer(options, "allow_once", r, [numbered]), { optionId: "allow_once", rejected: r, partial: true });
  assert.deepEqual(reviewAnswer(options, "allow_always", r, [numbered]), { optionId: "allow_always", rejected: r, partial: true });
  assert.deepEqual(partialMeta(r), { corvid: { rejectedHunks: [{ diff: 0, hunk: 1 }] } });
});

test("the view model reads the agent's hunks from the diff's _meta, and the answered card says what was written", () => {
  const s = initialState();
  const { hunks, ...plain } = numbered;
  addPermission(s, 8, { toolCall: { toolCallId: "c2", title: "Edit notes.txt", content: [{ type: "diff", ...plain, _meta: { corvid: { hunks } } }] }, options });
  const card = s.items[0] as Extract<Item, { kind: "permission" }>;
  assert.deepEqual(card.diffs![0].hunks, hunks);
  resolvePermission(s, 8, "allow_once", [{ diff: 0, hunk: 1 }], true);
  assert.equal(permissionSummary(card), "Allowed in part: hunk 2 of 2 rejected, the rest written");
  // Malformed numbering is dropped.
  const t = initialState();
  addPermission(t, 9, { toolCall: { toolCallId: "c3", title: "Edit", content: [{ type: "diff", ...plain, _meta: { corvid: { hunks: [{ oldStart: -1 }] } } }] }, options });
  assert.equal((t.items[0] as any).diffs[0].hunks, undefined);
});

test("the answered card says which hunks were rejected", () => {
  const s = initialState();
  addPermission(s, 7, { toolCall: { toolCallId: "c1", title: "Edit notes.txt", content: [{ type: "diff", ...twoHunks }] }, options });
  resolvePermission(s, 7, "reject_once", [{ diff: 0, hunk: 1 }]);
  const card = s.items[0] as Extract<Item, { kind: "permission" }>;
  assert.equal(permissionSummary(card), "Rejected hunk 2 of 2; a follow-up asks for the edit without it");
  resolvePermission(s, 7, "reject_once");
  assert.deepEqual(card.rejectedHunks, [{ diff: 0, hunk: 1 }]);
});

import { test } from "node:test";
import assert from "node:assert/strict";
import { blockLines, blocks, keep, linesOf, locate, savedReview, settled, undo, type Reviewed } from "../../src/changeReview";

const ten = Array.from({ length: 10 }, (_, i) => `line ${i + 1}\n`).join("");
// The agent changed line 2, inserted a line after 5, and deleted line 9.
const agent = ten.replace("line 2\n", "LINE TWO\n").replace("line 5\n", "line 5\nadded\n").replace("line 9\n", "");
const r: Reviewed = { path: "/w/a.txt", base: ten, agent };

test("linesOf keeps each line's ending, so the lines join back to the text", () => {
  assert.deepEqual(linesOf("a\nb"), ["a\n", "b"]);
  assert.deepEqual(linesOf("a\n\n"), ["a\n", "\n"]);
  assert.deepEqual(linesOf(""), []);
  assert.deepEqual(linesOf(null), []);
});

test("blocks: each run of changed lines, with both sides' ranges", () => {
  assert.deepEqual(blocks(r), [
    { oldStart: 1, oldEnd: 2, newStart: 1, newEnd: 2 },
    { oldStart: 5, oldEnd: 5, newStart: 5, newEnd: 6 },
    { oldStart: 8, oldEnd: 9, newStart: 9, newEnd: 9 },
  ]);
  assert.deepEqual(blocks({ path: "n", base: null, agent: "x\ny\n" }), [{ oldStart: 0, oldEnd: 0, newStart: 0, newEnd: 2 }]);
});

test("keep folds one block into the accepted text; the others stay", () => {
  const [first] = blocks(r);
  const kept = keep(r, first);
  assert.equal(kept.base, ten.replace("line 2\n", "LINE TWO\n"));
  assert.equal(blocks(kept).length, 2);
  const all = blocks(kept).reduceRight((acc, b) => keep(acc, b), kept);
  assert.ok(settled(all));
});

test("undo puts one block's old lines back in the document, and leaves the user's own edits elsewhere", () => {
  const [first, inserted, deleted] = blocks(r);
  // The user typed a line at the top and changed line 7 after the agent wrote.
  const doc = "# mine\n" + agent.replace("line 7\n", "line 7 (mine)\n");
  const a = undo(r, inserted, doc)!;
  assert.equal(a.doc, "# mine\n" + ten.replace("line 2\n", "LINE TWO\n").replace("line 7\n", "line 7 (mine)\n").replace("line 9\n", ""));
  assert.equal(a.left.agent, ten.replace("line 2\n", "LINE TWO\n").replace("line 9\n", ""));
  assert.equal(blocks(a.left).length, 2);
  const b = undo(a.left, blocks(a.left)[1], a.doc)!;
  assert.ok(b.doc.includes("line 8\nline 9\nline 10\n"), b.doc);
  const c = undo(b.left, blocks(b.left)[0], b.doc)!;
  assert.equal(c.doc, "# mine\n" + ten.replace("line 7\n", "line 7 (mine)\n"));
  assert.ok(settled(c.left));
  assert.deepEqual([first.newStart, deleted.newStart], [1, 9]);
});

test("a block the user edited, or typed beside, is a conflict: undo refuses it", () => {
  const [first, inserted] = blocks(r);
  assert.equal(undo(r, first, agent.replace("LINE TWO", "LINE 2 (mine)")), null);
  assert.equal(locate(r, inserted, agent.replace("added\n", "added\nmore\n")), null, "a line typed at the block's edge");
  assert.deepEqual(locate(r, inserted, agent), { start: 5, end: 6 });
});

test("a created file undone is empty; labels say where a change is", () => {
  const created: Reviewed = { path: "n", base: null, agent: "x\n" };
  const u = undo(created, blocks(created)[0], "x\n")!;
  assert.equal(u.doc, "");
  assert.ok(settled(u.left));
  assert.equal(blockLines(1, 2), "line 2");
  assert.equal(blockLines(1, 4), "lines 2-4");
  assert.equal(blockLines(5, 5), "after line 5");
  assert.equal(blockLines(0, 0), "at the start");
});

test("a saved review comes back entry by entry; what is not a review is dropped", () => {
  const ok = { path: "/w/a.txt", base: "one\n", agent: "two\n" };
  const created = { path: "/w/new.txt", base: null, agent: "made\n" };
  assert.deepEqual(savedReview([ok, created, { path: "/w/b", base: 1, agent: "x" }, { path: 3 }, null]), [ok, created]);
  assert.deepEqual(savedReview(undefined), []);
  assert.deepEqual(savedReview({ path: "/w/a" }), []);
});

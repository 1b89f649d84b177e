import { test } from "node:test";
import assert from "node:assert/strict";
import { diffLines, hunks, renderDiff, splitLines } from "../../src/lineDiff";

const ten = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";

test("a final newline ends the last line; an absent text has no lines", () => {
  assert.deepEqual(splitLines("x\ny\n"), ["x", "y"]);
  assert.deepEqual(splitLines("x\ny"), ["x", "y"]);
  assert.deepEqual(splitLines(null), []);
});

test("a one-line change is one hunk: the line removed and added, three lines of context each side", () => {
  const lines = diffLines(ten, ten.replace("e\n", "E\n"));
  const hs = hunks(lines, 3);
  assert.equal(hs.length, 1);
  assert.equal(hs[0].oldStart, 2);
  assert.equal(hs[0].newStart, 2);
  assert.deepEqual(
    hs[0].lines.map((l) => l.op + l.text),
    [" b", " c", " d", "-e", "+E", " f", " g", " h"],
  );
});

test("the compact diff of a known change: escaped text, hunk headers, counts", () => {
  const oldText = "def price(x):\n    return x\n\n# end\n";
  const newText = "def price(x):\n    if x < 0:\n        raise ValueError\n    return x\n\n# end\n";
  const r = renderDiff(oldText, newText, { context: 1 });
  assert.deepEqual(r.stat, { added: 2, removed: 0 });
  assert.equal(
    r.html,
    '<span class="dh">@@ -1 +1 @@</span>' +
      '<span class="dl ctx"> def price(x):</span>' +
      '<span class="dl add">+    if x &lt; 0:</span>' +
      '<span class="dl add">+        raise ValueError</span>' +
      '<span class="dl ctx">     return x</span>',
  );
  assert.equal(r.shown, 4);
  assert.equal(r.total, 4);
});

test("two changes far apart are two hunks; close ones merge", () => {
  const old = Array.from({ length: 30 }, (_, i) => `l${i}`).join("\n") + "\n";
  const far = old.replace("l2\n", "L2\n").replace("l25\n", "L25\n");
  const farHunks = hunks(diffLines(old, far), 3);
  assert.equal(farHunks.length, 2);
  assert.equal(farHunks[1].oldStart, 23);
  const near = old.replace("l2\n", "L2\n").replace("l8\n", "L8\n");
  assert.equal(hunks(diffLines(old, near), 3).length, 1);
});

test("a new file is all additions; the compact view stops at maxLines and says how much more there is", () => {
  const content = Array.from({ length: 40 }, (_, i) => `line ${i}`).join("\n") + "\n";
  const compact = renderDiff(null, content, { maxLines: 12 });
  assert.deepEqual(compact.stat, { added: 40, removed: 0 });
  assert.equal(compact.shown, 12);
  assert.equal(compact.total, 40);
  assert.equal((compact.html.match(/class="dl add"/g) ?? []).length, 12);
  assert.ok(!compact.html.includes("line 12"));
  const whole = renderDiff(null, content);
  assert.equal(whole.shown, 40);
  assert.ok(whole.html.includes("+line 39"));
});

test("a removed line in the middle of many is found, not the whole file replaced", () => {
  const old = Array.from({ length: 200 }, (_, i) => `row ${i}`).join("\n");
  const lines = diffLines(old, old.replace("row 100\n", ""));
  assert.deepEqual(
    lines.filter((l) => l.op !== " ").map((l) => [l.op, l.text, l.oldNo]),
    [["-", "row 100", 101]],
  );
});

import { test } from "node:test";
import assert from "node:assert/strict";
import { keyScrolls, onScrollbar } from "../../src/webview/followMode";

test("keyScrolls: the keys that scroll a focused box up or down, others none", () => {
  for (const k of ["ArrowUp", "PageUp", "Home"]) assert.equal(keyScrolls(k, false), "up", k);
  assert.equal(keyScrolls(" ", true), "up");
  for (const k of ["ArrowDown", "PageDown", "End", " "]) assert.equal(keyScrolls(k, false), "down", k);
  for (const k of ["a", "Enter", "Tab", "Escape"]) assert.equal(keyScrolls(k, false), null, k);
});

test("onScrollbar: only a press right of the content, in a box that has a scrollbar", () => {
  assert.equal(onScrollbar(295, 290, 300), true);
  assert.equal(onScrollbar(289, 290, 300), false);
  // No scrollbar (content as wide as the box): never on it.
  assert.equal(onScrollbar(299, 300, 300), false);
});

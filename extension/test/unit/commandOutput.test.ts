import { test } from "node:test";
import assert from "node:assert/strict";
import { exitText, forTerminal, tailLines } from "../../src/commandOutput";

test("tailLines keeps the last lines and counts the rest; a trailing newline is no line", () => {
  assert.deepEqual(tailLines("a\nb\nc\n", 2), { text: "b\nc\n", hidden: 1 });
  assert.deepEqual(tailLines("a\nb\nc", 2), { text: "b\nc", hidden: 1 });
  assert.deepEqual(tailLines("a\nb\n", 2), { text: "a\nb\n", hidden: 0 });
  assert.deepEqual(tailLines("", 2), { text: "", hidden: 0 });
  assert.deepEqual(tailLines("x\n\n\ny\n", 1), { text: "y\n", hidden: 3 });
});

test("exitText says how a command ended", () => {
  assert.equal(exitText({ exitCode: 0, signal: null }), "exit code 0");
  assert.equal(exitText({ exitCode: 3, signal: null }), "exit code 3");
  assert.equal(exitText({ exitCode: null, signal: "SIGTERM" }), "killed by SIGTERM");
  assert.equal(exitText({ exitCode: null, signal: null }), "ended");
  assert.equal(exitText(null), "");
});

test("forTerminal turns every line break into CR LF, once", () => {
  assert.equal(forTerminal("a\nb\r\nc"), "a\r\nb\r\nc");
  assert.equal(forTerminal("no break"), "no break");
});

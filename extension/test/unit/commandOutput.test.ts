import { test } from "node:test";
import assert from "node:assert/strict";
import { exitText, forTerminal, tailLines, typeKeys, userCommand } from "../../src/commandOutput";

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

test("userCommand shows the user's command, not the sandbox launcher or the shell around it", () => {
  // The binary's launcher and the addon's (Node running the launcher script).
  assert.equal(userCommand("/usr/bin/corvid", ["sandbox", "--", "/bin/sh", "-c", "pytest -q; echo done"]), "pytest -q; echo done");
  assert.equal(userCommand("/opt/node", ["/ext/dist/sandbox-launcher.cjs", "sandbox", "--", "/bin/sh", "-c", "ls -la"]), "ls -la");
  assert.equal(userCommand("/bin/sh", ["-c", "make test"]), "make test");
  // A shell line without args (other agents), and a program with args (quoted where needed).
  assert.equal(userCommand("cargo test --all", []), "cargo test --all");
  assert.equal(userCommand("git", ["commit", "-m", "it's done"]), "git commit -m 'it'\\''s done'");
  // "sandbox" as the user's own word is kept.
  assert.equal(userCommand("docker", ["run", "--rm", "img", "sandbox", "--", "x"]), "docker run --rm img sandbox -- x");
});

test("typeKeys echoes, edits and sends lines; Ctrl+D ends the input, Ctrl+C interrupts", () => {
  let r = typeKeys("", "Corv");
  assert.deepEqual(r, { line: "Corv", keys: { echo: "Corv", send: [], end: false, interrupt: false } });
  r = typeKeys(r.line, "x\x7fid\r");
  assert.deepEqual(r, { line: "", keys: { echo: "x\b \bid\r\n", send: ["Corvid\n"], end: false, interrupt: false } });
  // A paste: CR LF is one line end; arrow keys are dropped whole.
  r = typeKeys("", "one\r\ntwo\x1b[A\r");
  assert.deepEqual(r.keys.send, ["one\n", "two\n"]);
  assert.equal(r.keys.echo, "one\r\ntwo\r\n");
  // Backspace on an empty line echoes nothing.
  assert.equal(typeKeys("", "\x7f").keys.echo, "");
  // Ctrl+D: a partial line is sent as it is; on an empty line the input ends.
  assert.deepEqual(typeKeys("par", "\x04").keys, { echo: "", send: ["par"], end: false, interrupt: false });
  assert.deepEqual(typeKeys("", "\x04").keys, { echo: "", send: [], end: true, interrupt: false });
  r = typeKeys("half", "\x03");
  assert.deepEqual(r, { line: "", keys: { echo: "^C\r\n", send: [], end: false, interrupt: true } });
});

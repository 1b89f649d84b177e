import { test } from "node:test";
import assert from "node:assert/strict";
import { diagnosticLine, fixPrompt, problemsText, type DiagnosticFacts } from "../../src/diagnostics";

const d = (over: Partial<DiagnosticFacts>): DiagnosticFacts => ({ path: "src/a.ts", line: 3, column: 5, severity: "error", message: "Cannot find name 'x'.", ...over });

test("diagnosticLine: path:line:col, severity, message on one line, and where it came from", () => {
  assert.equal(diagnosticLine(d({ source: "ts", code: "2304" })), "src/a.ts:3:5: error: Cannot find name 'x'. (ts 2304)");
  assert.equal(diagnosticLine(d({ message: "Expected comma\n  here", severity: "warning" })), "src/a.ts:3:5: warning: Expected comma here");
});

test("problemsText: errors first, then by file and line; a limit; none said in words", () => {
  assert.equal(problemsText([]), "No problems are reported in the open files.");
  const text = problemsText([d({ severity: "warning", path: "b.json", line: 1 }), d({ path: "b.json", line: 9 }), d({ path: "a.py", line: 2 })]);
  assert.equal(text, "Problems reported in the open files (3):\na.py:2:5: error: Cannot find name 'x'.\nb.json:9:5: error: Cannot find name 'x'.\nb.json:1:5: warning: Cannot find name 'x'.");
  const many = problemsText(Array.from({ length: 5 }, (_, i) => d({ line: i + 1 })), 2);
  assert.match(many, /\(5\):\n.*:1:5: .*\n.*:2:5: .*\n… and 3 more$/);
});

test("fixPrompt names the problem, the file and the attached lines", () => {
  assert.equal(
    fixPrompt(d({ source: "json" }), { start: 1, end: 13 }),
    "Fix this error in src/a.ts at line 3:\n\nsrc/a.ts:3:5: error: Cannot find name 'x'. (json)\n\nLines 1-13 of the file are attached. Make the smallest change that fixes it, then say what you changed.",
  );
});

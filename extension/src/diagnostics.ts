// Problems (VS Code's diagnostics) in words: one line each for the `@problems` context, and
// the prompt of "Fix with Corvid". Pure (no `vscode`), so it is unit-tested directly.

export interface DiagnosticFacts {
  /** Workspace-relative path. */
  path: string;
  /** 1-based. */
  line: number;
  column: number;
  severity: "error" | "warning" | "info" | "hint";
  message: string;
  source?: string;
  code?: string;
}

/** `src/a.ts:3:5: error: Cannot find name 'x'. (ts 2304)`: the form compilers print. */
export function diagnosticLine(d: DiagnosticFacts): string {
  const origin = [d.source, d.code].filter(Boolean).join(" ");
  return `${d.path}:${d.line}:${d.column}: ${d.severity}: ${d.message.replace(/\s*\n\s*/g, " ")}${origin ? ` (${origin})` : ""}`;
}

/** Every problem, errors first, then by file and line; "No problems…" when there are none. */
export function problemsText(all: DiagnosticFacts[], limit = 200): string {
  if (!all.length) return "No problems are reported in the open files.";
  const rank = { error: 0, warning: 1, info: 2, hint: 3 };
  const sorted = [...all].sort((a, b) => rank[a.severity] - rank[b.severity] || a.path.localeCompare(b.path) || a.line - b.line || a.column - b.column);
  const shown = sorted.slice(0, limit).map(diagnosticLine);
  if (sorted.length > limit) shown.push(`… and ${sorted.length - limit} more`);
  return `Problems reported in the open files (${all.length}):\n${shown.join("\n")}`;
}

/** "Fix with Corvid"'s prompt: the problem, where it is, and what to do. */
export function fixPrompt(d: DiagnosticFacts, shown: { start: number; end: number }): string {
  return `Fix this ${d.severity} in ${d.path} at line ${d.line}:\n\n${diagnosticLine(d)}\n\nLines ${shown.start}-${shown.end} of the file are attached. Make the smallest change that fixes it, then say what you changed.`;
}

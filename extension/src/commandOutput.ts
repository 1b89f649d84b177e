// What a command card and a command's VS Code terminal show of its output: the last lines
// (the card follows the tail), the exit status in words, and text as a terminal wants it.
// Pure (no `vscode`), so it is unit-tested directly.

export interface ExitStatus {
  exitCode: number | null;
  signal: string | null;
}

/** The last `max` lines of `text` and how many lines came before them. A trailing newline
 * does not count as an empty last line. */
export function tailLines(text: string, max: number): { text: string; hidden: number } {
  const body = text.endsWith("\n") ? text.slice(0, -1) : text;
  if (!body) return { text, hidden: 0 };
  const lines = body.split("\n");
  if (lines.length <= max) return { text, hidden: 0 };
  return { text: lines.slice(-max).join("\n") + (text.endsWith("\n") ? "\n" : ""), hidden: lines.length - max };
}

/** An exit status in words: "exit code 0", "killed by SIGTERM", or "ended" when neither is known. */
export function exitText(exit: ExitStatus | null | undefined): string {
  if (!exit) return "";
  if (exit.exitCode != null) return `exit code ${exit.exitCode}`;
  if (exit.signal) return `killed by ${exit.signal}`;
  return "ended";
}

/** Text for a terminal: every line break as CR LF (a bare LF only moves down a line there). */
export function forTerminal(text: string): string {
  return text.replace(/\r?\n/g, "\r\n");
}

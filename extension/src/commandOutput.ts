// What a command card and a command's VS Code terminal show of its output: the last lines
// (the card follows the tail), the exit status in words, text as a terminal wants it, the
// command as its user wrote it, and the line editing of what the user types for it.
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

/**
 * The command line of a `terminal/create` as its user reads it: Corvid's sandbox launcher
 * (`<launcher> sandbox -- PROGRAM ARGS…`, its policy out of band) and a shell's `sh -c` are
 * left out, so `/bin/sh -c "pytest -q"` reads `pytest -q`. Anything else is shown whole.
 */
export function userCommand(command: string, args: readonly string[]): string {
  let argv = [command, ...args];
  const sandbox = argv.indexOf("sandbox");
  if (sandbox >= 0 && sandbox <= 2 && argv[sandbox + 1] === "--") argv = argv.slice(sandbox + 2);
  if (argv.length === 3 && /(^|\/)(ba|da|z)?sh$/.test(argv[0]) && argv[1] === "-c") return argv[2];
  if (args.length === 0 && argv.length === 1) return argv[0];
  return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", `'\\''`)}'`)).join(" ");
}

/** What the line editor does with the user's keys: echo for the terminal, input for the command. */
export interface TypedKeys {
  /** Text for the terminal (the command's stdin is a pipe: nothing echoes but this). */
  echo: string;
  /** Whole lines (each ending in "\n") or, after Ctrl+D, the rest: for the command's stdin. */
  send: string[];
  /** Ctrl+D on an empty line: the command's input ends. */
  end: boolean;
  /** Ctrl+C: the command is interrupted. */
  interrupt: boolean;
}

/**
 * A cooked-mode line editor for a command whose stdin is a pipe (no terminal driver echoes or
 * edits): keys are echoed, Backspace edits the line, Enter sends it, Ctrl+D ends the input (or
 * sends a partial line), Ctrl+C interrupts and drops the line. `line` is the line being typed.
 */
export function typeKeys(line: string, data: string): { line: string; keys: TypedKeys } {
  const keys: TypedKeys = { echo: "", send: [], end: false, interrupt: false };
  // Arrow keys and other escape sequences have nothing to edit here: dropped whole.
  let prev = "";
  for (const ch of data.replace(/\x1b(\[[0-9;?]*[ -/]*[@-~]|O.|.)/g, "")) {
    const after = prev;
    prev = ch;
    if (ch === "\n" && after === "\r") continue; // a pasted CR LF is one line end
    if (ch === "\r" || ch === "\n") {
      keys.send.push(`${line}\n`);
      keys.echo += "\r\n";
      line = "";
    } else if (ch === "\x7f" || ch === "\b") {
      if (line) {
        line = [...line].slice(0, -1).join("");
        keys.echo += "\b \b";
      }
    } else if (ch === "\x03") {
      keys.interrupt = true;
      keys.echo += "^C\r\n";
      line = "";
    } else if (ch === "\x04") {
      if (line) keys.send.push(line);
      else keys.end = true;
      line = "";
    } else if (ch >= " ") {
      line += ch;
      keys.echo += ch;
    }
  }
  return { line, keys };
}

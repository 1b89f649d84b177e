// Every command the agent runs gets a VS Code terminal of its own, named after the command,
// made when the command starts (`start`): a Pseudoterminal that shows the output so far, then
// streams the rest while the command runs and ends with the exit status, and that forwards
// what the user types to the command's stdin (a line at a time, echoed: the stdin is a pipe,
// see `typeKeys`), so a command that asks a question gets its answer. "Open in Terminal" on a
// card shows that terminal again, or makes one (after the user closed it, and read-only for a
// replayed command). Closing a terminal only stops the view; the command belongs to the agent
// (terminal/kill, terminal/release), never to this view of it.
import * as vscode from "vscode";
import { exitText, forTerminal, typeKeys, type ExitStatus } from "./commandOutput";
import type { TerminalEvent } from "./terminals";

/** A command's output as this host knows it: live (its terminal runs here) or stored (a replay). */
export interface CommandSource {
  command: string;
  /** The output so far and the exit status, if it ended. */
  read(): { output: string; exit: ExitStatus | null };
  /** Live commands: the rest of the output and the exit as they come; returns the way to stop. */
  watch?: (fn: (e: TerminalEvent) => void) => (() => void) | undefined;
  /** Live commands: what the user typed (null: the end of input); false once it no longer reads. */
  input?: (data: string | null) => boolean;
  /** Live commands: Ctrl+C. */
  interrupt?: () => void;
}

/** Ended commands whose terminals stay open beside the running ones (older ones are closed). */
const KEPT_ENDED = 4;

export class CommandTerminals implements vscode.Disposable {
  /** One VS Code terminal per command (by the card's key), while it is open, oldest first. */
  private open = new Map<string, { term: vscode.Terminal; source: CommandSource }>();
  private closed: vscode.Disposable;

  constructor() {
    this.closed = vscode.window.onDidCloseTerminal((t) => {
      for (const [key, o] of this.open) if (o.term === t) this.open.delete(key);
    });
  }

  /** A command started: its terminal, shown without taking the focus from where the user is. */
  start(key: string, source: CommandSource): void {
    this.closeOldEnded();
    this.make(key, source).show(true);
  }

  /** "Open in Terminal": the command's terminal, made again if the user closed it. */
  show(key: string, source: CommandSource): void {
    (this.open.get(key)?.term ?? this.make(key, source)).show(false);
  }

  private make(key: string, source: CommandSource): vscode.Terminal {
    const term = vscode.window.createTerminal({ name: terminalName(source.command), pty: pseudoterminal(source), isTransient: true, iconPath: new vscode.ThemeIcon("terminal") });
    this.open.set(key, { term, source });
    return term;
  }

  /** Keeps the panel's list short: only the newest few ended commands keep their terminal. */
  private closeOldEnded(): void {
    const ended = [...this.open.values()].filter((o) => o.source.read().exit !== null || !o.source.watch);
    for (const o of ended.slice(0, Math.max(0, ended.length - KEPT_ENDED))) o.term.dispose();
  }

  dispose(): void {
    this.closed.dispose();
    for (const o of this.open.values()) o.term.dispose();
    this.open.clear();
  }
}

/** A terminal's name: "Corvid: " and the command's first line, short enough for the tab list. */
export function terminalName(command: string): string {
  const first = command.split("\n")[0].trim();
  const name = `Corvid: ${first}`;
  return name.length > 60 ? `${name.slice(0, 59)}…` : name;
}

function pseudoterminal(source: CommandSource): vscode.Pseudoterminal {
  const write = new vscode.EventEmitter<string>();
  let stop: (() => void) | undefined;
  /** The line being typed (sent at Enter). */
  let line = "";
  let running = false;
  const ended = (exit: ExitStatus | null) => {
    running = false;
    write.fire(`\r\n\x1b[2m[${exitText(exit) || "ended"}]\x1b[0m\r\n`);
  };
  return {
    onDidWrite: write.event,
    open: () => {
      write.fire(`\x1b[2m$ ${forTerminal(source.command)}\x1b[0m\r\n`);
      // The output so far and the subscription in one synchronous step: no chunk can arrive
      // between them (they come from the same event loop).
      const now = source.read();
      write.fire(forTerminal(now.output));
      if (now.exit || !source.watch) return ended(now.exit);
      running = true;
      stop = source.watch((e) => ("data" in e ? write.fire(forTerminal(e.data)) : ended(e.exit)));
      if (!stop) ended(null);
    },
    // Typing reaches a running command only; a replay or an ended command is read-only.
    handleInput: (data) => {
      if (!running || !source.input) return;
      const typed = typeKeys(line, data);
      line = typed.line;
      if (typed.keys.echo) write.fire(typed.keys.echo);
      for (const text of typed.keys.send) source.input(text);
      if (typed.keys.end) source.input(null);
      if (typed.keys.interrupt) source.interrupt?.();
    },
    close: () => {
      stop?.();
      write.dispose();
    },
  };
}

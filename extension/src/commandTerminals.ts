// "Open in Terminal" on a command card: the command's output in a VS Code terminal, made only
// when the user asks (a terminal per command would clutter the panel). It is a read-only
// Pseudoterminal: it shows the output so far, then streams the rest while the command runs,
// and ends with the exit status. Closing it only stops the streaming; the command belongs
// to the agent (terminal/kill, terminal/release), never to this view of it.
import * as vscode from "vscode";
import { exitText, forTerminal, type ExitStatus } from "./commandOutput";
import type { TerminalEvent } from "./terminals";

/** A command's output as this host knows it: live (its terminal runs here) or stored (a replay). */
export interface CommandSource {
  command: string;
  /** The output so far and the exit status, if it ended. */
  read(): { output: string; exit: ExitStatus | null };
  /** Live commands: the rest of the output and the exit as they come; returns the way to stop. */
  watch?: (fn: (e: TerminalEvent) => void) => (() => void) | undefined;
}

export class CommandTerminals implements vscode.Disposable {
  /** One VS Code terminal per command (by the card's key), while it is open. */
  private open = new Map<string, vscode.Terminal>();
  private closed: vscode.Disposable;

  constructor() {
    this.closed = vscode.window.onDidCloseTerminal((t) => {
      for (const [key, term] of this.open) if (term === t) this.open.delete(key);
    });
  }

  /** Shows the command's terminal, making it the first time (and after the user closed it). */
  show(key: string, name: string, source: CommandSource): void {
    let term = this.open.get(key);
    if (!term) {
      term = vscode.window.createTerminal({ name, pty: pseudoterminal(source), isTransient: true, iconPath: new vscode.ThemeIcon("terminal") });
      this.open.set(key, term);
    }
    term.show(false);
  }

  dispose(): void {
    this.closed.dispose();
    for (const t of this.open.values()) t.dispose();
    this.open.clear();
  }
}

function pseudoterminal(source: CommandSource): vscode.Pseudoterminal {
  const write = new vscode.EventEmitter<string>();
  let stop: (() => void) | undefined;
  const ended = (exit: ExitStatus | null) => write.fire(`\r\n\x1b[2m[${exitText(exit) || "ended"}]\x1b[0m\r\n`);
  return {
    onDidWrite: write.event,
    open: () => {
      write.fire(`\x1b[2m$ ${forTerminal(source.command)}\x1b[0m\r\n`);
      // The output so far and the subscription in one synchronous step: no chunk can arrive
      // between them (they come from the same event loop).
      const now = source.read();
      write.fire(forTerminal(now.output));
      if (now.exit || !source.watch) return ended(now.exit);
      stop = source.watch((e) => ("data" in e ? write.fire(forTerminal(e.data)) : ended(e.exit)));
      if (!stop) ended(null);
    },
    // Read-only: typing goes nowhere (the command's stdin is not the user's).
    handleInput: () => {},
    close: () => {
      stop?.();
      write.dispose();
    },
  };
}

// `terminal/*` for the agent: commands run with child_process, output captured (bounded), and
// their stdin open to what the user types in the command's VS Code terminal (`input`).
// Pure Node (no `vscode`), so it is unit-tested directly.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { userCommand } from "./commandOutput";

export interface TerminalExit {
  exitCode: number | null;
  signal: string | null;
}

interface Term {
  id: string;
  /** The command as its user reads it (the sandbox launcher's prefix left out). */
  command: string;
  child: ChildProcess;
  output: string;
  truncated: boolean;
  limit: number;
  exit: TerminalExit | null;
  exited: Promise<TerminalExit>;
  /** Who watches this command's output as it comes (a VS Code terminal the user opened). */
  watchers: Set<(e: TerminalEvent) => void>;
}

/** What a watcher of a command gets: each chunk of output as it arrives, then the exit. */
export type TerminalEvent = { data: string } | { exit: TerminalExit };

export interface CreateTerminalParams {
  command: string;
  args?: string[];
  cwd?: string | null;
  env?: { name: string; value: string }[];
  outputByteLimit?: number | null;
}

export class TerminalManager {
  private terms = new Map<string, Term>();
  private next = 1;
  /** Part of every id: a chat reloaded in a later extension host names terminals of this one,
   * and a counter alone would start again at 1 and show a newer command's output there. */
  private readonly instance = randomBytes(4).toString("hex");
  /** Called whenever a terminal's output or exit status changes. */
  onChange: (id: string) => void = () => {};
  /** Called once a command has started (its VS Code terminal is made here). */
  onCreate: (id: string) => void = () => {};

  create(p: CreateTerminalParams, defaultCwd?: string): string {
    const id = `term-${this.instance}-${this.next++}`;
    const env = { ...process.env };
    for (const { name, value } of p.env ?? []) env[name] = value;
    // With no args the command is a shell line (what agents send); with args, exec directly.
    const child =
      p.args && p.args.length > 0
        ? spawn(p.command, p.args, { cwd: p.cwd ?? defaultCwd, env, detached: true })
        : spawn("/bin/sh", ["-c", p.command], { cwd: p.cwd ?? defaultCwd, env, detached: true });
    let resolveExit!: (e: TerminalExit) => void;
    const term: Term = {
      id,
      command: userCommand(p.command, p.args ?? []),
      child,
      output: "",
      truncated: false,
      limit: p.outputByteLimit ?? 1 << 20,
      exit: null,
      exited: new Promise((r) => (resolveExit = r)),
      watchers: new Set(),
    };
    const tell = (e: TerminalEvent) => {
      for (const w of term.watchers) {
        try {
          w(e);
        } catch {}
      }
    };
    const append = (chunk: Buffer) => {
      const text = chunk.toString("utf8");
      term.output += text;
      tell({ data: text });
      if (Buffer.byteLength(term.output) > term.limit) {
        // Keep the tail, cut at a character boundary.
        const buf = Buffer.from(term.output);
        let start = buf.length - term.limit;
        while (start < buf.length && (buf[start] & 0xc0) === 0x80) start++;
        term.output = buf.subarray(start).toString("utf8");
        term.truncated = true;
      }
      this.onChange(id);
    };
    // A command that ends without reading what was typed closes the pipe: not an error here.
    child.stdin?.on("error", () => {});
    child.stdout?.on("data", append);
    child.stderr?.on("data", append);
    child.on("error", (e) => {
      term.output += `${e.message}\n`;
      tell({ data: `${e.message}\n` });
      if (!term.exit) {
        term.exit = { exitCode: 127, signal: null };
        resolveExit(term.exit);
        tell({ exit: term.exit });
        this.onChange(id);
      }
    });
    child.on("close", (code, signal) => {
      if (term.exit) return;
      term.exit = { exitCode: code, signal: signal ?? null };
      resolveExit(term.exit);
      tell({ exit: term.exit });
      this.onChange(id);
    });
    this.terms.set(id, term);
    try {
      this.onCreate(id);
    } catch {}
    return id;
  }

  /**
   * What the user typed for the command (a line, Ctrl+D's end of input): written to its stdin.
   * False when the command no longer reads (ended, its input closed, or an unknown id).
   */
  input(id: string, data: string | null): boolean {
    const t = this.terms.get(id);
    const stdin = t?.child.stdin;
    if (!t || t.exit || !stdin || !stdin.writable) return false;
    if (data === null) stdin.end();
    else stdin.write(data);
    return true;
  }

  /** Ctrl+C in the command's terminal: SIGINT to its process group, as a shell's terminal does. */
  interrupt(id: string): void {
    const t = this.terms.get(id);
    if (!t || t.exit || t.child.pid === undefined) return;
    try {
      process.kill(-t.child.pid, "SIGINT");
    } catch {
      t.child.kill("SIGINT");
    }
  }

  private get(id: string): Term {
    const t = this.terms.get(id);
    if (!t) throw new Error(`unknown terminal ${id}`);
    return t;
  }

  output(id: string): { output: string; truncated: boolean; exitStatus?: TerminalExit } {
    const t = this.get(id);
    return { output: t.output, truncated: t.truncated, ...(t.exit ? { exitStatus: t.exit } : {}) };
  }

  /** The newest command (for `@terminal`): its command line, output and exit. */
  latest(): { command: string; output: string; exit: TerminalExit | null } | undefined {
    const t = [...this.terms.values()].at(-1);
    return t && { command: t.command, output: t.output, exit: t.exit };
  }

  /** Output for display; undefined for unknown (released) terminals. */
  peek(id: string): { command: string; output: string; exit: TerminalExit | null } | undefined {
    const t = this.terms.get(id);
    return t && { command: t.command, output: t.output, exit: t.exit };
  }

  /**
   * Calls `fn` with every later chunk of the command's output and with its exit; returns the
   * way to stop. Watching is display only: it never holds the process, and the agent's
   * kill/release work the same with or without watchers. Undefined for an unknown terminal.
   */
  watch(id: string, fn: (e: TerminalEvent) => void): (() => void) | undefined {
    const t = this.terms.get(id);
    if (!t) return undefined;
    t.watchers.add(fn);
    return () => t.watchers.delete(fn);
  }

  waitForExit(id: string): Promise<TerminalExit> {
    return this.get(id).exited;
  }

  kill(id: string): void {
    const t = this.get(id);
    if (t.exit || t.child.pid === undefined) return;
    try {
      process.kill(-t.child.pid, "SIGTERM"); // the whole process group
    } catch {
      t.child.kill("SIGTERM");
    }
  }

  release(id: string): void {
    if (!this.terms.has(id)) return;
    // The captured output stays for display; the process is stopped.
    this.kill(id);
  }

  disposeAll(): void {
    for (const id of this.terms.keys()) {
      try {
        this.kill(id);
      } catch {}
    }
    this.terms.clear();
  }
}

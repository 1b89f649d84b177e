// Checkpoints: every turn that wrote files through the editor (`fs/write_text_file`) can be
// undone as a whole. The state of each path before its first write in a turn is recorded;
// undo puts those states back (a created file is deleted again). Changes made by commands the
// agent ran are not seen here. No `vscode` import: the host passes the file operations in.

/** A file's state before the turn touched it: its text, or absent (the turn created it). */
export type Before = { existed: true; text: string } | { existed: false };

export interface FileOps {
  /** The file's current text (the editor's, unsaved edits included), or null when it does not exist. */
  read(path: string): Promise<string | null>;
  write(path: string, text: string): Promise<void>;
  remove(path: string): Promise<void>;
}

export interface UndoResult {
  restored: string[];
  removed: string[];
}

export class Checkpoints {
  /** Per turn: path → its state before the turn's first write to it, in first-write order. */
  private turns = new Map<number, Map<string, Before>>();
  private current: number | null = null;

  /** A turn starts: writes from now on belong to it. */
  begin(turn: number): void {
    this.current = turn;
    if (!this.turns.has(turn)) this.turns.set(turn, new Map());
  }

  /** The turn ended: later writes (none expected) belong to no turn. */
  end(): void {
    this.current = null;
  }

  /**
   * Call before every write: at the first write to `path` in the current turn, its state is
   * read and kept. Later writes in the same turn keep the first state.
   */
  async beforeWrite(path: string, read: FileOps["read"]): Promise<void> {
    if (this.current === null) return;
    const files = this.turns.get(this.current)!;
    if (files.has(path)) return;
    // Reserved before the read, so a second write racing the first cannot record the first's result.
    files.set(path, { existed: false });
    const text = await read(path);
    if (text !== null) files.set(path, { existed: true, text });
  }

  /** The files a turn wrote (empty: nothing to undo). */
  files(turn: number): string[] {
    return [...(this.turns.get(turn)?.keys() ?? [])];
  }

  canUndo(turn: number): boolean {
    return this.files(turn).length > 0;
  }

  /**
   * Puts every file the turn wrote back as it was before the turn: modified files get their
   * text back, created ones are removed. The checkpoint is used up once every file is back (a
   * second undo does nothing); after a failure it stays, so the undo can be tried again.
   */
  async undo(turn: number, ops: Pick<FileOps, "write" | "remove">): Promise<UndoResult> {
    const files = this.turns.get(turn);
    const result: UndoResult = { restored: [], removed: [] };
    for (const [path, before] of files ?? []) {
      if (before.existed) {
        await ops.write(path, before.text);
        result.restored.push(path);
      } else {
        await ops.remove(path);
        result.removed.push(path);
      }
    }
    this.turns.delete(turn);
    return result;
  }

  /** Forgets every checkpoint (a new or loaded session). */
  clear(): void {
    this.turns.clear();
    this.current = null;
  }
}

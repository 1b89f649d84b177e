// Checkpoints: every turn that wrote files through the editor (`fs/write_text_file`) can be
// undone as a whole. The state of each path before its first write in a turn is recorded, and
// the agent's last text of it; undo puts the states back (a created file is deleted again)
// where the file still holds the agent's last text, and leaves one the user changed since (a
// conflict, never overwritten). Changes made by commands the agent ran are not seen here. No
// `vscode` import: the host passes the file operations in.

import { restoreFiles, type RewindOutcome, type RewoundFile } from "./rewind";

/** A file's state before the turn touched it: its text, or absent (the turn created it). */
export type Before = { existed: true; text: string } | { existed: false };

export interface FileOps {
  /** The file's current text (the editor's, unsaved edits included), or null when it does not exist. */
  read(path: string): Promise<string | null>;
  write(path: string, text: string): Promise<void>;
  remove(path: string): Promise<void>;
}

/** Restored, removed, and (changed since the agent last wrote them) left as they are. */
export type UndoResult = RewindOutcome;

export class Checkpoints {
  /** Per turn: path → its state before the turn's first write to it, in first-write order. */
  private turns = new Map<number, Map<string, Before>>();
  /** Per turn: path → the agent's last text of it in that turn. */
  private written = new Map<number, Map<string, string>>();
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

  /** Call after every write: the agent's text of `path` as the turn leaves it (so far). */
  afterWrite(path: string, text: string): void {
    if (this.current === null) return;
    let texts = this.written.get(this.current);
    if (!texts) this.written.set(this.current, (texts = new Map()));
    texts.set(path, text);
  }

  /** The agent's last text of `path` in turn `turn` or a later one (undoing an earlier turn undoes the later turns' writes too). */
  private lastWritten(turn: number, path: string): string | undefined {
    const later = [...this.written.entries()].filter(([t, texts]) => t >= turn && texts.has(path)).sort(([a], [b]) => b - a);
    return later[0]?.[1].get(path);
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
   * text back, created ones are removed; a file whose text is no longer the agent's last (the
   * user edited it since) is a conflict and stays as it is. The checkpoint is used up once
   * every file is handled (a second undo does nothing); after a failure it stays, so the undo
   * can be tried again.
   */
  async undo(turn: number, ops: FileOps): Promise<UndoResult> {
    // The same three-way restore as a rewind's: each file from the agent's last text back to its
    // text before the turn. A write that failed left nothing of the agent's: as it was, nothing to do.
    const files: RewoundFile[] = [...(this.turns.get(turn) ?? [])].map(([path, before]) => {
      const was = before.existed ? before.text : null;
      return { path, before: was, after: this.lastWritten(turn, path) ?? was ?? "" };
    });
    const result = await restoreFiles(files, ops);
    this.turns.delete(turn);
    this.written.delete(turn);
    return result;
  }

  /** Forgets every checkpoint (a new or loaded session). */
  clear(): void {
    this.turns.clear();
    this.written.clear();
    this.current = null;
  }
}

// Review in the editor, in every mode: each file the agent wrote shows its changes in place
// (added lines highlighted, removed ones noted) with Keep / Undo above each change (CodeLens:
// clickable, and keyboard reachable through "Show CodeLens Commands For Current Line"), and
// Keep All / Undo All at the top of the file; the chat lists the changed files with the same.
// What a change is and how Undo finds it in a document the user has edited since is
// `changeReview.ts`; this file keeps the files under review and draws them.
import * as vscode from "vscode";
import { blockLines, blocks, keep, locate, savedReview, settled, undo, type Block, type Reviewed } from "./changeReview";
import { log } from "./log";
import type { ChangedFile } from "./viewModel";

export const KEEP_CHANGE = "corvid.keepChange";
export const UNDO_CHANGE = "corvid.undoChange";
export const KEEP_FILE = "corvid.keepFileChanges";
export const UNDO_FILE = "corvid.undoFileChanges";


/** How the review writes: through the editor (undoable, saved), and deletes a created file undone in full. */
export interface ReviewWriter {
  write(path: string, text: string): Promise<void>;
  remove(path: string): Promise<void>;
  read(path: string): Promise<string | null>;
}

/**
 * Where the review is kept across a window reload (the workspace's state): the files under
 * review as plain data. A review larger than `SAVED_CHARS` (whole texts of big files) is not
 * kept; it still works until the window reloads.
 */
export interface ReviewMemory {
  get(): Reviewed[] | undefined;
  set(files: Reviewed[] | undefined): void;
}

const SAVED_CHARS = 4_000_000;

/** What a CodeLens command names: the file and the change as it was when the lens was drawn. */
type ChangeRef = [path: string, block: Block];

export class EditorReview implements vscode.CodeLensProvider, vscode.Disposable {
  private files = new Map<string, Reviewed>();
  private lensesChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensesChanged.event;
  private added = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor("diffEditor.insertedLineBackground"),
    overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.addedForeground"),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });
  private removed = vscode.window.createTextEditorDecorationType({
    after: { color: new vscode.ThemeColor("editorCodeLens.foreground"), fontStyle: "italic", margin: "0 0 0 2em" },
  });
  private subscriptions: vscode.Disposable[];

  constructor(
    private writer: ReviewWriter,
    private onList: (files: ChangedFile[]) => void,
    private memory?: ReviewMemory,
  ) {
    for (const r of savedReview(memory?.get())) if (!settled(r)) this.files.set(r.path, r);
    // Editors a reload restored are visible before this runs: they get their marks now.
    if (this.files.size) setTimeout(() => this.decorate(), 0);
    this.subscriptions = [
      vscode.languages.registerCodeLensProvider({ scheme: "file" }, this),
      vscode.window.onDidChangeVisibleTextEditors(() => this.decorate()),
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (this.files.has(e.document.uri.fsPath)) this.redraw();
      }),
      this.added,
      this.removed,
      this.lensesChanged,
    ];
  }

  dispose(): void {
    for (const d of this.subscriptions) d.dispose();
  }

  /** The changed files, for the chat's list. */
  list(): ChangedFile[] {
    return [...this.files.values()].map((r) => ({ path: r.path, changes: blocks(r).length, created: r.base === null }));
  }

  /** The agent is about to write `path`, which holds `current` (null: it does not exist): the start of its review if it has none. */
  beforeWrite(path: string, current: string | null): void {
    if (!this.files.has(path)) this.files.set(path, { path, base: current, agent: current ?? "" });
  }

  /** The agent wrote `text` to `path`. */
  afterWrite(path: string, text: string): void {
    const r = this.files.get(path);
    if (!r) return;
    this.set({ ...r, agent: text });
  }

  /** "Undo this turn" put `path` back to `text` (null: removed the file it had created). */
  replaced(path: string, text: string | null): void {
    const r = this.files.get(path);
    if (!r) return;
    if (text === null) {
      this.files.delete(path);
      this.redraw();
    } else this.set({ ...r, agent: text });
  }

  /** Keeps or drops a file's review, then redraws. */
  private set(r: Reviewed): void {
    if (settled(r)) this.files.delete(r.path);
    else this.files.set(r.path, r);
    this.redraw();
  }

  private redraw(): void {
    this.lensesChanged.fire();
    this.decorate();
    this.onList(this.list());
    this.save();
  }

  private save(): void {
    const files = [...this.files.values()];
    const size = files.reduce((n, r) => n + r.agent.length + (r.base?.length ?? 0), 0);
    if (size > SAVED_CHARS) log.info(`the review (${size} characters) is too large to keep across a reload`);
    this.memory?.set(files.length && size <= SAVED_CHARS ? files : undefined);
  }

  provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    const r = this.files.get(doc.uri.fsPath);
    if (!r) return [];
    const text = doc.getText();
    const all = blocks(r);
    const top = new vscode.Range(0, 0, 0, 0);
    const lenses = [
      new vscode.CodeLens(top, { title: `Corvid changed ${all.length} place${all.length === 1 ? "" : "s"}: Keep All`, command: KEEP_FILE, arguments: [r.path] }),
      new vscode.CodeLens(top, { title: "Undo All", command: UNDO_FILE, arguments: [r.path] }),
    ];
    for (const b of all) {
      const where = locate(r, b, text);
      if (!where) continue; // edited by the user since: nothing to undo in place
      const line = Math.min(where.start, Math.max(0, doc.lineCount - 1));
      const at = new vscode.Range(line, 0, line, 0);
      const ref: ChangeRef = [r.path, b];
      const name = blockLines(where.start, where.end);
      lenses.push(
        new vscode.CodeLens(at, { title: "Keep", tooltip: `Keep Corvid's change (${name})`, command: KEEP_CHANGE, arguments: ref }),
        new vscode.CodeLens(at, { title: "Undo", tooltip: `Undo Corvid's change (${name})`, command: UNDO_CHANGE, arguments: ref }),
      );
    }
    return lenses;
  }

  /** The visible editors of files under review: added lines highlighted, removed ones counted beside the line before. */
  private decorate(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      const r = this.files.get(editor.document.uri.fsPath);
      const added: vscode.Range[] = [];
      const removed: vscode.DecorationOptions[] = [];
      if (r) {
        const text = editor.document.getText();
        for (const b of blocks(r)) {
          const where = locate(r, b, text);
          if (!where) continue;
          if (where.end > where.start) added.push(new vscode.Range(where.start, 0, where.end - 1, 0));
          const gone = b.oldEnd - b.oldStart;
          if (gone) {
            const line = Math.max(0, (where.end > where.start ? where.end : where.start) - 1);
            const what = where.end > where.start ? `replaced ${gone} line${gone === 1 ? "" : "s"}` : `${gone} line${gone === 1 ? "" : "s"} removed`;
            removed.push({ range: new vscode.Range(line, Number.MAX_SAFE_INTEGER, line, Number.MAX_SAFE_INTEGER), renderOptions: { after: { contentText: `Corvid ${what}` } } });
          }
        }
      }
      editor.setDecorations(this.added, added);
      editor.setDecorations(this.removed, removed);
    }
  }

  /** The block as it is now, if the file still has it (the lens may be older than the last change). */
  private current(path: string, b: Block): { r: Reviewed; b: Block } | null {
    const r = this.files.get(path);
    const now = r && blocks(r).find((x) => x.oldStart === b.oldStart && x.oldEnd === b.oldEnd && x.newStart === b.newStart && x.newEnd === b.newEnd);
    return r && now ? { r, b: now } : null;
  }

  keepChange(path: string, b: Block): void {
    const found = this.current(path, b);
    if (!found) return;
    this.set(keep(found.r, found.b));
    log.info(`review: kept a change in ${path}`);
  }

  async undoChange(path: string, b: Block): Promise<void> {
    const found = this.current(path, b);
    if (!found) return;
    const doc = (await this.writer.read(path)) ?? "";
    const done = undo(found.r, found.b, doc);
    if (!done) {
      void vscode.window.showWarningMessage(`Corvid: that change in ${vscode.workspace.asRelativePath(path)} was edited after Corvid made it, so it was not undone.`);
      return;
    }
    await this.apply(path, done.doc, done.left);
    log.info(`review: undid a change in ${path}`);
  }

  /** Keep All of one file, or of every file. */
  keepFile(path?: string): void {
    for (const r of [...this.files.values()]) if (!path || r.path === path) this.set({ ...r, base: r.agent });
    log.info(`review: kept every change in ${path ?? "every file"}`);
  }

  /** Undo All of one file, or of every file: each change from the last up; one the user edited stays (and is said). */
  async undoFile(path?: string): Promise<void> {
    const conflicts: string[] = [];
    for (const start of [...this.files.values()]) {
      if (path && start.path !== path) continue;
      let r = start;
      let doc = (await this.writer.read(r.path)) ?? "";
      for (const b of blocks(r).reverse()) {
        const done = undo(r, b, doc);
        if (!done) continue;
        [r, doc] = [done.left, done.doc];
      }
      if (!settled(r)) conflicts.push(vscode.workspace.asRelativePath(r.path));
      await this.apply(r.path, doc, r);
    }
    if (conflicts.length) void vscode.window.showWarningMessage(`Corvid: changes you edited afterwards were not undone in ${conflicts.join(", ")}.`);
    log.info(`review: undid every change in ${path ?? "every file"}`);
  }

  /** Writes an undo's result: a created file undone in full is deleted. */
  private async apply(path: string, doc: string, left: Reviewed): Promise<void> {
    if (left.base === null && settled(left) && doc === "") await this.writer.remove(path);
    else await this.writer.write(path, doc);
    this.set(left);
  }
}

// The editor side of the ACP client: what the agent reads and writes goes through VS Code's
// documents (the open text, unsaved edits included; writes as WorkspaceEdits, saved), with the
// turn checkpoints behind "Undo this turn"; the diff editors (a tool call's change, and a
// proposal before approval, in memory); each command in a VS Code terminal of its own; code
// inserted at the cursor. No session state: the session controller says what to show.
import * as vscode from "vscode";
import { Checkpoints, type FileOps, type UndoResult } from "./checkpoints";
import { CommandTerminals, type CommandSource } from "./commandTerminals";
import { EditorReview, type ReviewMemory } from "./editorReview";
import { log } from "./log";
import { restoreFiles, type RewindOutcome, type RewoundFile } from "./rewind";
import type { TerminalManager } from "./terminals";
import type { ChangedFile, DiffContent, Item } from "./viewModel";

/** The scheme of the virtual documents Open diff shows (a file's old text, a proposal). */
export const OLD_SCHEME = "corvid-old";

/** The texts behind `corvid-old:` URIs, by a counter in the query (each Open diff gets its own). */
export class OldTexts implements vscode.TextDocumentContentProvider {
  private texts = new Map<string, string>();
  private n = 0;
  add(path: string, text: string): vscode.Uri {
    const key = `${++this.n}`;
    this.texts.set(key, text);
    return vscode.Uri.from({ scheme: OLD_SCHEME, path, query: key });
  }
  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.query) ?? "";
  }
}

export class EditorHost {
  readonly oldTexts = new OldTexts();
  /** Each command's VS Code terminal (made as it starts; "Open in Terminal" shows it again). */
  readonly commandTerminals = new CommandTerminals();
  /** The before-state of every file the agent wrote, per turn ("Undo this turn"). */
  readonly checkpoints = new Checkpoints();
  /** The proposal diffs opened for each open permission question (`showProposal`), as URIs. */
  private proposals = new Map<number, string[]>();
  /** Files the agent wrote through this host: saved again before a command runs (`saveDocuments`). */
  private agentWritten = new Set<string>();
  /** The agent's changes under review in the editor (Keep / Undo per change). */
  readonly review: EditorReview;

  /** `onChangedFiles`: the files under review changed (the chat lists them); `memory`: where the review outlives a reload. */
  constructor(onChangedFiles: (files: ChangedFile[]) => void, memory?: ReviewMemory) {
    this.review = new EditorReview({ write: writeThroughEditor, remove: deleteThroughEditor, read: currentText }, onChangedFiles, memory);
  }

  /** fs/read_text_file: the open document's text (unsaved edits included), else the disk's. */
  async readTextFile(path: string): Promise<string> {
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === path);
    if (doc) return doc.getText();
    return new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.file(path)));
  }

  /** fs/write_text_file: the file's state is kept for the turn's undo first. */
  async writeTextFile(path: string, content: string): Promise<void> {
    this.review.beforeWrite(path, await currentText(path));
    await this.checkpoints.beforeWrite(path, currentText);
    await writeThroughEditor(path, content);
    this.checkpoints.afterWrite(path, content);
    this.agentWritten.add(path);
    this.review.afterWrite(path, content);
  }

  /** Before terminal/create: the agent's files modified again in an editor are saved. */
  beforeCommand(): Promise<void> {
    return saveDocuments(this.agentWritten);
  }

  /** "Undo this turn": each file the turn wrote back as it was, created ones deleted. */
  undoTurn(turn: number): Promise<UndoResult> {
    return this.checkpoints.undo(turn, this.fileOps());
  }

  /** A rewind's files back as they were, through the editor, with the three-way check of `rewind.ts`. */
  rewindFiles(files: RewoundFile[]): Promise<RewindOutcome> {
    return restoreFiles(files, this.fileOps());
  }

  /** Files put back for the user (an undo, a rewind): through the editor, and out of the review. */
  private fileOps(): FileOps {
    return {
      read: currentText,
      write: async (path, text) => {
        await writeThroughEditor(path, text);
        this.review.replaced(path, text);
      },
      remove: async (path) => {
        await deleteThroughEditor(path);
        this.review.replaced(path, null);
      },
    };
  }

  /** Open diff on a tool call's change: the old text (virtual) against the file. */
  async openDiff(diff: DiffContent): Promise<void> {
    const left = this.oldTexts.add(diff.path, diff.oldText ?? "");
    const right = vscode.Uri.file(diff.path);
    const name = diff.path.split("/").pop();
    await vscode.commands.executeCommand("vscode.diff", left, right, `${name} (before ↔ Corvid's edit)`);
  }

  /**
   * A change not yet approved, in the diff editor: both sides are virtual documents (the file is
   * not written yet). A permission question about an edit opens its first change at once
   * (`corvid.review.openProposedDiff`), the focus staying in the chat, and the card's Open diff
   * opens any; their tabs close once the question is answered (an allowed edit then shows the
   * file itself). Each is listed before it opens, so an answer given meanwhile still closes it.
   */
  async showProposal(requestId: number, diff: DiffContent): Promise<void> {
    const left = this.oldTexts.add(diff.path, diff.oldText ?? "");
    const right = this.oldTexts.add(diff.path, diff.newText);
    this.proposals.set(requestId, [...(this.proposals.get(requestId) ?? []), right.toString()]);
    const name = diff.path.split("/").pop();
    await vscode.commands.executeCommand("vscode.diff", left, right, `${name} (now ↔ Corvid's proposal)`, { preview: true, preserveFocus: true });
    if (!this.proposals.has(requestId)) await this.closeTabs(new Set([right.toString()]));
  }

  async closeProposal(requestId: number): Promise<void> {
    const uris = new Set(this.proposals.get(requestId) ?? []);
    this.proposals.delete(requestId);
    await this.closeTabs(uris);
  }

  /** The diff tabs showing one of `uris` on their right side. */
  private async closeTabs(uris: Set<string>): Promise<void> {
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.input instanceof vscode.TabInputTextDiff && uris.has(t.input.modified.toString()));
    if (tabs.length) await vscode.window.tabGroups.close(tabs, true);
  }

  /** A command started (terminal/create): its VS Code terminal, typing going to its stdin. */
  commandStarted(terminalId: string, terms: TerminalManager): void {
    const source = liveSource(terminalId, terms);
    if (source) this.commandTerminals.start(terminalId, source);
  }

  /** "Open in Terminal" on a command card: its output (live in `terms`, or stored) in a VS Code terminal. */
  openTerminal(tool: Extract<Item, { kind: "tool" }>, index: number, terms: TerminalManager | undefined): void {
    const block = tool.content.filter((c) => c.type === "terminal")[index];
    if (!block || block.type !== "terminal") return;
    const live = terms && liveSource(block.terminalId, terms);
    if (live) this.commandTerminals.show(block.terminalId, live);
    else if (block.stored !== undefined) {
      const stored = block.stored;
      this.commandTerminals.show(block.terminalId, { command: tool.title, read: () => ({ output: stored, exit: block.storedExit ?? null }) });
    } else {
      void vscode.window.showInformationMessage("Corvid: no output was kept for this command.");
      return;
    }
    log.info(`opened the terminal of ${tool.id} (${block.terminalId})`);
  }
}

/** A command running (or run) in this host: its output, exit, and stdin; undefined if unknown. */
function liveSource(terminalId: string, terms: TerminalManager): CommandSource | undefined {
  const known = terms.peek(terminalId);
  if (!known) return undefined;
  return {
    command: known.command,
    read: () => {
      const now = terms.peek(terminalId);
      return { output: now?.output ?? "", exit: now?.exit ?? null };
    },
    watch: (fn) => terms.watch(terminalId, fn),
    input: (data) => terms.input(terminalId, data),
    interrupt: () => terms.interrupt(terminalId),
  };
}

/**
 * fs/write_text_file. An existing file changes through a WorkspaceEdit, so the change is
 * undoable in the editor, and is saved at once: commands and Corvid's own disk-reading tools
 * (search, glob) must see what the agent wrote, not the file as it was. A new file is written
 * to disk (a WorkspaceEdit would create it empty and hold the content in an unsaved buffer),
 * then shown.
 */
async function writeThroughEditor(path: string, content: string): Promise<void> {
  const uri = vscode.Uri.file(path);
  let doc = vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === path);
  if (!doc) {
    const exists = await vscode.workspace.fs.stat(uri).then(
      () => true,
      () => false,
    );
    if (exists) doc = await vscode.workspace.openTextDocument(uri);
  }
  if (doc) {
    const edit = new vscode.WorkspaceEdit();
    edit.replace(uri, new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length)), content);
    if (!(await vscode.workspace.applyEdit(edit))) throw new Error(`could not apply the edit to ${path}`);
    if (!(await doc.save())) throw new Error(`the edit of ${path} is in the editor but could not be saved`);
  } else {
    // VS Code's file service creates missing parent folders (the e2e test writes notes/todo.md).
    await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(content));
  }
  // Show the file (a preview tab, focus stays in the chat).
  void vscode.window.showTextDocument(uri, { preview: true, preserveFocus: true }).then(undefined, () => {});
}

/** A file's text as the agent would read it (the open document's, else the disk's), or null if there is none. */
async function currentText(path: string): Promise<string | null> {
  const doc = vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === path);
  if (doc) return doc.getText();
  try {
    return new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.file(path)));
  } catch {
    return null;
  }
}

/** Undo of a created file: deleted through a WorkspaceEdit, and its tabs closed. */
async function deleteThroughEditor(path: string): Promise<void> {
  const uri = vscode.Uri.file(path);
  const edit = new vscode.WorkspaceEdit();
  edit.deleteFile(uri, { ignoreIfNotExists: true });
  if (!(await vscode.workspace.applyEdit(edit))) throw new Error(`could not delete ${path}`);
  const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.input instanceof vscode.TabInputText && t.input.uri.fsPath === path);
  if (tabs.length) await vscode.window.tabGroups.close(tabs, true);
}

/**
 * Before a command runs: the files the agent wrote that are modified in an editor again (the
 * user undid or changed the agent's edit) are saved, so the command runs on the text the user
 * sees. Other unsaved documents are the user's own and stay as they are.
 */
async function saveDocuments(paths: ReadonlySet<string>): Promise<void> {
  const dirty = vscode.workspace.textDocuments.filter((d) => d.isDirty && d.uri.scheme === "file" && paths.has(d.uri.fsPath));
  const saved = await Promise.all(dirty.map((d) => d.save()));
  const failed = dirty.filter((_, i) => !saved[i]).map((d) => d.uri.fsPath);
  if (failed.length) throw new Error(`could not save ${failed.join(", ")} before running the command`);
}

/**
 * "Insert" on a code block: the code replaces the selections of the editor the user was last
 * in (the chat view's focus does not change VS Code's active editor), or of the first visible
 * one, which then gets the focus.
 */
export async function insertAtCursor(text: string): Promise<void> {
  const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
  if (!editor) {
    void vscode.window.showInformationMessage("Corvid: open a file to insert the code into.");
    return;
  }
  if (!(await editor.edit((b) => editor.selections.forEach((s) => b.replace(s, text))))) throw new Error(`could not insert into ${editor.document.uri.fsPath}`);
  await vscode.window.showTextDocument(editor.document, { viewColumn: editor.viewColumn, preserveFocus: false });
}

// The editor's side of a prompt's context: what `@` offers (workspace files and folders,
// workspace symbols, the selection), the current file and selection chips, and reading the
// text of what is attached when the prompt is sent. The pure parts are in `context.ts`.
import { execFile } from "node:child_process";
import * as vscode from "vscode";
import { CONTEXT_SOURCES, contextUri, foldersOf, rankPaths, type Attachment, type ContextSource, type Lines } from "./context";
import { problemsText, type DiagnosticFacts } from "./diagnostics";

/** One row of the `@` popup. */
export interface MentionItem {
  label: string;
  detail: string;
  attachment: Attachment;
}

/** Files listed per query at most (findFiles' limit; files.exclude applies). */
const FILE_SCAN_LIMIT = 5000;
/** A listing is reused for this long: one scan per burst of keystrokes, not per key. */
const SCAN_TTL_MS = 3000;
/** Text files up to this size are embedded with the prompt; larger ones are linked. */
export const EMBED_MAX_BYTES = 64 * 1024;

let scan: { at: number; files: Promise<vscode.Uri[]> } | null = null;

function workspaceFiles(): Promise<vscode.Uri[]> {
  if (!scan || Date.now() - scan.at > SCAN_TTL_MS) scan = { at: Date.now(), files: Promise.resolve(vscode.workspace.findFiles("**/*", undefined, FILE_SCAN_LIMIT)) };
  return scan.files;
}

function baseName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1) || path;
}

/** Lines of a range, 1-based; a selection that ends at the start of a line does not cover it. */
export function linesOf(range: vscode.Range): Lines {
  const end = range.end.character === 0 && range.end.line > range.start.line ? range.end.line - 1 : range.end.line;
  return { start: range.start.line + 1, end: end + 1 };
}

/** The active editor's selection as an attachment (its text read now), or null if it is empty. */
export function selectionAttachment(editor: vscode.TextEditor | undefined): Attachment | null {
  if (!editor || editor.selection.isEmpty || editor.document.uri.scheme !== "file") return null;
  const lines = linesOf(editor.selection);
  const name = `${baseName(editor.document.uri.path)}:${lines.start}-${lines.end}`;
  return { kind: "selection", uri: editor.document.uri.toString(), name, lines, text: editor.document.getText(editor.selection), mimeType: mimeOf(editor.document.languageId) };
}

/** What the context chips show for the active editor: its file and its selection. */
export function editorChips(editor: vscode.TextEditor | undefined): { file: Attachment | null; selection: Attachment | null } {
  if (!editor || editor.document.uri.scheme !== "file") return { file: null, selection: null };
  const uri = editor.document.uri;
  const sel = selectionAttachment(editor);
  // The selection's text is read when the prompt is sent (it may still change).
  const selection = sel && sel.kind === "selection" ? { ...sel, text: undefined } : null;
  return { file: { kind: "file", uri: uri.toString(), name: baseName(uri.path) }, selection };
}

/** Answers what was typed after `@`: the editor's context (problems, changes, terminal), the selection, files, folders, symbols. */
export async function mentionItems(query: string): Promise<MentionItem[]> {
  const items: MentionItem[] = [];
  for (const c of CONTEXT_SOURCES)
    if (c.source.startsWith(query.toLowerCase())) items.push({ label: c.source, detail: c.detail, attachment: { kind: "context", source: c.source, uri: contextUri(c.source), name: c.source } });
  const sel = selectionAttachment(vscode.window.activeTextEditor);
  if (sel && "selection".startsWith(query.toLowerCase())) items.push({ label: "selection", detail: sel.name, attachment: sel });
  const symbols = workspaceSymbols(query);
  const uris = await workspaceFiles();
  const byRel = new Map(uris.map((u) => [vscode.workspace.asRelativePath(u, false), u]));
  for (const rel of rankPaths(query, [...byRel.keys()], 12)) {
    items.push({ label: baseName(rel), detail: rel, attachment: { kind: "file", uri: byRel.get(rel)!.toString(), name: baseName(rel) } });
  }
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (root && query) {
    for (const rel of rankPaths(query, foldersOf([...byRel.keys()]), 4)) {
      items.push({ label: `${baseName(rel)}/`, detail: rel, attachment: { kind: "folder", uri: vscode.Uri.joinPath(root, rel).toString(), name: `${baseName(rel)}/` } });
    }
  }
  items.push(...(await symbols));
  return items;
}

/** Workspace symbols for `query`, when a provider answers in time (none: no symbol rows). */
async function workspaceSymbols(query: string): Promise<MentionItem[]> {
  if (query.length < 2) return [];
  const found = await Promise.race([
    Promise.resolve(vscode.commands.executeCommand<vscode.SymbolInformation[]>("vscode.executeWorkspaceSymbolProvider", query)).catch(() => []),
    new Promise<vscode.SymbolInformation[]>((r) => setTimeout(() => r([]), 1500)),
  ]);
  return (found ?? [])
    .filter((s) => s.location?.uri?.scheme === "file")
    .slice(0, 8)
    .map((s) => {
      const lines = linesOf(s.location.range);
      const file = baseName(s.location.uri.path);
      return {
        label: s.name,
        detail: `${vscode.SymbolKind[s.kind] ?? "symbol"} · ${file}:${lines.start}`,
        attachment: { kind: "symbol" as const, uri: s.location.uri.toString(), name: `${s.name} (${file}:${lines.start})`, lines },
      };
    });
}

/**
 * Fills in the text of what is sent: a selection's or symbol's lines, a small text file's
 * contents (the editor's text when it is open, unsaved edits included). What cannot be read
 * stays a link.
 */
export async function resolveAttachments(list: Attachment[], sources: ContextReaders): Promise<Attachment[]> {
  return Promise.all(
    list.map(async (a): Promise<Attachment> => {
      if (a.kind === "image" || a.kind === "folder") return a;
      if (a.kind === "context") return { ...a, text: await contextText(a.source, sources) };
      try {
        const uri = vscode.Uri.parse(a.uri);
        const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
        if (a.kind === "selection" || a.kind === "symbol") {
          if (a.text !== undefined) return a;
          const doc = open ?? (await vscode.workspace.openTextDocument(uri));
          const range = new vscode.Range(a.lines.start - 1, 0, a.lines.end, 0);
          return { ...a, text: doc.getText(range), mimeType: mimeOf(doc.languageId) };
        }
        if (open) return open.getText().length <= EMBED_MAX_BYTES ? { ...a, text: open.getText(), mimeType: mimeOf(open.languageId) } : a;
        const stat = await vscode.workspace.fs.stat(uri);
        if (stat.type !== vscode.FileType.File || stat.size > EMBED_MAX_BYTES) return a;
        const bytes = await vscode.workspace.fs.readFile(uri);
        if (bytes.includes(0)) return a; // binary: a link, the agent decides
        return { ...a, text: new TextDecoder().decode(bytes) };
      } catch {
        return a;
      }
    }),
  );
}

export function mimeOf(languageId: string): string | undefined {
  const m: Record<string, string> = { markdown: "text/markdown", json: "application/json", javascript: "text/javascript", typescript: "text/x-typescript", rust: "text/x-rust", python: "text/x-python", html: "text/html", plaintext: "text/plain" };
  return m[languageId];
}

/** What the host knows that the editor does not: the last command the agent ran. */
export interface ContextReaders {
  lastCommand(): { command: string; output: string; exit: { exitCode: number | null; signal: string | null } | null } | undefined;
}

/** Context text is cut to this many characters (the tail for a command's output). */
const CONTEXT_MAX_CHARS = 64 * 1024;

/** The text of `@problems`, `@changes` or `@terminal`, as of now. */
async function contextText(source: ContextSource, sources: ContextReaders): Promise<string> {
  if (source === "problems") {
    const open = new Set(vscode.workspace.textDocuments.map((d) => d.uri.toString()));
    const all = vscode.languages
      .getDiagnostics()
      .filter(([uri]) => uri.scheme === "file" && open.has(uri.toString()))
      .flatMap(([uri, ds]) => {
        const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString())!;
        return ds.map((d) => diagnosticFacts(doc, d));
      });
    return problemsText(all);
  }
  if (source === "terminal") {
    const last = sources.lastCommand();
    if (!last) return "No command has run in this window yet.";
    const out = last.output.length > CONTEXT_MAX_CHARS ? `… (earlier output cut)\n${last.output.slice(-CONTEXT_MAX_CHARS)}` : last.output;
    const exit = last.exit ? (last.exit.exitCode != null ? `exit code ${last.exit.exitCode}` : `killed by ${last.exit.signal}`) : "still running";
    return `The last command: ${last.command}\n(${exit})\n${out}`;
  }
  const root = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  if (!root) return "No folder is open: there is no working tree.";
  const git = (args: string[]) =>
    new Promise<string>((resolve, reject) =>
      execFile("git", ["-C", root, ...args], { timeout: 10000, maxBuffer: 8 * CONTEXT_MAX_CHARS }, (e, out) => (e ? reject(e) : resolve(out))),
    );
  try {
    const status = await git(["status", "--porcelain=v1", "--untracked-files=all"]);
    if (!status.trim()) return "The working tree has no changes.";
    // Against HEAD (staged and unstaged); a repository without commits has no HEAD yet.
    const diff = await git(["diff", "HEAD", "--no-color", "--no-ext-diff"]).catch(() => git(["diff", "--no-color", "--no-ext-diff"]));
    const text = `git status --porcelain:\n${status}\ngit diff HEAD:\n${diff}`;
    return text.length > CONTEXT_MAX_CHARS ? `${text.slice(0, CONTEXT_MAX_CHARS)}\n… (cut: the diff is longer)` : text;
  } catch (e) {
    return `No git changes could be read here: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`;
  }
}

/** A diagnostic as `diagnostics.ts` words it (`@problems`, Fix with Corvid). */
export function diagnosticFacts(doc: vscode.TextDocument, d: vscode.Diagnostic): DiagnosticFacts {
  return {
    path: vscode.workspace.asRelativePath(doc.uri),
    line: d.range.start.line + 1,
    column: d.range.start.character + 1,
    severity: (["error", "warning", "info", "hint"] as const)[d.severity] ?? "error",
    message: d.message,
    source: d.source,
    code: typeof d.code === "object" ? String(d.code.value) : d.code === undefined ? undefined : String(d.code),
  };
}

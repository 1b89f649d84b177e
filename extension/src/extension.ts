// Corvid for VS Code: a thin ACP client. The agent is the Corvid core in-process (napi addon)
// or, with `corvid.agent.command`, any ACP agent over stdio. This file wires the parts together
// and registers the commands: the session (`sessionController.ts`: ACP, sessions, prompts), the
// editor's side of ACP (`editorHost.ts`: files, diffs, terminals, checkpoints) and the webview
// (`webviewBridge.ts`, its messages in `webviewMessages.ts`).
import * as vscode from "vscode";
import { promptBlocks } from "./acpClient";
import { FIX_COMMAND, fixDiagnostic, FixWithCorvid } from "./diagnosticFix";
import { editorChips, mentionItems, mimeOf, selectionAttachment } from "./editorContext";
import { EditorHost, insertAtCursor, OLD_SCHEME } from "./editorHost";
import { KEEP_CHANGE, KEEP_FILE, UNDO_CHANGE, UNDO_FILE } from "./editorReview";
import type { Block } from "./changeReview";
import { knownFix } from "./fixes";
import { fail, guard, log, openLog } from "./log";
import { isProviderChoice } from "./providers";
import type { Reviewed } from "./changeReview";
import { SessionController } from "./sessionController";
import { selectionLines } from "./viewModel";
import { WebviewBridge } from "./webviewBridge";
import type { FromWebview } from "./webviewMessages";

/** Workspace state: the agent's changes under review in the editor (`editorReview.ts`). */
const REVIEW_STATE = "corvid.review";

export function activate(context: vscode.ExtensionContext): void {
  context.subscriptions.push(openLog());
  try {
    // The review's list goes to the chat through the session (made below, before any write).
    // The review is kept in the workspace's state, so a reload (or a restart) keeps it.
    const memory = { get: () => context.workspaceState.get<Reviewed[]>(REVIEW_STATE), set: (files: Reviewed[] | undefined) => void context.workspaceState.update(REVIEW_STATE, files) };
    const editor = new EditorHost(() => session.reviewChanged(), memory);
    // The bridge and the session need each other: the bridge asks the session for the state,
    // the session posts through the bridge.
    let session: SessionController;
    const chips = new EditorChips(() => bridge);
    const bridge: WebviewBridge = new WebviewBridge(context.extensionUri, {
      state: () => session.snapshot(),
      onMessage: (m) => route(m, session, bridge),
      onReady: () => chips.post(),
      onResolve: () => void session.ensureClient().catch(() => {}),
      fail,
    });
    session = new SessionController(context, editor, bridge);
    context.subscriptions.push(
      vscode.window.registerWebviewViewProvider("corvid.chat", bridge, { webviewOptions: { retainContextWhenHidden: true } }),
      vscode.workspace.registerTextDocumentContentProvider(OLD_SCHEME, editor.oldTexts),
      vscode.commands.registerCommand("corvid.newChat", () => guard("New Chat", () => session.newChat())),
      vscode.commands.registerCommand("corvid.focusChat", () => guard("Focus Chat Input", () => focusInput(bridge))),
      vscode.commands.registerCommand("corvid.askAboutFile", () => guard("Ask About This File", () => askAboutEditor(session, false))),
      vscode.commands.registerCommand("corvid.askAboutSelection", () => guard("Ask About Selection", () => askAboutEditor(session, true))),
      vscode.commands.registerCommand("corvid.addSelectionToChat", () => guard("Add Selection to Chat", () => addSelectionToChat(bridge))),
      vscode.window.onDidChangeActiveTextEditor(() => chips.changed()),
      vscode.window.onDidChangeTextEditorSelection(() => chips.changed()),
      vscode.commands.registerCommand("corvid.showLogs", () => log.show()),
      vscode.commands.registerCommand("corvid.setApiKey", () => guard("Set API Key", () => session.setApiKey())),
      vscode.commands.registerCommand("corvid.history", () => guard("Open Past Chat", () => session.history())),
      vscode.languages.registerCodeActionsProvider({ scheme: "file" }, new FixWithCorvid(), { providedCodeActionKinds: FixWithCorvid.kinds }),
      vscode.commands.registerCommand(FIX_COMMAND, (uri: vscode.Uri, d: vscode.Diagnostic) => guard("Fix with Corvid", () => fixDiagnostic(session, uri, d))),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (!e.affectsConfiguration("corvid")) return;
        const command = vscode.workspace.getConfiguration("corvid").get<string>("agent.command")?.trim();
        session.restartLater(`settings changed (agent: ${command || "built-in core"})`);
        // The model list and the endpoint are applied at once (the picker shows the list
        // without a reload; the next request goes to the new endpoint, with the key saved for
        // it only): the core restarts and the open chat is loaded again. Other settings wait
        // for the next chat.
        const now = ["corvid.models", "corvid.baseUrl", "corvid.provider"].find((k) => e.affectsConfiguration(k));
        if (now) void guard(`Apply ${now}`, () => session.restartNow(`${now} changed`));
        // The model: the open chat's picker follows it.
        else if (e.affectsConfiguration("corvid.model")) void guard("Apply corvid.model", () => session.followModelSetting());
      }),
      editor.commandTerminals,
      editor.review,
      vscode.commands.registerCommand(KEEP_CHANGE, (path: string, b: Block) => guard("Keep Change", async () => editor.review.keepChange(path, b))),
      vscode.commands.registerCommand(UNDO_CHANGE, (path: string, b: Block) => guard("Undo Change", () => editor.review.undoChange(path, b))),
      vscode.commands.registerCommand(KEEP_FILE, (path?: string) => guard("Keep All Changes", async () => editor.review.keepFile(asPath(path)))),
      vscode.commands.registerCommand(UNDO_FILE, (path?: string) => guard("Undo All Changes", () => editor.review.undoFile(asPath(path)))),
      { dispose: () => void session.shutdown() },
    );
    log.info("Corvid activated");
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    log.error(`activation failed: ${msg}`);
    void vscode.window.showErrorMessage(`Corvid failed to activate: ${msg}`, "Show Logs").then((b) => b && log.show());
    throw e;
  }
}

export function deactivate(): void {}

/** A path a command was given (from a CodeLens, the chat, or nothing from the palette: every file). */
function asPath(path: unknown): string | undefined {
  return typeof path === "string" && path ? path : undefined;
}

/** A webview message to the part that does it; its fields are coerced (the page is not trusted). */
async function route(m: FromWebview, session: SessionController, bridge: WebviewBridge): Promise<void> {
  switch (m.type) {
    case "prompt":
      return session.promptWithContext(String(m.text ?? ""), Array.isArray(m.attachments) ? m.attachments : []);
    case "mentionQuery": {
      const items = await mentionItems(String(m.query ?? ""));
      bridge.post({ type: "mentions", id: m.id, items });
      return;
    }
    case "stop":
      return session.stop();
    case "permission":
      return session.answerPermission(Number(m.requestId), String(m.optionId), m.rejectedHunks);
    case "openDiff":
      return session.openDiff(String(m.toolCallId), m.index ?? 0);
    case "openProposedDiff":
      return session.openProposedDiff(Number(m.requestId), m.index ?? 0);
    case "undoTurn":
      return session.undoTurn(Number(m.turn));
    case "rewind":
      if (typeof m.messageId === "string") return session.rewind(m.messageId);
      return;
    case "review":
      // Keep / Undo from the chat's list of changed files: one file's changes, or every file's.
      await vscode.commands.executeCommand(m.action === "undo" ? UNDO_FILE : KEEP_FILE, typeof m.path === "string" ? m.path : undefined);
      return;
    case "setConfig":
      return session.setConfig(String(m.configId), m.value);
    case "newChat":
      return session.newChat();
    case "copyCode":
      await vscode.env.clipboard.writeText(String(m.text ?? ""));
      log.info(`copied a code block (${String(m.text ?? "").length} characters)`);
      return;
    case "insertCode":
      return insertAtCursor(String(m.text ?? ""));
    case "openFile":
      await vscode.window.showTextDocument(vscode.Uri.file(String(m.path)), { preview: true });
      return;
    case "history":
      return session.history();
    case "loadSession":
      return session.loadSession(String(m.sessionId));
    case "retry":
      return session.retry();
    case "fix": {
      // A VS Code action offered with an error: only the known ones run.
      const fix = knownFix(m ?? {});
      if (!fix) return;
      if (fix.kind === "command") await vscode.commands.executeCommand(fix.command);
      else await vscode.commands.executeCommand("workbench.action.openSettings", fix.setting);
      return;
    }
    case "renameSession":
      return session.renameSession(String(m.sessionId), String(m.title ?? ""));
    case "deleteSession":
      return session.deleteSession(String(m.sessionId), String(m.title ?? ""));
    case "openTerminal":
      return session.openTerminal(String(m.toolCallId), Number(m.index ?? 0));
    case "setupProvider":
      if (isProviderChoice(m.choice)) await session.setupProvider(m.choice);
      return;
    case "setupKey":
      return session.setApiKey();
    case "testConnection":
      return session.testConnection();
  }
}

/**
 * The active editor's file and selection as chips above the chat's input. Sent when they
 * change (debounced: a selection changes with every key) and when the page becomes ready.
 */
class EditorChips {
  private timer: NodeJS.Timeout | null = null;
  constructor(private bridge: () => WebviewBridge) {}

  changed(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.post();
    }, 150);
  }

  post(): void {
    // The chat view itself taking the focus leaves activeTextEditor as it was; a panel (Output)
    // has no text editor: keep the last file rather than blinking the chip away.
    const editor = vscode.window.activeTextEditor;
    if (!editor && vscode.window.visibleTextEditors.length) return;
    this.bridge().postIfReady({ type: "editor", ...editorChips(editor) });
  }
}

/** Shows the chat and puts the cursor in its input (a keybinding). */
async function focusInput(bridge: WebviewBridge): Promise<void> {
  await vscode.commands.executeCommand("corvid.chat.focus");
  bridge.focus();
}

/** Ask About This File / Selection: a question about the editor's text, sent with it as an embedded resource. */
async function askAboutEditor(session: SessionController, selectionOnly: boolean): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    void vscode.window.showWarningMessage("Corvid: open a file first.");
    return;
  }
  const doc = editor.document;
  const sel = editor.selection;
  if (selectionOnly && sel.isEmpty) {
    void vscode.window.showWarningMessage("Corvid: select some text first.");
    return;
  }
  const question = await vscode.window.showInputBox({
    title: selectionOnly ? "Ask Corvid about the selection" : "Ask Corvid about this file",
    value: selectionOnly ? "Explain this code." : "Explain this file.",
  });
  if (question === undefined) return;
  const range = selectionOnly ? sel : undefined;
  const text = doc.getText(range);
  const rel = vscode.workspace.asRelativePath(doc.uri);
  const where = range ? `${rel}, lines ${selectionLines(range.start, range.end)}` : rel;
  await vscode.commands.executeCommand("corvid.chat.focus");
  const prompt = `${question}\n\n(About ${where}.)`;
  const name = range ? `${rel.split("/").pop()}:${selectionLines(range.start, range.end)}` : (rel.split("/").pop() ?? rel);
  await session.prompt(prompt, { blocks: promptBlocks(prompt, { uri: doc.uri.toString(), text, mimeType: mimeOf(doc.languageId) }), chips: [{ kind: range ? "selection" : "file", name }] });
}

/** Add Selection to Chat: the selection becomes a chip of the message being written; nothing is sent. */
async function addSelectionToChat(bridge: WebviewBridge): Promise<void> {
  const attachment = selectionAttachment(vscode.window.activeTextEditor);
  if (!attachment) {
    void vscode.window.showWarningMessage("Corvid: select some text in a file first.");
    return;
  }
  log.info(`selection added to the chat input: ${attachment.name}`);
  await vscode.commands.executeCommand("corvid.chat.focus");
  bridge.attach(attachment);
}

// Corvid for VS Code: a thin ACP client. The agent is the Corvid core in-process (napi addon)
// or, with `corvid.agent.command`, any ACP agent over stdio. Everything the agent does to the
// editor goes through the ACP client methods implemented here (fs, terminal, permissions).
import * as vscode from "vscode";
import * as os from "node:os";
import * as fs from "node:fs";
import * as path from "node:path";
import { AcpClient, promptBlocks, type ClientHost } from "./acpClient";
import { addonTransport, stdioTransport, type Transport, type AgentSettings } from "./transport";
import { Checkpoints } from "./checkpoints";
import { chipsOf, contextBlocks, promptCapsOf, type Attachment, type Chip, type PromptCaps } from "./context";
import { editorChips, mentionItems, mimeOf, resolveAttachments, selectionAttachment } from "./editorContext";
import type { ContentBlock } from "@agentclientprotocol/sdk";
import { fixesFor, inVsCodeTerms, knownFix } from "./fixes";
import { followUpText, reviewAnswer, validRejections } from "./hunkReview";
import { CommandTerminals } from "./commandTerminals";
import { withModels } from "./coreConfig";
import { checkBaseUrl, describeSettings, isProviderChoice, needsProvider, PRESETS, settingsFor, type ProviderChoice } from "./providers";
import { addCheckpoint, addPermission, applyUpdate, configSelects, endTurn, findDiff, findProposedDiff, initialState, lastPrompt, pendingPermissions, resolvePermission, selectionLines, withTerminalOutput, type ViewState } from "./viewModel";

const SECRET_KEY = "corvid.apiKey";
/** Workspace state: the session the chat shows, loaded again when the window reloads. */
const OPEN_SESSION = "corvid.openSession";
const OLD_SCHEME = "corvid-old";

/** What a prompt sends besides its text: the content blocks, and the chips its message shows. */
interface PromptContext {
  blocks: ContentBlock[];
  chips: Chip[];
}

let log: vscode.LogOutputChannel;
/** An error as one line for people: its message (a JSON-RPC error's too), else it as JSON. */
function errorText(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (typeof e === "object" && e !== null && typeof (e as { message?: unknown }).message === "string") return (e as { message: string }).message;
  return typeof e === "object" ? JSON.stringify(e) : String(e);
}

/** Errors already shown to the user (by `Chat.fail`), so callers up the stack do not repeat them. */
const reported = new WeakSet<object>();

export function activate(context: vscode.ExtensionContext): void {
  log = vscode.window.createOutputChannel("Corvid", { log: true });
  context.subscriptions.push(log);
  try {
    const chat = new Chat(context);
    context.subscriptions.push(
      vscode.window.registerWebviewViewProvider("corvid.chat", chat, { webviewOptions: { retainContextWhenHidden: true } }),
      vscode.workspace.registerTextDocumentContentProvider(OLD_SCHEME, chat.oldTexts),
      vscode.commands.registerCommand("corvid.newChat", () => chat.guard("New Chat", () => chat.newChat())),
      vscode.commands.registerCommand("corvid.focusChat", () => chat.guard("Focus Chat Input", () => chat.focusInput())),
      vscode.commands.registerCommand("corvid.askAboutFile", () => chat.guard("Ask About This File", () => chat.askAboutEditor(false))),
      vscode.commands.registerCommand("corvid.askAboutSelection", () => chat.guard("Ask About Selection", () => chat.askAboutEditor(true))),
      vscode.commands.registerCommand("corvid.addSelectionToChat", () => chat.guard("Add Selection to Chat", () => chat.addSelectionToChat())),
      vscode.window.onDidChangeActiveTextEditor(() => chat.editorChanged()),
      vscode.window.onDidChangeTextEditorSelection(() => chat.editorChanged()),
      vscode.commands.registerCommand("corvid.showLogs", () => log.show()),
      vscode.commands.registerCommand("corvid.setApiKey", () => chat.guard("Set API Key", () => chat.setApiKey())),
      vscode.commands.registerCommand("corvid.history", () => chat.guard("Open Past Chat", () => chat.history())),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (!e.affectsConfiguration("corvid")) return;
        const command = vscode.workspace.getConfiguration("corvid").get<string>("agent.command")?.trim();
        chat.restartLater(`settings changed (agent: ${command || "built-in core"})`);
        // The model list is applied at once (the picker shows it without a reload): the core
        // restarts and the open chat is loaded again. Other settings wait for the next chat.
        if (e.affectsConfiguration("corvid.models")) void chat.guard("Apply corvid.models", () => chat.restartNow("corvid.models changed"));
      }),
      chat.commandTerminals,
      { dispose: () => void chat.shutdown() },
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

class OldTexts implements vscode.TextDocumentContentProvider {
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

class Chat implements vscode.WebviewViewProvider {
  readonly oldTexts = new OldTexts();
  /** "Open in Terminal": a command's output in a VS Code terminal, made on request. */
  readonly commandTerminals = new CommandTerminals();
  private view?: vscode.WebviewView;
  /** The webview's script has started (it posts "ready"); messages before that are lost. */
  private viewReady = false;
  /** A history list asked for before the webview was ready; sent on "ready". */
  private pendingHistory: unknown = null;
  /** Focus Chat Input ran before the webview was ready: focus its input on "ready". */
  private focusOnReady = false;
  private client: AcpClient | null = null;
  private transport: Transport | null = null;
  private starting: Promise<AcpClient> | null = null;
  private state: ViewState = initialState();
  private permissions = new Map<number, (optionId: string | null) => void>();
  /** Files the agent wrote through this host: saved again before a command runs (`saveDocuments`). */
  private agentWritten = new Set<string>();
  private nextPermission = 1;
  /** The before-state of every file the agent wrote, per turn ("Undo this turn"). */
  private checkpoints = new Checkpoints();
  private nextTurn = 1;
  /** Turns being undone now (a second click waits for nothing and does nothing). */
  private undoing = new Set<number>();
  private postTimer: NodeJS.Timeout | null = null;
  private status: vscode.StatusBarItem;
  private stale = false;
  /** The first start of this extension host loads the session the window last showed. */
  private restoreOnStart = true;
  /** The last prompt sent, with its context (Retry sends it again). */
  private lastSent: { sessionId: string; text: string; context: PromptContext } | null = null;
  /** What the agent accepts in a prompt, from its `initialize` answer. */
  private caps: PromptCaps = { image: false, embeddedContext: false };
  /** Attachments for the message being written that came before the webview was ready (Add Selection to Chat). */
  private pendingAttachments: Attachment[] = [];
  private editorTimer: NodeJS.Timeout | null = null;
  /**
   * Prompts to send for the user when the running turn ends: the rejected hunks of an edit
   * approved in part (`hunkReview.ts`). Never sent into the running turn.
   */
  private followUps: { sessionId: string; text: string }[] = [];
  /** The auth methods of the last `initialize` (they say whether a provider is missing). */
  private lastAuthMethods: { name?: string }[] = [];

  constructor(private context: vscode.ExtensionContext) {
    this.status = vscode.window.createStatusBarItem("corvid.status", vscode.StatusBarAlignment.Right, 100);
    this.status.name = "Corvid";
    this.status.command = "corvid.chat.focus";
    context.subscriptions.push(this.status);
    this.setAgentState("idle");
    this.status.show();
  }

  // ---- webview ------------------------------------------------------------------------
  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.viewReady = false;
    const media = vscode.Uri.joinPath(this.context.extensionUri, "media");
    const dist = vscode.Uri.joinPath(this.context.extensionUri, "dist");
    view.webview.options = { enableScripts: true, localResourceRoots: [media, dist] };
    const nonce = Math.random().toString(36).slice(2) + Math.random().toString(36).slice(2);
    const css = view.webview.asWebviewUri(vscode.Uri.joinPath(media, "chat.css"));
    const js = view.webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.js"));
    view.webview.html = `<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${view.webview.cspSource} https: data:; style-src ${view.webview.cspSource}; script-src 'nonce-${nonce}';">
<link rel="stylesheet" href="${css}"></head><body>
<div id="app"></div><script nonce="${nonce}" src="${js}"></script></body></html>`;
    view.webview.onDidReceiveMessage((m) => this.onMessage(m).catch((e) => this.fail(String(m?.type ?? "webview action"), e)));
    void this.ensureClient().catch(() => {});
  }

  private post(now = false): void {
    if (now) {
      if (this.postTimer) clearTimeout(this.postTimer);
      this.postTimer = null;
      if (this.client) withTerminalOutput(this.state, (id) => this.client!.terminals.peek(id));
      this.state.promptCaps = this.caps;
      void this.view?.webview.postMessage({ type: "state", state: this.state });
      return;
    }
    this.postTimer ??= setTimeout(() => this.post(true), 30);
  }

  private async onMessage(m: any): Promise<void> {
    switch (m.type) {
      case "ready":
        this.viewReady = true;
        this.post(true);
        if (this.pendingHistory) void this.view?.webview.postMessage(this.pendingHistory);
        this.pendingHistory = null;
        this.postEditor();
        for (const attachment of this.pendingAttachments.splice(0)) void this.view?.webview.postMessage({ type: "attach", attachment });
        if (this.focusOnReady) void this.view?.webview.postMessage({ type: "focus" });
        this.focusOnReady = false;
        break;
      case "prompt":
        await this.promptWithContext(String(m.text ?? ""), Array.isArray(m.attachments) ? m.attachments : []);
        break;
      case "mentionQuery": {
        const items = await mentionItems(String(m.query ?? ""));
        void this.view?.webview.postMessage({ type: "mentions", id: m.id, items });
        break;
      }
      case "stop":
        await this.stop();
        break;
      case "permission":
        this.answerPermission(Number(m.requestId), String(m.optionId), m.rejectedHunks);
        break;
      case "openDiff":
        await this.openDiff(m.toolCallId, m.index ?? 0);
        break;
      case "openProposedDiff":
        await this.openProposedDiff(Number(m.requestId), m.index ?? 0);
        break;
      case "undoTurn":
        await this.undoTurn(Number(m.turn));
        break;
      case "setConfig":
        await this.setConfig(m.configId, m.value);
        break;
      case "newChat":
        await this.newChat();
        break;
      case "copyCode":
        await vscode.env.clipboard.writeText(String(m.text ?? ""));
        log.info(`copied a code block (${String(m.text ?? "").length} characters)`);
        break;
      case "insertCode":
        await insertAtCursor(String(m.text ?? ""));
        break;
      case "openFile":
        await vscode.window.showTextDocument(vscode.Uri.file(m.path), { preview: true });
        break;
      case "history":
        await this.history();
        break;
      case "loadSession":
        await this.loadSession(String(m.sessionId));
        break;
      case "retry":
        await this.retry();
        break;
      case "fix":
        await this.runFix(m);
        break;
      case "renameSession":
        await this.renameSession(String(m.sessionId), String(m.title ?? ""));
        break;
      case "openTerminal":
        this.openTerminal(String(m.toolCallId), Number(m.index ?? 0));
        break;
      case "setupProvider":
        if (isProviderChoice(m.choice)) await this.setupProvider(m.choice);
        break;
      case "setupKey":
        await this.setApiKey();
        break;
      case "testConnection":
        await this.testConnection();
        break;
      case "deleteSession":
        await this.deleteSession(String(m.sessionId), String(m.title ?? ""));
        break;
    }
  }

  // ---- agent lifecycle ----------------------------------------------------------------
  private setAgentState(s: string): void {
    this.state.agentState = s;
    const icon = s === "working" ? "$(sync~spin)" : s === "error" ? "$(error)" : s === "starting" ? "$(loading~spin)" : "$(comment-discussion)";
    this.status.text = `${icon} Corvid: ${s}`;
    this.status.tooltip = `Corvid agent: ${s}${this.transport ? ` (${this.transport.describe})` : ""}`;
    this.post();
  }

  private cwd(): string {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? os.homedir();
  }

  private async settings(): Promise<AgentSettings> {
    const c = vscode.workspace.getConfiguration("corvid");
    return {
      provider: c.get<string>("provider") || undefined,
      baseUrl: c.get<string>("baseUrl") || undefined,
      model: c.get<string>("model") || undefined,
      logLevel: c.get<string>("logLevel") || undefined,
      apiKey: (await this.context.secrets.get(SECRET_KEY)) || undefined,
      // Only the built-in core reads it (an external agent gets variables, and has no list).
      configFile: this.builtIn() ? await this.coreConfigFile() : undefined,
    };
  }

  /**
   * `corvid.models` (the model picker's list) for the built-in core: a copy of Corvid's own
   * config file with `[provider] models` set, in the extension's storage; undefined (Corvid's
   * own file as it is) when the setting is empty. The addon's options have no model list.
   */
  private async coreConfigFile(): Promise<string | undefined> {
    const models = (vscode.workspace.getConfiguration("corvid").get<string[]>("models") ?? []).map((m) => String(m).trim()).filter(Boolean);
    if (!models.length) return undefined;
    const own = process.env.CORVID_CONFIG || path.join(os.homedir(), ".config/corvid/config.toml");
    let text: string | null = null;
    try {
      text = await fs.promises.readFile(own, "utf8");
    } catch {}
    const dir = this.context.globalStorageUri.fsPath;
    await fs.promises.mkdir(dir, { recursive: true });
    const file = path.join(dir, "core-config.toml");
    // 0600: the user's file may hold an API key.
    await fs.promises.writeFile(file, withModels(text, models), { mode: 0o600 });
    log.info(`corvid.models: ${models.join(", ")} (config ${file}, from ${text === null ? "no file" : own})`);
    return file;
  }

  private host(): ClientHost {
    return {
      readTextFile: async (path) => {
        const doc = vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === path);
        if (doc) return doc.getText();
        return new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.file(path)));
      },
      writeTextFile: async (path, content) => {
        await this.checkpoints.beforeWrite(path, currentText);
        await writeThroughEditor(path, content);
        this.agentWritten.add(path);
      },
      beforeCommand: () => saveDocuments(this.agentWritten),
      requestPermission: (params) =>
        new Promise((resolve) => {
          const id = this.nextPermission++;
          this.permissions.set(id, resolve);
          addPermission(this.state, id, params);
          log.info(`permission requested: ${params.toolCall?.title ?? params.toolCall?.toolCallId}`);
          this.reveal();
          this.post(true);
        }),
      onUpdate: (params) => {
        if (params.sessionId !== this.state.sessionId) return;
        applyUpdate(this.state, params.update);
        this.post();
      },
      log: (level, message) => log[level](message),
      cwd: () => this.cwd(),
    };
  }

  private ensureClient(): Promise<AcpClient> {
    if (this.client && !this.stale) return Promise.resolve(this.client);
    this.starting ??= this.start().finally(() => (this.starting = null));
    return this.starting;
  }

  private async start(): Promise<AcpClient> {
    if (this.client) await this.shutdown();
    this.stale = false;
    this.setAgentState("starting");
    try {
      const settings = await this.settings();
      const command = vscode.workspace.getConfiguration("corvid").get<string>("agent.command")?.trim();
      if (command) {
        const args = vscode.workspace.getConfiguration("corvid").get<string[]>("agent.args") ?? [];
        const t = stdioTransport(command, args, settings, this.cwd(), (line) => log.info(`[agent] ${line}`));
        t.child.on("exit", (code, signal) => {
          log.warn(`agent exited (${code ?? signal})`);
          if (this.transport === t) {
            this.client = null;
            this.transport = null;
            this.setAgentState("stopped");
          }
        });
        t.child.on("error", (e) => log.error(`agent failed to start: ${e.message}`));
        this.transport = t;
      } else {
        this.transport = addonTransport(settings, (line) => log.info(`[core] ${line}`));
      }
      log.info(`starting agent: ${this.transport.describe}`);
      const client = new AcpClient(this.transport.stream, this.host());
      // A command's card follows its output live (posts are batched, at most one per 30 ms).
      client.terminals.onChange = () => this.post();
      const init = await withTimeout(Promise.race([client.initialize(), this.transport.failed]), 30000, "initialize");
      this.lastAuthMethods = (init.authMethods ?? []) as { name?: string }[];
      log.info(`agent: ${init.agentInfo?.name ?? "?"} ${init.agentInfo?.version ?? ""}, protocol ${init.protocolVersion}`);
      this.caps = promptCapsOf(init);
      // Kept only once its session is open: a client whose session/new failed (no provider
      // configured, say) would answer the next prompt with "ACP connection closed" and flip
      // the status back to ready.
      const restore = this.restoreOnStart ? this.context.workspaceState.get<string>(OPEN_SESSION) : undefined;
      this.restoreOnStart = false;
      if (restore && client.sessionFeatures.load) {
        // A reloaded window: the chat it showed comes back (replayed by session/load).
        this.setAgentState("loading");
        try {
          await this.replay(client, restore);
          log.info(`restored session ${restore}`);
        } catch (e) {
          log.warn(`could not restore session ${restore}: ${errorText(e)}; starting a new one`);
          await this.openSession(client);
        }
      } else await this.openSession(client);
      this.client = client;
      this.setAgentState("ready");
      return client;
    } catch (e) {
      const t = this.transport;
      this.transport = null;
      void t?.close().catch(() => {});
      if (this.builtIn() && needsProvider(e, this.lastAuthMethods)) {
        // First run: the welcome panel instead of an error (it says what to set, in VS Code).
        log.info(`no model provider configured: ${errorText(e)}`);
        this.state = { ...initialState(), setup: { current: await this.describeProvider(), ...(this.state.setup?.test ? { test: this.state.setup.test } : {}) } };
        this.setAgentState("setup");
        this.post(true);
        if (typeof e === "object" && e !== null) reported.add(e);
        throw e;
      }
      this.setAgentState("error");
      // In the chat too, so the view says why it cannot answer (the next prompt tries again).
      this.state.items.push({ kind: "notice", text: `Corvid could not start: ${inVsCodeTerms(errorText(e), this.builtIn())}`, severity: "error", actions: fixesFor(errorText(e), this.builtIn()) });
      this.post(true);
      this.fail("starting the agent", e);
      throw e;
    }
  }

  private async openSession(client: AcpClient): Promise<void> {
    const res = await client.newSession(this.cwd());
    this.state = initialState();
    this.checkpoints.clear();
    this.state.sessionId = res.sessionId;
    this.state.config = configSelects((res as any).configOptions);
    // Not remembered until it has a prompt: the agent lists (and loads) only those.
    void this.context.workspaceState.update(OPEN_SESSION, undefined);
    log.info(`session ${res.sessionId}`);
  }

  /** The built-in core runs (not `corvid.agent.command`): its provider settings are the extension's. */
  private builtIn(): boolean {
    return !vscode.workspace.getConfiguration("corvid").get<string>("agent.command")?.trim();
  }

  /**
   * Restarts the agent now (not waiting for the next chat) unless a turn runs: the open chat
   * is loaded again if it has a prompt (session/load), else a new one opens.
   */
  async restartNow(why: string): Promise<void> {
    if (this.state.busy || !this.client) return;
    log.info(`${why}: restarting the agent now`);
    this.restoreOnStart = !!this.context.workspaceState.get<string>(OPEN_SESSION);
    this.stale = true;
    await this.ensureClient();
  }

  restartLater(why: string): void {
    log.info(`${why}: the agent restarts with the next chat`);
    this.stale = true;
  }

  async shutdown(): Promise<void> {
    for (const resolve of this.permissions.values()) resolve(null);
    this.permissions.clear();
    const [c, t] = [this.client, this.transport];
    this.client = null;
    this.transport = null;
    c?.close();
    await t?.close().catch(() => {});
  }

  /** Runs a command; a failure is shown once (with Show Logs), never swallowed. */
  async guard(what: string, action: () => Promise<void>): Promise<void> {
    try {
      await action();
    } catch (e) {
      this.fail(what, e);
    }
  }

  private fail(what: string, e: unknown): void {
    if (typeof e === "object" && e !== null) {
      if (reported.has(e)) return;
      reported.add(e);
    }
    const msg = errorText(e);
    log.error(`${what}: ${msg}`);
    void vscode.window.showErrorMessage(`Corvid: ${what} failed: ${msg}`, "Show Logs").then((b) => b && log.show());
  }

  private reveal(): void {
    if (this.view) this.view.show(true);
    else void vscode.commands.executeCommand("corvid.chat.focus");
  }

  // ---- commands -------------------------------------------------------------------------
  async newChat(): Promise<void> {
    this.restoreOnStart = false; // a new chat, not the one the window showed before
    await vscode.commands.executeCommand("corvid.chat.focus");
    if (this.state.busy) await this.stop();
    if (this.stale || !this.client) {
      await this.ensureClient();
    } else {
      await this.openSession(this.client);
      this.setAgentState("ready");
    }
    this.post(true);
    void this.view?.webview.postMessage({ type: "focus" });
  }

  /** Shows the chat and puts the cursor in its input (a keybinding). */
  async focusInput(): Promise<void> {
    await vscode.commands.executeCommand("corvid.chat.focus");
    if (this.view && this.viewReady) void this.view.webview.postMessage({ type: "focus" });
    else this.focusOnReady = true;
  }

  /** A prompt from the chat's input: its attachments are read (text of selections, small files) and sent as context blocks. */
  private async promptWithContext(text: string, attachments: Attachment[]): Promise<void> {
    if (!text.trim() && !attachments.length) return;
    const resolved = await resolveAttachments(attachments);
    const { blocks, dropped } = contextBlocks(text, resolved, this.caps);
    if (dropped.length) void vscode.window.showWarningMessage(`Corvid: this agent does not accept images; not sent: ${dropped.join(", ")}.`);
    await this.prompt(text, { blocks, chips: chipsOf(resolved.filter((a) => !(a.kind === "image" && dropped.includes(a.name)))) });
  }

  /**
   * The user's answer to a permission card. An approval with hunks rejected is answered with
   * the agent's reject option (nothing is written; the turn goes on) and queues the follow-up
   * that names the hunks, sent when the turn ends.
   */
  private answerPermission(requestId: number, optionId: string, sentRejections: unknown): void {
    const resolve = this.permissions.get(requestId);
    const item = this.state.items.find((i) => i.kind === "permission" && i.requestId === requestId) as Extract<ViewState["items"][number], { kind: "permission" }> | undefined;
    if (!resolve || !item) return;
    const diffs = item.diffs ?? [];
    const answer = reviewAnswer(item.options, optionId, validRejections(diffs, sentRejections));
    const text = answer.rejected.length ? followUpText(diffs, answer.rejected, (p) => vscode.workspace.asRelativePath(p)) : null;
    if (text && this.state.sessionId) {
      this.followUps.push({ sessionId: this.state.sessionId, text });
      log.info(`permission ${requestId}: approved with hunks rejected (${JSON.stringify(answer.rejected)}); answered ${answer.optionId}, follow-up queued`);
    }
    this.permissions.delete(requestId);
    resolvePermission(this.state, requestId, answer.optionId, answer.rejected);
    resolve(answer.optionId);
    this.post();
  }

  /**
   * The follow-ups queued during the turn that just ended in `sessionId`, as one prompt. Only
   * after a normal end: a stopped or failed turn drops them, with a note saying so.
   */
  private takeFollowUps(sessionId: string, stopReason: string): string | null {
    const mine = this.followUps.filter((f) => f.sessionId === sessionId);
    this.followUps = this.followUps.filter((f) => f.sessionId !== sessionId);
    if (!mine.length || this.state.sessionId !== sessionId) return null;
    if (stopReason !== "end_turn") {
      this.state.items.push({ kind: "notice", text: "The follow-up about the rejected hunks was not sent: the turn did not end normally.", severity: "warning" });
      log.info(`follow-up dropped: the turn ended with ${stopReason}`);
      return null;
    }
    return mine.map((f) => f.text).join("\n\n");
  }

  async prompt(text: string, context?: PromptContext, followUp = false): Promise<void> {
    if (!text.trim() && !context?.chips.length) return;
    const client = await this.ensureClient();
    if (this.state.busy) {
      void vscode.window.showInformationMessage("Corvid is still working on the last prompt; press Stop first.");
      return;
    }
    const sessionId = this.state.sessionId!;
    const ctx = context ?? { blocks: promptBlocks(text), chips: [] };
    this.lastSent = { sessionId, text, context: ctx };
    void this.context.workspaceState.update(OPEN_SESSION, sessionId);
    this.state.items.push({ kind: "user", text, ...(ctx.chips.length ? { attachments: ctx.chips } : {}), ...(followUp ? { followUp: true } : {}) });
    this.state.busy = true;
    this.state.lastStop = null;
    this.setAgentState("working");
    this.post(true);
    const turn = this.nextTurn++;
    this.checkpoints.begin(turn);
    let stopReason = "error";
    try {
      const res = await client.prompt(sessionId, ctx.blocks);
      stopReason = res.stopReason;
      // Not into a session opened meanwhile (New Chat, a loaded past chat).
      if (this.state.sessionId === sessionId) endTurn(this.state, res.stopReason);
      log.info(`turn ended: ${res.stopReason}`);
    } catch (e) {
      if (this.state.sessionId === sessionId) {
        this.state.items.push({ kind: "notice", text: inVsCodeTerms(errorText(e), this.builtIn()), severity: "error", actions: fixesFor(errorText(e), this.builtIn()) });
        endTurn(this.state, "error");
      }
      log.error(`prompt failed: ${errorText(e)}`);
    } finally {
      this.checkpoints.end();
      if (this.state.sessionId === sessionId) {
        addCheckpoint(this.state, turn, this.checkpoints.files(turn));
        this.state.busy = false;
        this.setAgentState(this.client ? "ready" : "stopped");
      }
      this.post(true);
    }
    const next = this.takeFollowUps(sessionId, stopReason);
    if (next) {
      log.info("sending the follow-up about the rejected hunks");
      await this.prompt(next, undefined, true);
    }
  }

  /** Retry: the last prompt again, as a new turn (with its context if this host sent it). */
  async retry(): Promise<void> {
    if (this.state.busy) return;
    const sent = this.lastSent?.sessionId === this.state.sessionId ? this.lastSent : null;
    const text = sent?.text ?? lastPrompt(this.state);
    if (text === null) return;
    log.info("retrying the last prompt");
    await this.prompt(text, sent?.context);
  }

  /** A VS Code action offered with an error: only the known ones run. */
  private async runFix(m: any): Promise<void> {
    const fix = knownFix(m ?? {});
    if (!fix) return;
    if (fix.kind === "command") await vscode.commands.executeCommand(fix.command);
    else await vscode.commands.executeCommand("workbench.action.openSettings", fix.setting);
  }

  async stop(): Promise<void> {
    if (!this.client || !this.state.sessionId) return;
    log.info("cancelling the turn");
    for (const id of pendingPermissions(this.state)) {
      resolvePermission(this.state, id, "cancelled");
      this.permissions.get(id)?.(null);
      this.permissions.delete(id);
    }
    await this.client.cancel(this.state.sessionId);
    this.post();
  }

  /** "Undo this turn": every file the agent wrote in the turn goes back to its state before it. */
  private async undoTurn(turn: number): Promise<void> {
    const item = this.state.items.find((i) => i.kind === "checkpoint" && i.turn === turn) as Extract<ViewState["items"][number], { kind: "checkpoint" }> | undefined;
    if (!item || item.undone || this.undoing.has(turn)) return;
    if (this.state.busy) {
      void vscode.window.showInformationMessage("Corvid: stop the running turn before undoing one.");
      return;
    }
    this.undoing.add(turn);
    try {
      const r = await this.checkpoints.undo(turn, { write: writeThroughEditor, remove: deleteThroughEditor });
      item.undone = { restored: r.restored.length, removed: r.removed.length };
      log.info(`undid turn ${turn}: restored ${r.restored.join(", ") || "nothing"}; removed ${r.removed.join(", ") || "nothing"}`);
    } finally {
      this.undoing.delete(turn);
      this.post(true);
    }
  }

  private async setConfig(configId: string, value: string): Promise<void> {
    if (!this.client || !this.state.sessionId) return;
    const res = await this.client.setConfigOption(this.state.sessionId, configId, value);
    this.state.config = configSelects(res.configOptions);
    log.info(`set ${configId} = ${value}`);
    this.post();
  }

  async askAboutEditor(selectionOnly: boolean): Promise<void> {
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
    await this.prompt(prompt, { blocks: promptBlocks(prompt, { uri: doc.uri.toString(), text, mimeType: mimeOf(doc.languageId) }), chips: [{ kind: range ? "selection" : "file", name }] });
  }

  /** Add Selection to Chat: the selection becomes a chip of the message being written; nothing is sent. */
  async addSelectionToChat(): Promise<void> {
    const attachment = selectionAttachment(vscode.window.activeTextEditor);
    if (!attachment) {
      void vscode.window.showWarningMessage("Corvid: select some text in a file first.");
      return;
    }
    log.info(`selection added to the chat input: ${attachment.name}`);
    await vscode.commands.executeCommand("corvid.chat.focus");
    if (this.view && this.viewReady) {
      void this.view.webview.postMessage({ type: "attach", attachment });
      void this.view.webview.postMessage({ type: "focus" });
    } else {
      this.pendingAttachments.push(attachment);
      this.focusOnReady = true;
    }
  }

  /** The active editor or its selection changed: the chips follow (debounced: selections change per key). */
  editorChanged(): void {
    if (this.editorTimer) clearTimeout(this.editorTimer);
    this.editorTimer = setTimeout(() => {
      this.editorTimer = null;
      this.postEditor();
    }, 150);
  }

  private postEditor(): void {
    // The chat view itself taking the focus leaves activeTextEditor as it was; a panel (Output)
    // has no text editor: keep the last file rather than blinking the chip away.
    const editor = vscode.window.activeTextEditor;
    if (!editor && vscode.window.visibleTextEditors.length) return;
    if (this.view && this.viewReady) void this.view.webview.postMessage({ type: "editor", ...editorChips(editor) });
  }

  /** "Open in Terminal" on a command card: its output (live or stored) in a VS Code terminal. */
  private openTerminal(toolCallId: string, index: number): void {
    const tool = this.state.items.find((i) => i.kind === "tool" && i.id === toolCallId) as Extract<ViewState["items"][number], { kind: "tool" }> | undefined;
    const block = tool?.content.filter((c) => c.type === "terminal")[index];
    if (!tool || !block || block.type !== "terminal") return;
    const terms = this.client?.terminals;
    const live = terms?.peek(block.terminalId);
    const name = `Corvid: ${tool.title}`.slice(0, 60);
    if (live && terms) {
      this.commandTerminals.show(block.terminalId, name, {
        command: live.command,
        read: () => {
          const now = terms.peek(block.terminalId);
          return { output: now?.output ?? "", exit: now?.exit ?? null };
        },
        watch: (fn) => terms.watch(block.terminalId, fn),
      });
    } else if (block.stored !== undefined) {
      const stored = block.stored;
      this.commandTerminals.show(block.terminalId, name, { command: tool.title, read: () => ({ output: stored, exit: block.storedExit ?? null }) });
    } else {
      void vscode.window.showInformationMessage("Corvid: no output was kept for this command.");
      return;
    }
    log.info(`opened the terminal of ${toolCallId} (${block.terminalId})`);
  }

  private async describeProvider(): Promise<string> {
    const c = vscode.workspace.getConfiguration("corvid");
    return describeSettings({ provider: c.get<string>("provider"), baseUrl: c.get<string>("baseUrl"), model: c.get<string>("model") }, !!(await this.context.secrets.get(SECRET_KEY)));
  }

  /** A provider choice of the welcome panel: asks what it needs, writes the user settings. */
  private async setupProvider(choice: ProviderChoice): Promise<void> {
    const preset = PRESETS[choice];
    const c = vscode.workspace.getConfiguration("corvid");
    let baseUrl: string | undefined;
    if (preset.baseUrl === null) {
      baseUrl = await vscode.window.showInputBox({
        title: `Corvid: ${preset.label}`,
        prompt: "The endpoint's base URL (Chat Completions under it), e.g. https://api.openai.com/v1",
        value: c.get<string>("baseUrl") || "",
        ignoreFocusOut: true,
        validateInput: (v) => checkBaseUrl(v),
      });
      if (baseUrl === undefined) return;
    }
    let model = "";
    if (preset.modelHint) {
      const typed = await vscode.window.showInputBox({
        title: `Corvid: ${preset.label}: model`,
        prompt: `Model id, e.g. ${preset.modelHint} (empty: the endpoint's first model)`,
        value: c.get<string>("model") || "",
        ignoreFocusOut: true,
      });
      if (typed === undefined) return;
      model = typed;
    }
    const values = settingsFor(choice, { baseUrl, model });
    for (const [key, value] of Object.entries(values)) await c.update(key, value || undefined, vscode.ConfigurationTarget.Global);
    log.info(`provider set up: ${preset.label} (${JSON.stringify(values)})`);
    this.state.setup = { current: await this.describeProvider() };
    this.post(true);
    if (preset.needsKey && !(await this.context.secrets.get(SECRET_KEY)))
      void vscode.window.showInformationMessage(`Corvid: ${preset.label} needs an API key: click Set API Key.`);
  }

  /** Test connection: the agent restarted with the settings, and a session opened (or why not). */
  private async testConnection(): Promise<void> {
    const setup = this.state.setup ?? { current: await this.describeProvider() };
    this.state.setup = { ...setup, testing: true, test: undefined };
    this.post(true);
    this.stale = true;
    try {
      await this.ensureClient();
      const model = this.state.config.find((o) => o.category === "model" || o.id === "model")?.currentValue;
      const text = `Connected: Corvid opened a session${model ? ` with model ${model}` : ""}. Ask away below.`;
      this.state.items.push({ kind: "notice", text, severity: "info" });
      this.state.setup = null;
      log.info(text);
    } catch (e) {
      const reason = needsProvider(e, this.lastAuthMethods)
        ? "No model provider is set yet: pick one above."
        : inVsCodeTerms(errorText(e).replace(/^Corvid could not start: /, ""), this.builtIn());
      // The failed start put the welcome back (no provider) or an error notice; the test's
      // answer goes in the welcome either way.
      this.state.items = this.state.items.filter((i) => i.kind !== "notice");
      this.state.setup = { current: await this.describeProvider(), test: { ok: false, text: `The connection failed: ${reason}` } };
      this.setAgentState("setup");
      log.warn(`test connection failed: ${errorText(e)}`);
    }
    this.post(true);
  }

  async setApiKey(): Promise<void> {
    const key = await vscode.window.showInputBox({ title: "Corvid: API key", prompt: "Stored in VS Code's secret storage (empty removes it)", password: true, ignoreFocusOut: true });
    if (key === undefined) return;
    if (key) await this.context.secrets.store(SECRET_KEY, key);
    else await this.context.secrets.delete(SECRET_KEY);
    this.restartLater("API key changed");
    if (this.state.setup) {
      this.state.setup = { current: await this.describeProvider() };
      this.post(true);
    }
    void vscode.window.showInformationMessage(key ? "Corvid: API key saved." : "Corvid: API key removed.");
  }

  /** Shows this folder's past sessions as a list in the chat view; picking one loads it. */
  async history(): Promise<void> {
    this.reveal();
    const client = await this.ensureClient();
    const features = client.sessionFeatures;
    if (!features.load) {
      void vscode.window.showInformationMessage("This agent cannot load past sessions.");
      return;
    }
    const { sessions } = await client.listSessions(this.cwd());
    const message = {
      type: "sessions",
      current: this.state.sessionId,
      canRename: features.rename,
      canDelete: features.delete,
      sessions: sessions.map((s) => ({ sessionId: s.sessionId, title: s.title || s.sessionId, updatedAt: s.updatedAt ?? null })),
    };
    if (this.view && this.viewReady) void this.view.webview.postMessage(message);
    else this.pendingHistory = message;
  }

  /** session/load: the agent replays the conversation as updates, drawn like a live turn. */
  async loadSession(sessionId: string): Promise<void> {
    this.restoreOnStart = false;
    const client = await this.ensureClient();
    if (this.state.busy) await this.stop();
    this.setAgentState("loading");
    try {
      await this.replay(client, sessionId);
    } catch (e) {
      // Not loaded: carry on in a fresh session rather than one the agent does not know.
      await this.openSession(client);
      this.setAgentState("ready");
      throw e;
    }
    log.info(`loaded session ${sessionId}`);
    this.setAgentState("ready");
    this.post(true);
  }

  /** Shows `sessionId` from scratch: the agent's replay (`session/load`) draws its transcript. */
  private async replay(client: AcpClient, sessionId: string): Promise<void> {
    this.state = initialState();
    this.checkpoints.clear();
    this.state.sessionId = sessionId;
    this.state.agentState = "loading";
    this.post(true);
    const res = await client.loadSession(sessionId, this.cwd());
    this.state.config = configSelects((res as any).configOptions);
    void this.context.workspaceState.update(OPEN_SESSION, sessionId);
  }

  /** Rename in the history list: `session/set_title`, then the list again. */
  private async renameSession(sessionId: string, current: string): Promise<void> {
    const client = await this.ensureClient();
    const title = await vscode.window.showInputBox({ title: "Corvid: rename past chat", value: current, validateInput: (v) => (v.trim() ? null : "A title cannot be empty.") });
    if (title === undefined || !title.trim()) return;
    await client.setSessionTitle(sessionId, title.trim());
    log.info(`renamed session ${sessionId}`);
    if (sessionId === this.state.sessionId) {
      this.state.title = title.trim();
      this.post();
    }
    await this.history();
  }

  /** Delete in the history list: asks first, then `session/delete`; the open chat deleted starts a new one. */
  private async deleteSession(sessionId: string, title: string): Promise<void> {
    const client = await this.ensureClient();
    const ok = await vscode.window.showWarningMessage(`Delete the past chat "${title || sessionId}"?`, { modal: true, detail: "Its conversation is removed from Corvid's store." }, "Delete");
    if (ok !== "Delete") return;
    if (sessionId === this.state.sessionId && this.state.busy) await this.stop();
    await client.deleteSession(sessionId);
    log.info(`deleted session ${sessionId}`);
    if (sessionId === this.state.sessionId) {
      await this.openSession(client);
      this.setAgentState("ready");
      this.post(true);
    }
    await this.history();
  }

  private async openDiff(toolCallId: string, index: number): Promise<void> {
    const diff = findDiff(this.state, toolCallId, index);
    if (!diff) return;
    const left = this.oldTexts.add(diff.path, diff.oldText ?? "");
    const right = vscode.Uri.file(diff.path);
    const name = diff.path.split("/").pop();
    await vscode.commands.executeCommand("vscode.diff", left, right, `${name} (before ↔ Corvid's edit)`);
  }

  /** A change not yet approved: both sides are virtual documents (the file is not written yet). */
  private async openProposedDiff(requestId: number, index: number): Promise<void> {
    const diff = findProposedDiff(this.state, requestId, index);
    if (!diff) return;
    const left = this.oldTexts.add(diff.path, diff.oldText ?? "");
    const right = this.oldTexts.add(diff.path, diff.newText);
    const name = diff.path.split("/").pop();
    await vscode.commands.executeCommand("vscode.diff", left, right, `${name} (now ↔ Corvid's proposal)`, { preview: true, preserveFocus: true });
  }
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
 * "Insert" on a code block: the code replaces the selections of the editor the user was last
 * in (the chat view's focus does not change VS Code's active editor), or of the first visible
 * one, which then gets the focus.
 */
async function insertAtCursor(text: string): Promise<void> {
  const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
  if (!editor) {
    void vscode.window.showInformationMessage("Corvid: open a file to insert the code into.");
    return;
  }
  if (!(await editor.edit((b) => editor.selections.forEach((s) => b.replace(s, text))))) throw new Error(`could not insert into ${editor.document.uri.fsPath}`);
  await vscode.window.showTextDocument(editor.document, { viewColumn: editor.viewColumn, preserveFocus: false });
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

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${what} timed out after ${ms / 1000} s`)), ms);
    p.then(
      (v) => (clearTimeout(t), resolve(v)),
      (e) => (clearTimeout(t), reject(e)),
    );
  });
}

// The chat's session: the ACP client (started, restarted, shut down), the open session (new,
// loaded, replayed, renamed, deleted), prompts and their turns (cancel, retry, the follow-ups
// a hunk review queues), permission questions, config options, and the view state the webview
// draws. It speaks ACP through `AcpClient`; the editor's side of the protocol is `EditorHost`,
// the webview is reached through `ChatView` (the bridge).
import * as vscode from "vscode";
import * as os from "node:os";
import { randomUUID } from "node:crypto";
import { AcpClient, promptBlocks, type ClientHost, type PermissionChoice } from "./acpClient";
import { addonTransport, stdioTransport, type Transport } from "./transport";
import { chipsOf, contextBlocks, promptCapsOf, type Attachment, type Chip, type PromptCaps } from "./context";
import { resolveAttachments } from "./editorContext";
import type { ContentBlock } from "@agentclientprotocol/sdk";
import { fixesFor, inVsCodeTerms } from "./fixes";
import { followUpText, partialMeta, reviewAnswer, validRejections } from "./hunkReview";
import { needsProvider, type ProviderChoice } from "./providers";
import { agentSettings, askApiKey, askProvider, builtIn, describeProvider, hasApiKey, probeTarget } from "./agentSettings";
import { connectionText, probeProvider } from "./providerProbe";
import { rewindSummary, rewoundFiles } from "./rewind";
import { consentedMcpServers } from "./mcpConsent";
import type { EditorHost } from "./editorHost";
import { errorText, fail, log, markReported } from "./log";
import { addCheckpoint, addPermission, applyUpdate, configSelects, endTurn, findDiff, findProposedDiff, initialState, lastPrompt, modelPicker, pendingPermissions, resolvePermission, withTerminalOutput, type Item, type ViewState } from "./viewModel";
import type { ToWebview } from "./webviewMessages";

/** Workspace state: the session the chat shows, loaded again when the window reloads. */
const OPEN_SESSION = "corvid.openSession";

/** What a prompt sends besides its text: the content blocks, and the chips its message shows. */
export interface PromptContext {
  blocks: ContentBlock[];
  chips: Chip[];
}

/** What the session needs of the webview (the bridge). */
export interface ChatView {
  postState(now?: boolean): void;
  post(m: ToWebview): void;
  postHistory(m: ToWebview): void;
  reveal(): void;
}

export class SessionController {
  private client: AcpClient | null = null;
  private transport: Transport | null = null;
  private starting: Promise<AcpClient> | null = null;
  private state: ViewState = initialState();
  private permissions = new Map<number, (choice: PermissionChoice | null) => void>();
  private nextPermission = 1;
  private nextTurn = 1;
  /** Turns being undone now (a second click waits for nothing and does nothing). */
  private undoing = new Set<number>();
  private status: vscode.StatusBarItem;
  private stale = false;
  /** The first start of this extension host loads the session the window last showed. */
  private restoreOnStart = true;
  /** The last prompt sent, with its context (Retry sends it again). */
  private lastSent: { sessionId: string; text: string; context: PromptContext } | null = null;
  /** What the agent accepts in a prompt, from its `initialize` answer. */
  private caps: PromptCaps = { image: false, embeddedContext: false };
  /**
   * Prompts to send for the user when the running turn ends: the rejected hunks of an edit
   * approved in part (`hunkReview.ts`). Never sent into the running turn.
   */
  private followUps: { sessionId: string; text: string }[] = [];
  /** The auth methods of the last `initialize` (they say whether a provider is missing). */
  private lastAuthMethods: { name?: string }[] = [];
  /** A prompt sent while the welcome showed: kept (the welcome says so), sent once connected. */
  private heldPrompt: { text: string; context?: PromptContext } | null = null;
  /** New Chat's session/new while it runs (prompts wait for it). */
  private opening: Promise<void> | null = null;

  constructor(
    private context: vscode.ExtensionContext,
    private editor: EditorHost,
    private view: ChatView,
  ) {
    this.status = vscode.window.createStatusBarItem("corvid.status", vscode.StatusBarAlignment.Right, 100);
    this.status.name = "Corvid";
    this.status.command = "corvid.chat.focus";
    context.subscriptions.push(this.status);
    this.setAgentState("idle");
    this.status.show();
  }

  /** The state to draw: command cards filled from the live terminals, the prompt capabilities. */
  snapshot(): ViewState {
    if (this.client) withTerminalOutput(this.state, (id) => this.client!.terminals.peek(id));
    this.state.promptCaps = this.caps;
    if (this.state.setup) this.state.setup.held = this.heldPrompt?.text;
    this.state.changedFiles = this.editor.review.list();
    this.state.canRewind = this.client?.canRewind ?? false;
    return this.state;
  }

  /** The files under review changed: the chat's list follows. */
  reviewChanged(): void {
    this.post();
  }

  private post(now = false): void {
    this.view.postState(now);
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

  /** The client side of ACP: files through the editor host, questions and updates into the view state. */
  private host(): ClientHost {
    return {
      readTextFile: (path) => this.editor.readTextFile(path),
      writeTextFile: (path, content) => this.editor.writeTextFile(path, content),
      beforeCommand: () => this.editor.beforeCommand(),
      requestPermission: (params) =>
        new Promise((resolve) => {
          const id = this.nextPermission++;
          this.permissions.set(id, resolve);
          addPermission(this.state, id, params);
          log.info(`permission requested: ${params.toolCall?.title ?? params.toolCall?.toolCallId}`);
          const diff = (this.state.items.at(-1) as Extract<Item, { kind: "permission" }> | undefined)?.diffs?.[0];
          if (diff && vscode.workspace.getConfiguration("corvid").get<boolean>("review.openProposedDiff", true))
            void this.editor.showProposal(id, diff).catch((e) => log.warn(`could not open the proposed change: ${errorText(e)}`));
          this.view.reveal();
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

  ensureClient(): Promise<AcpClient> {
    if (this.client && !this.stale) return Promise.resolve(this.client);
    this.starting ??= this.start().finally(() => (this.starting = null));
    return this.starting;
  }

  private async start(): Promise<AcpClient> {
    if (this.client) await this.shutdown();
    this.stale = false;
    this.setAgentState("starting");
    try {
      const settings = await agentSettings(this.context);
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
      // Each command in a VS Code terminal of its own, where the user can answer it.
      client.terminals.onCreate = (id) => this.editor.commandStarted(id, client.terminals);
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
      if (builtIn() && needsProvider(e, this.lastAuthMethods)) {
        // First run: the welcome panel instead of an error (it says what to set, in VS Code).
        log.info(`no model provider configured: ${errorText(e)}`);
        this.state = { ...initialState(), setup: { current: await describeProvider(this.context), ...(this.state.setup?.test ? { test: this.state.setup.test } : {}) } };
        this.setAgentState("setup");
        this.post(true);
        markReported(e);
        throw e;
      }
      this.setAgentState("error");
      // In the chat too, so the view says why it cannot answer (the next prompt tries again).
      this.state.items.push({ kind: "notice", text: `Corvid could not start: ${inVsCodeTerms(errorText(e), builtIn())}`, severity: "error", actions: fixesFor(errorText(e), builtIn()) });
      this.post(true);
      fail("starting the agent", e);
      throw e;
    }
  }

  private async openSession(client: AcpClient): Promise<void> {
    const res = await client.newSession(this.cwd(), await consentedMcpServers(this.context, client.mcpTransports));
    this.state = initialState();
    this.editor.checkpoints.clear();
    this.state.sessionId = res.sessionId;
    this.state.config = configSelects((res as any).configOptions);
    // Not remembered until it has a prompt: the agent lists (and loads) only those.
    void this.context.workspaceState.update(OPEN_SESSION, undefined);
    log.info(`session ${res.sessionId}`);
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

  // ---- sessions -------------------------------------------------------------------------
  async newChat(): Promise<void> {
    this.restoreOnStart = false; // a new chat, not the one the window showed before
    await vscode.commands.executeCommand("corvid.chat.focus");
    if (this.state.busy) await this.stop();
    if (this.stale || !this.client) {
      await this.ensureClient();
    } else {
      this.setAgentState("starting");
      // A prompt sent meanwhile (after an MCP consent question, while the servers start) waits
      // for the new session rather than going to the old one.
      const opening = this.openSession(this.client);
      this.opening = opening.catch(() => {});
      try {
        await opening;
      } catch (e) {
        this.setAgentState("error");
        throw e;
      } finally {
        this.opening = null;
      }
      this.setAgentState("ready");
    }
    this.post(true);
    this.view.post({ type: "focus" });
  }

  /** Shows this folder's past sessions as a list in the chat view; picking one loads it. */
  async history(): Promise<void> {
    this.view.reveal();
    const client = await this.ensureClient();
    const features = client.sessionFeatures;
    if (!features.load) {
      void vscode.window.showInformationMessage("This agent cannot load past sessions.");
      return;
    }
    const { sessions } = await client.listSessions(this.cwd());
    this.view.postHistory({
      type: "sessions",
      current: this.state.sessionId,
      canRename: features.rename,
      canDelete: features.delete,
      sessions: sessions.map((s) => ({ sessionId: s.sessionId, title: s.title || s.sessionId, updatedAt: s.updatedAt ?? null })),
    });
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
    this.editor.checkpoints.clear();
    this.state.sessionId = sessionId;
    this.state.agentState = "loading";
    this.post(true);
    const res = await client.loadSession(sessionId, this.cwd(), await consentedMcpServers(this.context, client.mcpTransports));
    this.state.config = configSelects((res as any).configOptions);
    void this.context.workspaceState.update(OPEN_SESSION, sessionId);
  }

  /** Rename in the history list: `session/set_title`, then the list again. */
  async renameSession(sessionId: string, current: string): Promise<void> {
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
  async deleteSession(sessionId: string, title: string): Promise<void> {
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

  // ---- turns ----------------------------------------------------------------------------
  /** A prompt from the chat's input: its attachments are read (text of selections, small files) and sent as context blocks. */
  async promptWithContext(text: string, attachments: Attachment[]): Promise<void> {
    if (!text.trim() && !attachments.length) return;
    const resolved = await resolveAttachments(attachments, { lastCommand: () => this.client?.terminals.latest() });
    const { blocks, dropped } = contextBlocks(text, resolved, this.caps);
    if (dropped.length) void vscode.window.showWarningMessage(`Corvid: this agent does not accept images; not sent: ${dropped.join(", ")}.`);
    await this.prompt(text, { blocks, chips: chipsOf(resolved.filter((a) => !(a.kind === "image" && dropped.includes(a.name)))) });
  }

  /**
   * The user's answer to a permission card. An approval with hunks rejected of a change the
   * agent numbered is that approval with the rejected hunks in its `_meta` (the agent writes
   * the others); otherwise it is answered with the agent's reject option (nothing is written;
   * the turn goes on) and queues the follow-up that names the hunks, sent when the turn ends.
   */
  answerPermission(requestId: number, optionId: string, sentRejections: unknown): void {
    const resolve = this.permissions.get(requestId);
    const item = this.state.items.find((i) => i.kind === "permission" && i.requestId === requestId) as Extract<Item, { kind: "permission" }> | undefined;
    if (!resolve || !item) return;
    const diffs = item.diffs ?? [];
    const answer = reviewAnswer(item.options, optionId, validRejections(diffs, sentRejections), diffs);
    if (answer.partial) log.info(`permission ${requestId}: allowed with hunks rejected (${JSON.stringify(answer.rejected)}); the agent writes the rest`);
    const text = answer.rejected.length && !answer.partial ? followUpText(diffs, answer.rejected, (p) => vscode.workspace.asRelativePath(p)) : null;
    if (text && this.state.sessionId) {
      this.followUps.push({ sessionId: this.state.sessionId, text });
      log.info(`permission ${requestId}: approved with hunks rejected (${JSON.stringify(answer.rejected)}); answered ${answer.optionId}, follow-up queued`);
    }
    this.permissions.delete(requestId);
    void this.editor.closeProposal(requestId);
    resolvePermission(this.state, requestId, answer.optionId, answer.rejected, answer.partial);
    resolve({ optionId: answer.optionId, ...(answer.partial ? { meta: partialMeta(answer.rejected) } : {}) });
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
    let client: AcpClient;
    try {
      client = await this.ensureClient();
    } catch (e) {
      // Typed while the welcome shows (no provider yet): kept, not lost; sent once connected.
      if (!this.state.setup || followUp) throw e;
      this.heldPrompt = { text, context };
      log.info("a prompt sent during setup is kept until Corvid is connected");
      this.post(true);
      return;
    }
    if (this.opening) await this.opening;
    if (this.state.busy) {
      void vscode.window.showInformationMessage("Corvid is still working on the last prompt; press Stop first.");
      return;
    }
    const sessionId = this.state.sessionId!;
    const ctx = context ?? { blocks: promptBlocks(text), chips: [] };
    this.lastSent = { sessionId, text, context: ctx };
    void this.context.workspaceState.update(OPEN_SESSION, sessionId);
    // Named by us where the agent rewinds to a named prompt ("Rewind to here" on the message).
    const messageId = client.canRewind ? randomUUID() : undefined;
    this.state.items.push({ kind: "user", text, ...(ctx.chips.length ? { attachments: ctx.chips } : {}), ...(followUp ? { followUp: true } : {}), ...(messageId ? { messageId } : {}) });
    this.state.busy = true;
    this.state.lastStop = null;
    this.setAgentState("working");
    this.post(true);
    const turn = this.nextTurn++;
    this.editor.checkpoints.begin(turn);
    let stopReason = "error";
    try {
      const res = await client.prompt(sessionId, ctx.blocks, messageId);
      stopReason = res.stopReason;
      // Not into a session opened meanwhile (New Chat, a loaded past chat).
      if (this.state.sessionId === sessionId) endTurn(this.state, res.stopReason);
      log.info(`turn ended: ${res.stopReason}`);
    } catch (e) {
      if (this.state.sessionId === sessionId) {
        this.state.items.push({ kind: "notice", text: inVsCodeTerms(errorText(e), builtIn()), severity: "error", actions: fixesFor(errorText(e), builtIn()) });
        endTurn(this.state, "error");
      }
      log.error(`prompt failed: ${errorText(e)}`);
    } finally {
      this.editor.checkpoints.end();
      if (this.state.sessionId === sessionId) {
        addCheckpoint(this.state, turn, this.editor.checkpoints.files(turn));
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

  async stop(): Promise<void> {
    if (!this.client || !this.state.sessionId) return;
    log.info("cancelling the turn");
    for (const id of pendingPermissions(this.state)) {
      resolvePermission(this.state, id, "cancelled");
      this.permissions.get(id)?.(null);
      this.permissions.delete(id);
      void this.editor.closeProposal(id);
    }
    await this.client.cancel(this.state.sessionId);
    this.post();
  }

  /** "Undo this turn": every file the agent wrote in the turn goes back to its state before it. */
  async undoTurn(turn: number): Promise<void> {
    const item = this.state.items.find((i) => i.kind === "checkpoint" && i.turn === turn) as Extract<Item, { kind: "checkpoint" }> | undefined;
    if (!item || item.undone || this.undoing.has(turn)) return;
    if (this.state.busy) {
      void vscode.window.showInformationMessage("Corvid: stop the running turn before undoing one.");
      return;
    }
    this.undoing.add(turn);
    try {
      const r = await this.editor.undoTurn(turn);
      item.undone = { restored: r.restored.length, removed: r.removed.length, ...(r.conflicts.length ? { conflicts: r.conflicts.length } : {}) };
      log.info(`undid turn ${turn}: restored ${r.restored.join(", ") || "nothing"}; removed ${r.removed.join(", ") || "nothing"}; left (changed since) ${r.conflicts.join(", ") || "nothing"}`);
    } finally {
      this.undoing.delete(turn);
      this.post(true);
    }
  }

  /**
   * "Rewind to here" on a user message: the agent forks the session before that prompt (the
   * original stays in the history), the files the agent changed since go back through the
   * editor with a three-way check (`rewind.ts`; a file changed since is a conflict, left as it
   * is), the chat continues in the fork from what came before, and the prompt's text waits in
   * the input to be edited and sent again.
   */
  async rewind(messageId: string): Promise<void> {
    const client = this.client;
    const at = this.state.items.findIndex((i) => i.kind === "user" && i.messageId === messageId);
    if (!client?.canRewind || !this.state.sessionId || at < 0) return;
    if (this.state.busy) {
      void vscode.window.showInformationMessage("Corvid: stop the running turn before rewinding.");
      return;
    }
    const source = this.state.sessionId;
    const text = (this.state.items[at] as Extract<Item, { kind: "user" }>).text;
    let res: any;
    try {
      res = await client.forkBefore(source, this.cwd(), messageId, await consentedMcpServers(this.context, client.mcpTransports));
    } catch (e) {
      this.state.items.push({ kind: "notice", text: `Could not rewind: ${errorText(e)}`, severity: "error" });
      this.post(true);
      return;
    }
    const outcome = await this.editor.rewindFiles(rewoundFiles(res._meta) ?? []);
    log.info(`rewound ${source} to before ${messageId} as ${res.sessionId}: ${JSON.stringify(outcome)}`);
    const kept = this.state.items.slice(0, at);
    const summary = rewindSummary(outcome, (p) => vscode.workspace.asRelativePath(p));
    // The fork's own announcements (its title, the slash commands) may come before this switch
    // and be dropped as another session's: the source's stand in, as the same agent's.
    const { agentState, title, commands } = this.state;
    this.state = { ...initialState(), sessionId: res.sessionId, agentState, title: title && `${title.replace(/ \(rewound\)$/, "")} (rewound)`, commands, items: kept };
    this.state.config = configSelects(res.configOptions);
    this.state.items.push({ kind: "notice", text: `${summary} The conversation before rewinding stays in Past Chats.`, severity: outcome.conflicts.length ? "warning" : "info" });
    this.lastSent = null;
    void this.context.workspaceState.update(OPEN_SESSION, res.sessionId);
    this.post(true);
    this.view.post({ type: "draft", text });
  }

  async setConfig(configId: string, value: string): Promise<void> {
    if (!this.client || !this.state.sessionId) return;
    const res = await this.client.setConfigOption(this.state.sessionId, configId, value);
    this.state.config = configSelects(res.configOptions);
    log.info(`set ${configId} = ${value}`);
    this.post();
  }

  /**
   * corvid.model changed: the open chat's model picker follows it (a loaded chat keeps its own
   * model otherwise). The core restarts first when the model is not among its choices yet.
   */
  async followModelSetting(): Promise<void> {
    const model = vscode.workspace.getConfiguration("corvid").get<string>("model")?.trim();
    if (!model || this.state.busy || !this.client) return;
    const picker = () => modelPicker(this.state);
    if (!picker()?.options.some((o) => o.value === model)) await this.restartNow("corvid.model changed");
    const p = picker();
    if (p && p.currentValue !== model && p.options.some((o) => o.value === model)) await this.setConfig(p.id, model);
  }

  // ---- what the view shows, opened in the editor ------------------------------------------
  async openDiff(toolCallId: string, index: number): Promise<void> {
    const diff = findDiff(this.state, toolCallId, index);
    if (diff) await this.editor.openDiff(diff);
  }

  async openProposedDiff(requestId: number, index: number): Promise<void> {
    const diff = findProposedDiff(this.state, requestId, index);
    if (diff) await this.editor.showProposal(requestId, diff);
  }

  /** "Open in Terminal" on a command card: its output (live or stored) in a VS Code terminal. */
  openTerminal(toolCallId: string, index: number): void {
    const tool = this.state.items.find((i) => i.kind === "tool" && i.id === toolCallId) as Extract<Item, { kind: "tool" }> | undefined;
    if (tool) this.editor.openTerminal(tool, index, this.client?.terminals);
  }

  // ---- the first-run welcome --------------------------------------------------------------
  /** A provider choice of the welcome panel: asks what it needs, writes the user settings. */
  async setupProvider(choice: ProviderChoice): Promise<void> {
    const preset = await askProvider(this.context, choice);
    if (!preset) return;
    this.state.setup = { current: await describeProvider(this.context) };
    this.post(true);
    if (preset.needsKey && !(await hasApiKey(this.context))) void vscode.window.showInformationMessage(`Corvid: ${preset.label} needs an API key: click Set API Key.`);
  }

  /**
   * Test connection: the provider VS Code's settings name is called (its model list, with the
   * key saved for it), then the agent restarted with the settings and a session opened; the
   * session's model must be one the provider lists. An external agent, or settings that leave
   * the provider to Corvid's own configuration, get the session check only (and say so).
   */
  async testConnection(): Promise<void> {
    const setup = this.state.setup ?? { current: await describeProvider(this.context) };
    this.state.setup = { ...setup, testing: true, test: undefined };
    this.post(true);
    const failed = async (text: string) => {
      this.state.items = this.state.items.filter((i) => i.kind !== "notice");
      this.state.setup = { current: await describeProvider(this.context), test: { ok: false, text } };
      this.setAgentState("setup");
      log.warn(`test connection failed: ${text}`);
      this.post(true);
    };
    const probe = builtIn() ? await probeProvider(await probeTarget(this.context)) : undefined;
    if (probe && !probe.ok) return failed(connectionText(probe, undefined).text);
    this.stale = true;
    try {
      await this.ensureClient();
      const model = modelPicker(this.state)?.currentValue;
      const verdict = probe ? connectionText(probe, model) : { ok: true, text: `Connected: Corvid opened a session${model ? ` with model ${model}` : ""} (the provider is the one ${builtIn() ? "Corvid's own configuration" : "the agent command's environment"} names; not called from here).` };
      if (!verdict.ok) return failed(verdict.text);
      const text = `${verdict.text} Ask away below.`;
      this.state.items.push({ kind: "notice", text, severity: "info" });
      this.state.setup = null;
      log.info(text);
      const held = this.heldPrompt;
      this.heldPrompt = null;
      if (held) {
        this.post(true);
        log.info("sending the prompt kept during setup");
        // Not awaited: Test connection is done; the turn runs on its own (it may ask things).
        void this.prompt(held.text, held.context).catch((e) => fail("sending the message kept during setup", e));
        return;
      }
    } catch (e) {
      const reason = needsProvider(e, this.lastAuthMethods)
        ? "No model provider is set yet: pick one above."
        : inVsCodeTerms(errorText(e).replace(/^Corvid could not start: /, ""), builtIn());
      // The failed start put the welcome back (no provider) or an error notice; the test's
      // answer goes in the welcome either way.
      return failed(`The connection failed: ${reason}`);
    }
    this.post(true);
  }

  async setApiKey(): Promise<void> {
    const key = await askApiKey(this.context);
    if (key === undefined) return;
    this.restartLater("API key changed");
    if (this.state.setup) {
      this.state.setup = { current: await describeProvider(this.context) };
      this.post(true);
    }
    void vscode.window.showInformationMessage(key ? "Corvid: API key saved." : "Corvid: API key removed.");
  }
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

// The chat webview's host side: its page (a strict CSP, a nonce for the one script), the view
// state posted to it (batched: at most one post per 30 ms unless asked now), and the messages
// it sends, handed to one handler. Messages the page must not miss wait for its script to
// say "ready" (a message posted before that is lost). It also raises the view's badge and a
// notification for a pending permission the user cannot see (`approvalAlerts.ts`).
import * as vscode from "vscode";
import { ApprovalAlerts } from "./approvalAlerts";
import type { Attachment } from "./context";
import { pendingRequests, type ViewState } from "./viewModel";
import type { FromWebview, ToWebview } from "./webviewMessages";

export interface BridgeHandlers {
  /** The state to draw, as of now. */
  state(): ViewState;
  /** A message of the page's (all but "ready", which the bridge answers). */
  onMessage(m: FromWebview): Promise<void>;
  /** The page is ready: what the host keeps outside the state (the editor's chips) goes now. */
  onReady(): void;
  /** The view was (re)created: the agent should be starting. */
  onResolve(): void;
  /** A message's handling failed. */
  fail(what: string, e: unknown): void;
}

export class WebviewBridge implements vscode.WebviewViewProvider {
  private view?: vscode.WebviewView;
  /** The page's script has started (it posts "ready"). */
  private ready = false;
  /** A history list asked for before the page was ready; sent on "ready". */
  private pendingHistory: ToWebview | null = null;
  /** Attachments for the message being written that came before the page was ready (Add Selection to Chat). */
  private pendingAttachments: Attachment[] = [];
  /** Focus Chat Input ran before the page was ready: focus its input on "ready". */
  private focusOnReady = false;
  private stateTimer: NodeJS.Timeout | null = null;
  /** Show on a notification while the view was hidden: the card to bring into view once it is visible. */
  private showOnVisible: number | null = null;
  readonly alerts = new ApprovalAlerts({
    visible: () => this.view?.visible ?? false,
    setBadge: (badge) => {
      // VS Code's webview view pane does not clear its activity bar badge for `undefined`
      // (microsoft/vscode#331019); a count of 0 replaces it and is drawn as no badge.
      if (this.view) this.view.badge = badge ?? { value: 0, tooltip: "" };
    },
    showRequest: (id) => this.showRequest(id),
  });

  constructor(
    private extensionUri: vscode.Uri,
    private handlers: BridgeHandlers,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const media = vscode.Uri.joinPath(this.extensionUri, "media");
    const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
    view.webview.options = { enableScripts: true, localResourceRoots: [media, dist] };
    const nonce = Math.random().toString(36).slice(2) + Math.random().toString(36).slice(2);
    const css = view.webview.asWebviewUri(vscode.Uri.joinPath(media, "chat.css"));
    const js = view.webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.js"));
    view.webview.html = `<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${view.webview.cspSource} https: data:; style-src ${view.webview.cspSource}; script-src 'nonce-${nonce}';">
<link rel="stylesheet" href="${css}"></head><body>
<div id="app"></div><script nonce="${nonce}" src="${js}"></script></body></html>`;
    view.webview.onDidReceiveMessage((m: FromWebview) => this.receive(m).catch((e) => this.handlers.fail(String(m?.type ?? "webview action"), e)));
    view.onDidChangeVisibility(() => {
      this.alerts.visibilityChanged();
      this.flushShow();
    });
    this.handlers.onResolve();
  }

  private async receive(m: FromWebview): Promise<void> {
    if (m?.type === "pendingSight") {
      // Coerced: the page is not trusted.
      const ids = (v: unknown) => (Array.isArray(v) ? v.map(Number).filter(Number.isInteger) : []);
      return this.alerts.setSight(ids(m.shown), ids(m.onScreen));
    }
    if (m?.type !== "ready") return this.handlers.onMessage(m);
    this.ready = true;
    this.postState(true);
    if (this.pendingHistory) this.post(this.pendingHistory);
    this.pendingHistory = null;
    this.handlers.onReady();
    for (const attachment of this.pendingAttachments.splice(0)) this.post({ type: "attach", attachment });
    this.flushShow();
    if (this.focusOnReady) this.post({ type: "focus" });
    this.focusOnReady = false;
  }

  /** Posts the state: batched (a streaming turn updates many times a second), or `now`. */
  postState(now = false): void {
    if (!now) {
      this.stateTimer ??= setTimeout(() => this.postState(true), 30);
      return;
    }
    if (this.stateTimer) clearTimeout(this.stateTimer);
    this.stateTimer = null;
    const state = this.handlers.state();
    this.post({ type: "state", state });
    this.alerts.setPending(pendingRequests(state));
  }

  /** Posts to the page if there is one (lost if its script has not started: the state is posted again on "ready"). */
  post(m: ToWebview): void {
    void this.view?.webview.postMessage(m);
  }

  /** Posts only to a page that is ready, else drops it (the editor's chips: the next change sends them again). */
  postIfReady(m: ToWebview): void {
    if (this.view && this.ready) void this.view.webview.postMessage(m);
  }

  /** The history list: now, or on "ready" (the last one asked for). */
  postHistory(m: ToWebview): void {
    if (this.view && this.ready) void this.view.webview.postMessage(m);
    else this.pendingHistory = m;
  }

  /** Focuses the page's input: now, or on "ready". */
  focus(): void {
    if (this.view && this.ready) this.post({ type: "focus" });
    else this.focusOnReady = true;
  }

  /** An attachment for the message being written, and the focus to the input: now, or on "ready". */
  attach(attachment: Attachment): void {
    if (this.view && this.ready) {
      this.post({ type: "attach", attachment });
      this.post({ type: "focus" });
    } else {
      this.pendingAttachments.push(attachment);
      this.focusOnReady = true;
    }
  }

  /**
   * Show on a pending request's notification: the view revealed with the focus, the card
   * scrolled into it and its first answer focused (by the page, once the view is visible).
   */
  showRequest(requestId: number): void {
    this.showOnVisible = requestId;
    this.flushShow();
    if (this.view) this.view.show(false);
    else void vscode.commands.executeCommand("corvid.chat.focus");
  }

  /** The card a Show waits to bring into view, once the page is ready and visible. */
  private flushShow(): void {
    if (this.showOnVisible === null || !this.view?.visible || !this.ready) return;
    this.post({ type: "showRequest", requestId: this.showOnVisible });
    this.showOnVisible = null;
  }

  /** Shows the view (a permission asks, the history list opens). */
  reveal(): void {
    if (this.view) this.view.show(true);
    else void vscode.commands.executeCommand("corvid.chat.focus");
  }
}

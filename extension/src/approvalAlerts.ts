// A pending permission the user cannot see (the chat view hidden, or its card scrolled out of
// the transcript) raises a badge on the view and one notification whose Show brings the card
// into view with the focus on its first answer. The decision is `pendingAttention.ts`; this
// feeds it and applies what it says, a moment after the inputs last changed (so a card being
// drawn or a view being revealed does not count as unseen) and at once when a request goes.
import * as vscode from "vscode";
import { attentionText, PendingAttention, type PendingRequest } from "./pendingAttention";

/** What the alerts need of the chat view (the bridge). */
export interface AlertView {
  visible(): boolean;
  setBadge(badge: vscode.ViewBadge | undefined): void;
  /** Reveals the view, scrolls `requestId`'s card into it and focuses its first answer. */
  showRequest(requestId: number): void;
}

/** How long the inputs stay unchanged before a request counts as unseen. */
const SETTLE_MS = 800;

export class ApprovalAlerts {
  private attention = new PendingAttention();
  private pending: PendingRequest[] = [];
  private shown = new Set<number>();
  private onScreen = new Set<number>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private view: AlertView) {}

  /** The pending requests, from each state posted (only a change counts). */
  setPending(pending: PendingRequest[]): void {
    if (pending.map((p) => p.id).join() === this.pending.map((p) => p.id).join()) return;
    this.pending = pending;
    this.changed();
  }

  /** The page's report: the cards it has drawn and those on screen. */
  setSight(shown: number[], onScreen: number[]): void {
    this.shown = new Set(shown);
    this.onScreen = new Set(onScreen);
    this.changed();
  }

  /** The view was shown or hidden. */
  visibilityChanged(): void {
    this.changed();
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
  }

  private changed(): void {
    this.apply(false);
    if (this.timer) clearTimeout(this.timer);
    this.timer = this.pending.length ? setTimeout(() => this.apply(true), SETTLE_MS) : null;
  }

  private apply(settled: boolean): void {
    if (settled) this.timer = null;
    const a = this.attention.update(this.pending, { viewVisible: this.view.visible(), shown: this.shown, onScreen: this.onScreen }, settled);
    this.view.setBadge(a.badge);
    if (!a.notify) return;
    const id = a.notify.first.id;
    // The notification may outlive the request: Show then just shows the view.
    void vscode.window.showInformationMessage(attentionText(a.notify), "Show").then((b) => b === "Show" && this.view.showRequest(id));
  }
}

// Which pending permission requests the user cannot see, and what that raises: the view's badge
// (the pending count, until they are answered or cancelled) and one notification per request.
// Pure (no VS Code): the host feeds it the pending requests, whether the view is visible, and
// which cards the page reports on screen; `approvalAlerts.ts` does the rest.

export interface PendingRequest {
  id: number;
  title: string;
}

export interface Sight {
  /** The chat view is visible (VS Code's `webviewView.visible`). */
  viewVisible: boolean;
  /** Requests whose card the page has drawn and reports on. */
  shown: ReadonlySet<number>;
  /** Of those, the ones whose answer buttons are inside the transcript's viewport. */
  onScreen: ReadonlySet<number>;
}

export interface Attention {
  badge: { value: number; tooltip: string } | undefined;
  /** Requests to notify about now (each at most once, ever), or null. */
  notify: { first: PendingRequest; more: number } | null;
}

export class PendingAttention {
  /** Requests whose card has been on screen in a visible view. */
  private seen = new Set<number>();
  /** Requests the user could not see for a settled moment: they raise the badge. */
  private flagged = new Set<number>();
  private notified = new Set<number>();

  /**
   * The badge and the notification for `pending` given what is in sight. Only a `settled` call
   * (nothing changed for a moment) flags a request: a card being drawn, a view being revealed,
   * are not "cannot see it".
   */
  update(pending: PendingRequest[], sight: Sight, settled: boolean): Attention {
    const ids = new Set(pending.map((p) => p.id));
    for (const set of [this.seen, this.flagged, this.notified]) for (const id of set) if (!ids.has(id)) set.delete(id);
    for (const p of pending) if (sight.viewVisible && sight.onScreen.has(p.id)) this.seen.add(p.id);
    if (settled) for (const p of pending) if (this.unseen(p.id, sight)) this.flagged.add(p.id);
    const fresh = pending.filter((p) => this.flagged.has(p.id) && !this.notified.has(p.id));
    for (const p of fresh) this.notified.add(p.id);
    const flagged = pending.some((p) => this.flagged.has(p.id));
    const n = pending.length;
    return {
      badge: flagged ? { value: n, tooltip: `Corvid: ${n} request${n === 1 ? "" : "s"} waiting for your approval` } : undefined,
      notify: fresh.length ? { first: fresh[0], more: fresh.length - 1 } : null,
    };
  }

  /**
   * The view is hidden, or its card is off screen and has never been on it (a reader who saw the
   * card and scrolled up to read on knows it is there). A card the page has not reported on yet
   * is not known to be off screen.
   */
  private unseen(id: number, sight: Sight): boolean {
    if (!sight.viewVisible) return true;
    return sight.shown.has(id) && !sight.onScreen.has(id) && !this.seen.has(id);
  }
}

/** The notification's text. */
export function attentionText(n: { first: PendingRequest; more: number }): string {
  return `Corvid is waiting for your approval: ${n.first.title}${n.more ? ` (and ${n.more} more)` : ""}`;
}

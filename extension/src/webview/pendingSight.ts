// Which pending permission cards the reader can see: an IntersectionObserver on each card's
// answer buttons, reported to the host when that changes (the host adds whether the view is
// visible at all, and raises a badge and a notification for a card nobody can see:
// `approvalAlerts.ts`). Also Show on that notification: the card scrolled into view, its first
// answer focused.
import type { FromWebview } from "../webviewMessages";

export interface PendingSight {
  /** The transcript was drawn: cards came or went. */
  sync(): void;
  /** Brings `requestId`'s card into view and focuses its first answer. */
  show(requestId: number): void;
}

export function pendingSight(transcript: HTMLElement, post: (m: FromWebview) => void): PendingSight {
  /** The observed button rows of pending cards, by element, with their request. */
  const observed = new Map<Element, number>();
  const onScreen = new Set<Element>();
  let reported = "";

  const io = new IntersectionObserver(
    (entries) => {
      // Half of the row at least: the answers are there to click.
      for (const e of entries) if (e.isIntersecting && e.intersectionRatio >= 0.5) onScreen.add(e.target);
      else onScreen.delete(e.target);
      report();
    },
    { root: transcript, threshold: [0, 0.5, 1] },
  );

  function report(): void {
    const shown = [...observed.values()];
    const visible = [...observed].filter(([el]) => onScreen.has(el)).map(([, id]) => id);
    const key = JSON.stringify([shown, visible]);
    if (key === reported) return;
    reported = key;
    post({ type: "pendingSight", shown, onScreen: visible });
  }

  function sync(): void {
    const now = new Map<Element, number>();
    transcript.querySelectorAll<HTMLElement>(".permission:not(.answered)[data-request] .pbuttons").forEach((row) => {
      now.set(row, Number(row.closest<HTMLElement>(".permission")!.dataset.request));
    });
    // A redrawn card may have a new row element: the old one goes, the new one is observed.
    for (const el of [...observed.keys()])
      if (!now.has(el)) {
        io.unobserve(el);
        observed.delete(el);
        onScreen.delete(el);
      }
    for (const [el, id] of now)
      if (!observed.has(el)) {
        observed.set(el, id);
        io.observe(el);
      }
    report();
  }

  function show(requestId: number): void {
    const row = transcript.querySelector<HTMLElement>(`.permission:not(.answered)[data-request="${requestId}"] .pbuttons`);
    const button = row?.querySelector<HTMLButtonElement>("button.perm");
    if (!row || !button) return;
    row.scrollIntoView({ block: "nearest" });
    button.focus({ preventScroll: true });
    // The view was being revealed: the page may get the focus only now.
    if (!document.hasFocus()) window.addEventListener("focus", () => button.isConnected && button.focus({ preventScroll: true }), { once: true });
  }

  return { sync, show };
}

// Per-hunk review of a proposed edit: which changes a permission card offers hunk by hunk,
// what an approval with rejected hunks becomes, and the follow-up prompt that names them.
// Pure (no `vscode`, no DOM), shared by the host and the webview, unit-tested directly.
//
// ACP's permission answer is an option id and nothing more (Corvid's core reads only
// `optionId`), so a partial approval cannot be said in the answer itself. And the agent owns
// edits: the extension never writes the kept hunks on its own. So an approval with rejected
// hunks rejects the whole call (the agent's reject option: the turn goes on, nothing is
// written), and the rejected hunks are named in a prompt sent for the user when the turn ends.
import { diffLines, hunks, type Hunk } from "./lineDiff";

/** Unchanged lines around each hunk (the same as the card's compact diff). */
export const REVIEW_CONTEXT = 3;

/** A proposed change as the card holds it (a `DiffContent`). */
export interface Change {
  path: string;
  oldText: string | null;
  newText: string;
}

/** A rejected hunk: the change's index on the card and the hunk's index in it (both 0-based). */
export interface RejectedHunk {
  diff: number;
  hunk: number;
}

export function reviewHunks(c: Change): Hunk[] {
  return hunks(diffLines(c.oldText, c.newText), REVIEW_CONTEXT);
}

/** Reviewed hunk by hunk: a change to an existing file with two hunks or more (a new file is one piece). */
export function reviewable(c: Change): boolean {
  return c.oldText != null && reviewHunks(c).length >= 2;
}

/**
 * The card offers hunk review only if the agent offered a way to reject once: that is what
 * an approval with rejected hunks answers.
 */
export function rejectOption<T extends { optionId: string; kind: string }>(options: T[]): T | undefined {
  return options.find((o) => o.kind === "reject_once") ?? options.find((o) => o.kind.startsWith("reject"));
}

/** The rejections the webview sent, kept only where they name a real hunk of a reviewable change; sorted, once each. */
export function validRejections(changes: Change[], sent: unknown): RejectedHunk[] {
  if (!Array.isArray(sent)) return [];
  const counts = changes.map((c) => (reviewable(c) ? reviewHunks(c).length : 0));
  const keys = new Set<string>();
  for (const r of sent) {
    const diff = Number(r?.diff);
    const hunk = Number(r?.hunk);
    if (Number.isInteger(diff) && Number.isInteger(hunk) && diff >= 0 && diff < counts.length && hunk >= 0 && hunk < counts[diff]) keys.add(`${diff}:${hunk}`);
  }
  return [...keys].map((k) => k.split(":").map(Number)).sort((a, b) => a[0] - b[0] || a[1] - b[1]).map(([diff, hunk]) => ({ diff, hunk }));
}

/**
 * What the host answers for a click on `optionId` with `rejected` hunks: an allow with some
 * hunks rejected becomes the reject option (reject, not cancel: the turn goes on) and keeps
 * the rejections for the follow-up; anything else is answered as clicked, with none.
 */
export function reviewAnswer<T extends { optionId: string; kind: string }>(options: T[], optionId: string, rejected: RejectedHunk[]): { optionId: string; rejected: RejectedHunk[] } {
  const clicked = options.find((o) => o.optionId === optionId);
  const reject = rejectOption(options);
  if (!rejected.length || !clicked?.kind.startsWith("allow") || !reject) return { optionId, rejected: [] };
  return { optionId: reject.optionId, rejected };
}

/** The old file's lines a hunk changes: "line 4", "lines 4-6", or where it inserts: "after line 3". */
export function hunkLines(h: Hunk): string {
  const removed = h.lines.filter((l) => l.op === "-").map((l) => l.oldNo!);
  if (removed.length) {
    const [a, b] = [Math.min(...removed), Math.max(...removed)];
    return a === b ? `line ${a}` : `lines ${a}-${b}`;
  }
  // Only additions: after the last old line before the first added one.
  const first = h.lines.findIndex((l) => l.op === "+");
  const before = h.lines.slice(0, first).reverse().find((l) => l.oldNo !== undefined)?.oldNo ?? h.oldStart - 1;
  return before ? `after line ${before}` : "at the start";
}

/** A line quoted for the prompt: trimmed, at most 60 characters, no backticks to break the quote. */
function quote(text: string): string {
  const t = text.trim().replace(/`/g, "'");
  return `\`${t.length > 60 ? `${t.slice(0, 59)}…` : t}\``;
}

function firstAndMore(texts: string[]): string {
  return quote(texts[0]) + (texts.length > 1 ? ` (+${texts.length - 1} more line${texts.length === 2 ? "" : "s"})` : "");
}

/** What a hunk does, in a few words: "replaces `a` with `b`", "removes `a`", "adds `b`". */
export function hunkSummary(h: Hunk): string {
  const removed = h.lines.filter((l) => l.op === "-").map((l) => l.text);
  const added = h.lines.filter((l) => l.op === "+").map((l) => l.text);
  if (removed.length && added.length) return `replaces ${firstAndMore(removed)} with ${firstAndMore(added)}`;
  if (removed.length) return `removes ${firstAndMore(removed)}`;
  return `adds ${firstAndMore(added)}`;
}

/** "2", "2 and 3", "1, 2 and 4" (1-based numbers). */
export function numberList(ns: number[]): string {
  return ns.length < 2 ? ns.join("") : `${ns.slice(0, -1).join(", ")} and ${ns[ns.length - 1]}`;
}

/**
 * The prompt sent for the user when the turn ends: per change, the rejected hunks by number,
 * their lines in the file as it is and what each would have done, and the ask to make the
 * edit again without them. `name` turns a path into what the user calls it (workspace-relative).
 */
export function followUpText(changes: Change[], rejected: RejectedHunk[], name: (path: string) => string = (p) => p): string | null {
  const parts: string[] = [];
  changes.forEach((c, d) => {
    const mine = rejected.filter((r) => r.diff === d).map((r) => r.hunk);
    if (!mine.length) return;
    const hs = reviewHunks(c);
    const kept = hs.map((_, i) => i).filter((i) => !mine.includes(i));
    const one = mine.length === 1;
    const lines = mine.map((i) => `- hunk ${i + 1} (${hunkLines(hs[i])}): ${hunkSummary(hs[i])}`);
    parts.push(
      `I rejected hunk${one ? "" : "s"} ${numberList(mine.map((i) => i + 1))} of ${hs.length} of your edit to ${name(c.path)}, so none of that edit was applied:\n${lines.join("\n")}\n` +
        (kept.length
          ? `Make the edit again without ${one ? "that hunk" : "those hunks"}, keeping hunk${kept.length === 1 ? "" : "s"} ${numberList(kept.map((i) => i + 1))} as you proposed ${kept.length === 1 ? "it" : "them"}.`
          : "Leave that file as it is."),
    );
  });
  return parts.length ? parts.join("\n\n") : null;
}

// Per-hunk review of a proposed edit: which changes a permission card offers hunk by hunk,
// what an approval with rejected hunks becomes, and the follow-up prompt that names them.
// Pure (no `vscode`, no DOM), shared by the host and the webview, unit-tested directly.
//
// The agent owns edits: the extension never writes the kept hunks on its own. Corvid numbers
// a question's hunks on its diff (`_meta.corvid.hunks`) and reads the rejected ones from the
// answer's `_meta.corvid.rejectedHunks`, then writes only the others, in the same turn. ACP
// itself has no such answer, so for an agent that does not number hunks an approval with
// rejected hunks rejects the whole call (its reject option: the turn goes on, nothing is
// written), and the rejected hunks are named in a prompt sent for the user when the turn ends.
import { diffLines, hunks, splitLines, type DiffLine, type Hunk } from "./lineDiff";

/** Unchanged lines around each hunk (the same as the card's compact diff). */
export const REVIEW_CONTEXT = 3;

/** A hunk as the agent numbers it: 1-based starts as in a unified diff header, line counts. */
export interface AgentHunk {
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
}

/** A proposed change as the card holds it (a `DiffContent`); `hunks`, the agent's numbering. */
export interface Change {
  path: string;
  oldText: string | null;
  newText: string;
  hunks?: AgentHunk[];
}

/** A rejected hunk: the change's index on the card and the hunk's index in it (both 0-based). */
export interface RejectedHunk {
  diff: number;
  hunk: number;
}

/** The change's hunks: the agent's, where it numbered them (so both sides mean the same hunk by a number), else our own. */
export function reviewHunks(c: Change): Hunk[] {
  if (c.hunks) {
    const drawn = agentHunks(c.oldText, c.newText, c.hunks);
    if (drawn) return drawn;
  }
  return hunks(diffLines(c.oldText, c.newText), REVIEW_CONTEXT);
}

/**
 * The agent's hunks drawn with their context: each hunk's own lines diffed on their own (the
 * lines between hunks are the same on both sides), `REVIEW_CONTEXT` unchanged lines around.
 * Null when the ranges do not fit the texts (then the card numbers the hunks itself and the
 * answer cannot name them to the agent).
 */
function agentHunks(oldText: string | null, newText: string, ranges: AgentHunk[]): Hunk[] | null {
  const a = splitLines(oldText);
  const b = splitLines(newText);
  const sub = (lines: string[], from: number, count: number) => (count ? lines.slice(from, from + count).join("\n") + "\n" : "");
  const out: Hunk[] = [];
  let [oldEnd, newEnd] = [0, 0];
  for (const r of ranges) {
    // 0-based first line of each side's range (an empty range's start names the line before).
    const o = r.oldLines ? r.oldStart - 1 : r.oldStart;
    const n = r.newLines ? r.newStart - 1 : r.newStart;
    // In order, inside the texts, and the same number of unchanged lines since the last hunk on both sides.
    if (o < oldEnd || n < newEnd || o - oldEnd !== n - newEnd || o + r.oldLines > a.length || n + r.newLines > b.length) return null;
    const lines: DiffLine[] = [];
    for (let i = Math.max(oldEnd, o - REVIEW_CONTEXT); i < o; i++) lines.push({ op: " ", text: a[i], oldNo: i + 1, newNo: i - o + n + 1 });
    for (const l of diffLines(sub(a, o, r.oldLines), sub(b, n, r.newLines)))
      lines.push({ ...l, ...(l.oldNo ? { oldNo: l.oldNo + o } : {}), ...(l.newNo ? { newNo: l.newNo + n } : {}) });
    [oldEnd, newEnd] = [o + r.oldLines, n + r.newLines];
    for (let i = oldEnd; i < Math.min(a.length, oldEnd + REVIEW_CONTEXT); i++) lines.push({ op: " ", text: a[i], oldNo: i + 1, newNo: i - oldEnd + newEnd + 1 });
    out.push({ oldStart: lines[0]?.oldNo ?? o + 1, newStart: lines[0]?.newNo ?? n + 1, lines });
  }
  return a.length - oldEnd === b.length - newEnd ? out : null;
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

/** What the host answers for a click: the option, the hunks rejected, and whether the agent writes the rest (`partial`). */
export interface ReviewAnswer {
  optionId: string;
  rejected: RejectedHunk[];
  /** The agent numbered the hunks: the answer allows, names the rejected ones in `_meta`, and the agent writes the others. */
  partial: boolean;
}

/** Whether the agent numbered this change's hunks as the card draws them (then it can write a part of it). */
export function agentNumbered(c: Change | undefined): boolean {
  return !!c?.hunks && agentHunks(c.oldText, c.newText, c.hunks) !== null;
}

/**
 * What the host answers for a click on `optionId` with `rejected` hunks. An allow with some
 * hunks rejected of a change the agent numbered stays that allow (the agent writes the kept
 * hunks: `partial`); of another change it becomes the reject option (reject, not cancel: the
 * turn goes on) and keeps the rejections for the follow-up. Anything else is answered as
 * clicked, with none.
 */
export function reviewAnswer<T extends { optionId: string; kind: string }>(options: T[], optionId: string, rejected: RejectedHunk[], changes: Change[] = []): ReviewAnswer {
  const clicked = options.find((o) => o.optionId === optionId);
  const plain = { optionId, rejected: [], partial: false };
  if (!rejected.length || !clicked?.kind.startsWith("allow")) return plain;
  // Corvid's questions carry one numbered change: diff 0.
  if (rejected.every((r) => r.diff === 0) && agentNumbered(changes[0])) return { optionId, rejected, partial: true };
  const reject = rejectOption(options);
  return reject ? { optionId: reject.optionId, rejected, partial: false } : plain;
}

/** The permission answer's `_meta` for a partial approval (what Corvid's core reads). */
export function partialMeta(rejected: RejectedHunk[]): { corvid: { rejectedHunks: RejectedHunk[] } } {
  return { corvid: { rejectedHunks: rejected.map((r) => ({ diff: r.diff, hunk: r.hunk })) } };
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

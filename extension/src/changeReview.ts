// Review in the editor: the agent's changes to one file, kept or undone one by one after they
// were written. Pure (no `vscode`), unit-tested directly; `editorReview.ts` draws them.
//
// A file under review holds two texts: `base`, the file as the user last accepted it (before
// the agent's first unreviewed write), and `agent`, what the agent last wrote. Its changes are
// the blocks of consecutive changed lines between the two. Keep folds a block into `base`;
// Undo takes it out of `agent` and out of the document. The document may differ from `agent`
// (the user typed since): a block is found in the document through a line diff of `agent`
// against it, so the user's edits elsewhere are left alone, and a block the user edited
// cannot be undone (it is a conflict, said so, never overwritten).
import { diffLines } from "./lineDiff";

/** One of the agent's changes: old lines [oldStart, oldEnd) of `base` became new lines [newStart, newEnd) of `agent` (0-based). */
export interface Block {
  oldStart: number;
  oldEnd: number;
  newStart: number;
  newEnd: number;
}

/** A file the agent changed and the user has not reviewed in full. `base` null: the agent created it. */
export interface Reviewed {
  path: string;
  base: string | null;
  agent: string;
}

/** A text's lines, each with its line ending (the last may have none): joined, the text again. */
export function linesOf(text: string | null): string[] {
  return text ? (text.match(/[^\n]*\n|[^\n]+$/g) ?? []) : [];
}

/** The agent's changes to the file, in order: each run of consecutive changed lines. */
export function blocks(r: Reviewed): Block[] {
  const out: Block[] = [];
  let open: Block | null = null;
  // Next line on each side (0-based): a block's empty side starts where the other's lines go.
  let [o, n] = [0, 0];
  for (const l of diffLines(r.base, r.agent)) {
    if (l.op === " ") {
      open = null;
      [o, n] = [o + 1, n + 1];
      continue;
    }
    if (!open) out.push((open = { oldStart: o, oldEnd: o, newStart: n, newEnd: n }));
    if (l.op === "-") open.oldEnd = ++o;
    else open.newEnd = ++n;
  }
  return out;
}

/** `lines` with [start, end) replaced by `by`, as text. */
function splice(lines: string[], start: number, end: number, by: string[]): string {
  return [...lines.slice(0, start), ...by, ...lines.slice(end)].join("");
}

/** Keep: the block becomes part of what the user accepted. The rest stays under review. */
export function keep(r: Reviewed, b: Block): Reviewed {
  const added = linesOf(r.agent).slice(b.newStart, b.newEnd);
  return { ...r, base: splice(linesOf(r.base), b.oldStart, b.oldEnd, added) };
}

/**
 * Where the block's new lines are in `doc`, the document as it is now: [start, end) 0-based,
 * or null when the user changed those lines (or the lines around an insertion point, or a
 * deletion point) since the agent wrote them.
 */
export function locate(r: Reviewed, b: Block, doc: string): { start: number; end: number } | null {
  // Each line of `agent` that is unchanged in `doc`, and where it is there.
  const at = new Map<number, number>();
  for (const l of diffLines(r.agent, doc)) if (l.op === " ") at.set(l.oldNo! - 1, l.newNo! - 1);
  const agentLines = linesOf(r.agent).length;
  const docLines = linesOf(doc).length;
  if (b.newEnd > b.newStart) {
    const start = at.get(b.newStart);
    for (let i = b.newStart; i < b.newEnd; i++) if (start === undefined || at.get(i) !== start + (i - b.newStart)) return null;
    // The block's neighbours must still be its neighbours (nothing typed into its edges).
    if (!neighbours(at, b, agentLines, docLines, start!, start! + (b.newEnd - b.newStart))) return null;
    return { start: start!, end: start! + (b.newEnd - b.newStart) };
  }
  // A deletion: the point between the lines before and after it.
  const before = b.newStart > 0 ? at.get(b.newStart - 1) : -1;
  const after = b.newStart < agentLines ? at.get(b.newStart) : docLines;
  if (before === undefined || after === undefined || after !== before + 1) return null;
  return { start: before + 1, end: before + 1 };
}

/** Whether the lines just outside the block (when there are any) sit just outside it in the document. */
function neighbours(at: Map<number, number>, b: Block, agentLines: number, docLines: number, start: number, end: number): boolean {
  const before = b.newStart > 0 ? at.get(b.newStart - 1) : -1;
  const after = b.newEnd < agentLines ? at.get(b.newEnd) : docLines;
  return before === start - 1 && after === end;
}

/**
 * Undo: the document with the block's old lines back where its new lines are (the user's edits
 * elsewhere kept), and what is left under review; null when the block cannot be found as the
 * agent wrote it (a conflict).
 */
export function undo(r: Reviewed, b: Block, doc: string): { doc: string; left: Reviewed } | null {
  const where = locate(r, b, doc);
  if (!where) return null;
  const removed = linesOf(r.base).slice(b.oldStart, b.oldEnd);
  return {
    doc: splice(linesOf(doc), where.start, where.end, removed),
    left: { ...r, agent: splice(linesOf(r.agent), b.newStart, b.newEnd, removed) },
  };
}

/** Whether nothing is left to review (every change kept or undone). */
export function settled(r: Reviewed): boolean {
  return blocks(r).length === 0;
}

/** "Line 4", "Lines 4-6", "After line 3" (1-based, of the document): where a change is, for a label. */
export function blockLines(start: number, end: number): string {
  if (end > start) return end - start === 1 ? `line ${start + 1}` : `lines ${start + 1}-${end}`;
  return start ? `after line ${start}` : "at the start";
}

/** A review saved in the workspace's state, each entry checked (another version may have written it). */
export function savedReview(saved: unknown): Reviewed[] {
  if (!Array.isArray(saved)) return [];
  return saved.filter((r): r is Reviewed => typeof r?.path === "string" && typeof r.agent === "string" && (r.base === null || typeof r.base === "string"));
}

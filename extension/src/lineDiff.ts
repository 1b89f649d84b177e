// A line diff for the permission card: what the agent proposes to write, shown before the user
// answers. Pure (no `vscode`, no DOM), so it is unit-tested directly; the webview draws its HTML.

export interface DiffLine {
  /** " " context, "-" removed, "+" added. */
  op: " " | "-" | "+";
  text: string;
  /** 1-based line numbers in the old and new text (the side the line is on). */
  oldNo?: number;
  newNo?: number;
}

export interface Hunk {
  oldStart: number;
  newStart: number;
  lines: DiffLine[];
}

/** A text's lines; a final newline ends the last line rather than starting an empty one. */
export function splitLines(text: string | null | undefined): string[] {
  if (!text) return [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/** Above this many cells the middle is not aligned (shown as removed, then added). */
const MAX_CELLS = 4_000_000;

/** Every line of both texts, in order, marked kept, removed or added (a longest common subsequence). */
export function diffLines(oldText: string | null | undefined, newText: string | null | undefined): DiffLine[] {
  const a = splitLines(oldText);
  const b = splitLines(newText);
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const out: DiffLine[] = [];
  for (let i = 0; i < pre; i++) out.push({ op: " ", text: a[i], oldNo: i + 1, newNo: i + 1 });
  const am = a.slice(pre, a.length - suf);
  const bm = b.slice(pre, b.length - suf);
  const n = am.length;
  const m = bm.length;
  if (n * m > MAX_CELLS) {
    am.forEach((t, i) => out.push({ op: "-", text: t, oldNo: pre + i + 1 }));
    bm.forEach((t, j) => out.push({ op: "+", text: t, newNo: pre + j + 1 }));
  } else {
    // lcs[i][j]: the longest common subsequence of am[i..] and bm[j..].
    const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--) lcs[i][j] = am[i] === bm[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && am[i] === bm[j]) {
        out.push({ op: " ", text: am[i], oldNo: pre + i + 1, newNo: pre + j + 1 });
        i++;
        j++;
      } else if (j >= m || (i < n && lcs[i + 1][j] >= lcs[i][j + 1])) {
        out.push({ op: "-", text: am[i], oldNo: pre + i + 1 });
        i++;
      } else {
        out.push({ op: "+", text: bm[j], newNo: pre + j + 1 });
        j++;
      }
    }
  }
  for (let k = 0; k < suf; k++) {
    const oi = a.length - suf + k;
    const ni = b.length - suf + k;
    out.push({ op: " ", text: a[oi], oldNo: oi + 1, newNo: ni + 1 });
  }
  return out;
}

/** The changed lines with `context` unchanged lines around them, as hunks (close ones merged). */
export function hunks(lines: DiffLine[], context = 3): Hunk[] {
  const out: Hunk[] = [];
  const changed = lines.map((l, i) => (l.op === " " ? -1 : i)).filter((i) => i >= 0);
  let k = 0;
  while (k < changed.length) {
    const start = Math.max(0, changed[k] - context);
    let end = changed[k];
    // Extend while the next change is within two contexts of this one.
    while (k + 1 < changed.length && changed[k + 1] - end <= 2 * context + 1) end = changed[++k];
    k++;
    const last = Math.min(lines.length - 1, end + context);
    const slice = lines.slice(start, last + 1);
    const first = lines[start];
    // Where the hunk starts on each side: the first line there, or just after the line before.
    const oldStart = first.oldNo ?? (lines.slice(0, start).reverse().find((l) => l.oldNo)?.oldNo ?? 0) + 1;
    const newStart = first.newNo ?? (lines.slice(0, start).reverse().find((l) => l.newNo)?.newNo ?? 0) + 1;
    out.push({ oldStart, newStart, lines: slice });
  }
  return out;
}

export interface DiffStat {
  added: number;
  removed: number;
}

export function diffStat(lines: DiffLine[]): DiffStat {
  return { added: lines.filter((l) => l.op === "+").length, removed: lines.filter((l) => l.op === "-").length };
}

function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** Diff lines as escaped spans (one per line, its op first); nothing of the agent's becomes markup. */
export function renderLines(lines: DiffLine[]): string {
  return lines.map((l) => `<span class="dl ${l.op === "+" ? "add" : l.op === "-" ? "del" : "ctx"}">${l.op}${esc(l.text)}</span>`).join("");
}

export interface RenderedDiff {
  html: string;
  /** Diff lines drawn (hunk headers not counted) and in all hunks. */
  shown: number;
  total: number;
  stat: DiffStat;
}

/**
 * The proposed change as HTML: its hunks (changed lines with `context` lines around them),
 * at most `maxLines` diff lines unless `maxLines` is Infinity (the whole change). Text is
 * escaped; nothing of the agent's becomes markup.
 */
export function renderDiff(oldText: string | null | undefined, newText: string, opts: { context?: number; maxLines?: number } = {}): RenderedDiff {
  const lines = diffLines(oldText, newText);
  const hs = hunks(lines, opts.context ?? 3);
  const max = opts.maxLines ?? Infinity;
  const total = hs.reduce((n, h) => n + h.lines.length, 0);
  let shown = 0;
  const parts: string[] = [];
  for (const h of hs) {
    if (shown >= max) break;
    parts.push(`<span class="dh">@@ -${h.oldStart} +${h.newStart} @@</span>`);
    const lines = h.lines.slice(0, max - shown);
    parts.push(renderLines(lines));
    shown += lines.length;
  }
  return { html: parts.join(""), shown, total, stat: diffStat(lines) };
}

// The transcript's cards as markup: one item of the view model → its HTML. Everything of the
// agent's or the model's is escaped or goes through the escaping Markdown renderer. The reader's
// own choices on the cards (opened details, whole diffs, rejected hunks) are kept here, by key,
// so a card drawn again keeps them.
import { escapeHtml as esc, renderMarkdown } from "../markdown";
import { renderDiff, renderLines } from "../lineDiff";
import { agentNumbered, hunkLines, numberList, rejectOption, reviewable, reviewHunks } from "../hunkReview";
import { exitText } from "../commandOutput";
import { checkpointText, permissionSummary, stopText, type DiffContent, type Item } from "../viewModel";

/** Which collapsible parts (thoughts, read cards) the reader opened, by data-key. */
export const openDetails = new Set<string>();
/** Proposed changes the reader expanded to the whole change, by key (request:diff index). */
export const wholeDiffs = new Set<string>();
/** Diff lines a permission card shows before "Show the whole change". */
const COMPACT_LINES = 14;
/** Hunks the reader rejected on a pending permission card, by request: "diff:hunk" keys. */
export const rejectedHunks = new Map<number, Set<string>>();

/**
 * A reviewed change's hunks, each with its Keep / Reject toggle (pressed state for screen
 * readers); the compact view's line budget hides lines, never a hunk's toggle.
 */
function reviewedHunks(d: DiffContent, requestId: number, i: number, maxLines: number): string {
  const hs = reviewHunks(d);
  const rejected = rejectedHunks.get(requestId);
  let budget = maxLines;
  return hs
    .map((h, k) => {
      const off = rejected?.has(`${i}:${k}`) ?? false;
      // Each hunk keeps at least its changed lines, so no toggle shows without the change it decides.
      const changed = h.lines.filter((l) => l.op !== " ").length;
      const lines = budget >= h.lines.length ? h.lines : h.lines.filter((l) => l.op !== " ").slice(0, Math.max(changed, budget));
      budget -= lines.length;
      const name = `hunk ${k + 1} of ${hs.length}`;
      const data = `data-request="${requestId}" data-diff="${i}" data-hunk="${k}"`;
      return `<div class="hunk${off ? " rejected" : ""}" role="group" aria-label="${esc(`Hunk ${k + 1} of ${hs.length}, ${hunkLines(h)}`)}">
        <div class="hunk-head"><span class="hunk-name">Hunk ${k + 1} of ${hs.length} · ${esc(hunkLines(h))}</span><span class="hunk-toggle">
        <button class="hunk-keep secondary" ${data} aria-pressed="${!off}" aria-label="Keep ${name}" data-focus-key="keep:${requestId}:${i}:${k}">Keep</button><button class="hunk-reject secondary" ${data} aria-pressed="${off}" aria-label="Reject ${name}" data-focus-key="reject:${requestId}:${i}:${k}">Reject</button></span></div>
        ${lines.length ? `<pre class="pdiff"><span class="dh">@@ -${h.oldStart} +${h.newStart} @@</span>${renderLines(lines)}</pre>` : ""}</div>`;
    })
    .join("");
}

/** A proposed change in a permission card: its file, counts, changed lines (hunk by hunk when `review`), Open diff. */
function proposedDiff(d: DiffContent, requestId: number, i: number, review: boolean): string {
  const key = `${requestId}:${i}`;
  const whole = wholeDiffs.has(key);
  const r = renderDiff(d.oldText, d.newText, { maxLines: whole ? Infinity : COMPACT_LINES });
  const body = review ? reviewedHunks(d, requestId, i, whole ? Infinity : COMPACT_LINES) : `<pre class="pdiff" aria-label="Proposed change to ${esc(d.path.split("/").pop() ?? d.path)}">${r.html || `<span class="dl ctx">(no change)</span>`}</pre>`;
  const name = d.path.split("/").pop() ?? d.path;
  const more =
    r.total > COMPACT_LINES
      ? `<button class="pdiff-toggle link" data-whole="${esc(key)}" aria-expanded="${whole}">${whole ? "Show less" : `Show the whole change (${r.total - r.shown} more lines)`}</button>`
      : "";
  return `<div class="proposed" data-path="${esc(d.path)}"><div class="diff"><span class="pname" title="${esc(d.path)}">${esc(name)}</span>
    <span class="stat">${d.oldText == null ? "new file, " : ""}<span class="plus">+${r.stat.added}</span> <span class="minus">−${r.stat.removed}</span></span>
    <button class="open-proposed secondary" data-request="${requestId}" data-diff="${i}" aria-label="Open diff of the proposed change to ${esc(name)}">Open diff</button></div>
    ${body}${more}</div>`;
}

const STATUS_ICON: Record<string, string> = { pending: "○", in_progress: "◐", completed: "✓", failed: "✗" };

export function renderItem(item: Item, index: number): string {
  switch (item.kind) {
    case "user": {
      const chips = (item.attachments ?? []).map((c) => `<span class="chip" role="listitem" data-kind="${esc(c.kind)}" title="${esc(c.kind)}: ${esc(c.name)}"><span class="chip-name">${esc(c.name)}</span></span>`).join("");
      // A follow-up the extension sent for the user says so.
      const auto = item.followUp ? `<div class="follow-up-label">Sent for you after your hunk review</div>` : "";
      // Shown where the agent rewinds (body[data-rewind]) and no turn runs (body[data-busy]).
      const rewind = item.messageId
        ? `<button class="rewind secondary" data-message="${esc(item.messageId)}" aria-label="Rewind to here: undo the agent's file changes since this message and continue from before it" title="Undo the agent's file changes since this message and continue from before it (editable before you send it again)">Rewind to here</button>`
        : "";
      return `<div class="msg user${item.followUp ? " follow-up" : ""}">${auto}${chips ? `<div class="chips sent" role="list" aria-label="Context sent">${chips}</div>` : ""}${renderMarkdown(item.text)}${rewind}</div>`;
    }
    case "agent":
      return `<div class="msg agent">${renderMarkdown(item.text)}</div>`;
    case "thought":
      return `<details class="thought" data-key="thought:${index}"${openDetails.has(`thought:${index}`) ? " open" : ""}><summary>Thinking</summary>${renderMarkdown(item.text)}</details>`;
    case "notice": {
      const fixes = (item.actions ?? [])
        .map(
          (a) =>
            `<button class="fix secondary" data-fix-kind="${esc(a.kind)}" ${a.kind === "command" ? `data-command="${esc(a.command)}"` : `data-setting="${esc(a.setting)}"`}>${esc(a.label)}</button>`,
        )
        .join("");
      return `<div class="notice ${esc(item.severity)}">${esc(item.text)}${fixes ? `<div class="fixes" role="group" aria-label="Fix it in VS Code">${fixes}</div>` : ""}</div>`;
    }
    case "permission": {
      if (item.chosen !== undefined) {
        const allowed = item.options.find((o) => o.optionId === item.chosen)?.kind.startsWith("allow") ?? false;
        return `<div class="permission answered${allowed ? " allowed" : ""}" data-request="${item.requestId}"><span class="picon" aria-hidden="true">${allowed ? "✓" : "✗"}</span>
          <span class="ptitle">${esc(item.title)}</span><span class="chosen">${esc(permissionSummary(item))}</span></div>`;
      }
      // Only "allow once" is the primary action; "always" and the rejections are secondary.
      const buttons = item.options
        .map((o) => `<button class="perm${o.kind === "allow_once" ? "" : " secondary"}" data-request="${item.requestId}" data-option="${esc(o.optionId)}">${esc(o.name)}</button>`)
        .join("");
      // Hunk by hunk only where rejecting is an answer the agent offers.
      const canReview = rejectOption(item.options) !== undefined;
      const diffs = (item.diffs ?? []).map((d, i) => proposedDiff(d, item.requestId, i, canReview && reviewable(d))).join("");
      const off = [...(rejectedHunks.get(item.requestId) ?? [])].map((k) => Number(k.split(":")[1]) + 1).sort((a, b) => a - b);
      const them = off.length === 1 ? "it" : "them";
      const what = agentNumbered(item.diffs?.[0])
        ? `Allow writes the rest of this edit without ${them}`
        : `Allow rejects this edit and asks Corvid to make it again without ${them}`;
      const note = off.length ? `<div class="review-note" role="status">Hunk${off.length === 1 ? "" : "s"} ${numberList(off)} rejected: ${what}.</div>` : "";
      return `<div class="permission" role="group" aria-label="Permission request" data-request="${item.requestId}"><div class="ptitle">Allow: ${esc(item.title)}?</div>${diffs}${note}<div class="pbuttons">${buttons}</div></div>`;
    }
    case "plan":
      return `<div class="plan" role="group" aria-label="Plan"><div class="plan-title">Plan</div><ul>${item.entries
        .map((e) => `<li class="${esc(e.status)}"><span class="ticon" aria-hidden="true">${STATUS_ICON[e.status] ?? "•"}</span> ${esc(e.content)}<span class="sr-only"> (${esc(e.status.replace("_", " "))})</span></li>`)
        .join("")}</ul></div>`;
    case "checkpoint":
      return item.undone
        ? `<div class="checkpoint undone" data-turn="${item.turn}"><span class="ctext">${esc(checkpointText(item))}</span></div>`
        : `<div class="checkpoint" data-turn="${item.turn}" title="${esc(item.files.join("\n"))}"><span class="ctext">${esc(checkpointText(item))}</span>
          <button class="undo-turn secondary" data-turn="${item.turn}" aria-label="Undo this turn: put back ${item.files.length} file${item.files.length === 1 ? "" : "s"} as they were before it">Undo this turn</button></div>`;
    case "stop":
      return `<div class="stop-reason" data-stop="${esc(item.reason)}">${esc(stopText(item.reason))}</div>`;
    case "tool": {
      if (item.folded && item.status !== "failed") return `<div class="tool folded" hidden></div>`;
      let diffIndex = 0;
      let termIndex = 0;
      const body = item.content
        .map((c) => {
          if (c.type === "text") return c.text ? `<pre class="out">${esc(c.text)}</pre>` : "";
          if (c.type === "terminal") {
            const t = termIndex++;
            if (c.output === undefined) return `<pre class="out terminal note">No output was kept for this command (it ran in an earlier window).</pre>`;
            // The card follows the tail; the whole output is in the command's VS Code terminal.
            const more = c.hidden ? `<div class="tmore">… ${c.hidden} earlier line${c.hidden === 1 ? "" : "s"}</div>` : "";
            const exit = c.exited ? exitText(c.exit) || "ended" : "running";
            const failed = c.exited && c.exit != null && c.exit.exitCode !== 0;
            return `<div class="cmd-output" data-terminal="${t}">${more}<pre class="out terminal${c.exited ? "" : " live"}">${esc(c.output)}${c.exited === false ? "<span class=\"cursor\">▍</span>" : ""}</pre>
              <div class="tfoot"><span class="texit${failed ? " failed" : ""}">${esc(exit)}</span>
              <button class="open-terminal secondary" data-tool="${esc(item.id)}" data-terminal="${t}" aria-label="Open the output of ${esc(item.title)} in a terminal">Open in Terminal</button></div></div>`;
          }
          const i = diffIndex++;
          const oldLines = c.oldText == null ? 0 : c.oldText.split("\n").length;
          const newLines = c.newText.split("\n").length;
          return `<div class="diff"><button class="path link" data-path="${esc(c.path)}" title="Open ${esc(c.path)}">${esc(c.path.split("/").pop() ?? c.path)}</button>
            <span class="stat">${c.oldText == null ? "new file" : `${oldLines} → ${newLines} lines`}</span>
            <button class="open-diff secondary" data-tool="${esc(item.id)}" data-diff="${i}" aria-label="Open diff of ${esc(c.path.split("/").pop() ?? c.path)}">Open diff</button></div>`;
        })
        .join("");
      const header = `<span class="ticon" aria-hidden="true">${STATUS_ICON[item.status] ?? "•"}</span>
        <span class="ttitle">${esc(item.title)}</span><span class="tstatus">${esc(item.status.replace("_", " "))}</span>`;
      // A read is one line; what it read stays one click away.
      if (item.toolKind === "read") {
        const key = `tool:${item.id}`;
        return `<details class="tool compact ${esc(item.status)}" data-tool-id="${esc(item.id)}" data-key="${esc(key)}"${openDetails.has(key) ? " open" : ""}>
          <summary class="theader">${header}</summary>${body}</details>`;
      }
      return `<div class="tool ${esc(item.status)}" data-tool-id="${esc(item.id)}"><div class="theader">${header}</div>${body}</div>`;
    }
  }
}

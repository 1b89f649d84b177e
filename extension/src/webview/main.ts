// The chat webview: draws the view model the extension posts, sends user actions back.
// All agent text goes through the escaping Markdown renderer; no raw HTML is ever inserted.
import { escapeHtml as esc, renderMarkdown } from "../markdown";
import { renderDiff, renderLines } from "../lineDiff";
import { hunkLines, numberList, rejectOption, reviewable, reviewHunks } from "../hunkReview";
import { composerContext } from "./composerContext";
import { exitText } from "../commandOutput";
import { PRESETS, type ProviderChoice } from "../providers";
import type { FromWebview, ToWebview } from "../webviewMessages";
import { checkpointText, filterSessions, lastPrompt, permissionSummary, stopText, type DiffContent, type Item, type PastSession, type ViewState } from "../viewModel";

declare function acquireVsCodeApi(): { postMessage(m: FromWebview): void; getState(): any; setState(s: unknown): void };
const vscode = acquireVsCodeApi();

const app = document.getElementById("app")!;
app.innerHTML = `
<div class="toolbar" role="toolbar" aria-label="Session settings"><span id="pickers"></span><span id="usage" class="usage"></span></div>
<div id="history" class="history" role="region" aria-label="Past chats" hidden></div>
<div class="transcript-wrap"><div id="transcript" class="transcript" role="log" aria-live="polite" aria-label="Conversation" tabindex="0"></div>
<button id="jump" class="jump" hidden aria-label="Jump to latest message" title="Scroll to the newest message">↓ Jump to latest</button></div>
<div class="composer">
  <div id="commands" class="commands" role="listbox" aria-label="Slash commands"></div>
  <div id="mentions" class="mentions" role="listbox" aria-label="Files, folders, symbols and the selection to mention" hidden></div>
  <div id="chips" class="chips" role="list" aria-label="Context sent with the message" hidden></div>
  <div id="composer-note" class="composer-note" role="status" hidden></div>
  <textarea id="prompt" rows="3" aria-label="Message to Corvid" aria-controls="commands mentions" aria-autocomplete="list" aria-expanded="false"
    placeholder="Ask Corvid… (Enter to send, Shift+Enter for a new line, / for commands, @ to mention, ↑ for earlier prompts, Esc to stop)"></textarea>
  <div class="actions"><span id="status" class="status" role="status"></span>
    <button id="edit-last" class="secondary" aria-label="Edit the last prompt" title="Put the last prompt back in the input, to change and send again">Edit last</button>
    <button id="retry" class="secondary" aria-label="Retry the last prompt" title="Send the last prompt again">Retry</button>
    <button id="stop" class="secondary" aria-label="Stop the turn" title="Stop (Esc)">Stop</button>
    <button id="send" aria-label="Send" title="Send (Enter)">Send</button></div>
</div>`;

const transcript = document.getElementById("transcript")!;
const promptBox = document.getElementById("prompt") as HTMLTextAreaElement;
const stopBtn = document.getElementById("stop") as HTMLButtonElement;
const sendBtn = document.getElementById("send") as HTMLButtonElement;
const retryBtn = document.getElementById("retry") as HTMLButtonElement;
const editLastBtn = document.getElementById("edit-last") as HTMLButtonElement;
const commandsBox = document.getElementById("commands")!;
const historyBox = document.getElementById("history")!;
const jumpBtn = document.getElementById("jump") as HTMLButtonElement;
let state: ViewState | null = null;
const context = composerContext({
  promptBox,
  popup: document.getElementById("mentions")!,
  chipsBox: document.getElementById("chips")!,
  note: document.getElementById("composer-note")!,
  post: (m) => vscode.postMessage(m),
  caps: () => state?.promptCaps,
});
/** Which collapsible parts (thoughts, read cards) the reader opened, by data-key. */
const openDetails = new Set<string>();
/** Proposed changes the reader expanded to the whole change, by key (request:diff index). */
const wholeDiffs = new Set<string>();
/** Diff lines a permission card shows before "Show the whole change". */
const COMPACT_LINES = 14;
/** Hunks the reader rejected on a pending permission card, by request: "diff:hunk" keys. */
const rejectedHunks = new Map<number, Set<string>>();

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
      const lines = h.lines.slice(0, Math.max(0, budget));
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

function renderItem(item: Item, index: number): string {
  switch (item.kind) {
    case "user": {
      const chips = (item.attachments ?? []).map((c) => `<span class="chip" role="listitem" data-kind="${esc(c.kind)}" title="${esc(c.kind)}: ${esc(c.name)}"><span class="chip-name">${esc(c.name)}</span></span>`).join("");
      // A follow-up the extension sent for the user says so.
      const auto = item.followUp ? `<div class="follow-up-label">Sent for you after your hunk review</div>` : "";
      return `<div class="msg user${item.followUp ? " follow-up" : ""}">${auto}${chips ? `<div class="chips sent" role="list" aria-label="Context sent">${chips}</div>` : ""}${renderMarkdown(item.text)}</div>`;
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
      const note = off.length
        ? `<div class="review-note" role="status">Hunk${off.length === 1 ? "" : "s"} ${numberList(off)} rejected: Allow rejects this edit and asks Corvid to make it again without ${off.length === 1 ? "it" : "them"}.</div>`
        : "";
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

/**
 * The first-run welcome, while no model provider is configured: the provider choices, Set API
 * Key and Test connection (the host does each; this only draws and asks).
 */
function renderWelcome(s: ViewState): void {
  let box = document.getElementById("welcome");
  if (!s.setup) {
    box?.remove();
    return;
  }
  const choices = (Object.keys(PRESETS) as ProviderChoice[])
    .map((k) => `<button class="setup-provider secondary" data-choice="${k}">${esc(PRESETS[k].label)}</button>`)
    .join("");
  const test = s.setup.testing
    ? `<div class="setup-test" role="status">Testing the connection…</div>`
    : s.setup.test
      ? `<div class="setup-test ${s.setup.test.ok ? "ok" : "failed"}" role="status">${esc(s.setup.test.text)}</div>`
      : "";
  const html = `<div id="welcome" class="welcome" role="region" aria-label="Set up Corvid">
    <div class="welcome-title">Welcome to Corvid</div>
    <p>Corvid needs a model provider. Pick one; it is saved in VS Code's settings (corvid.provider, corvid.baseUrl, corvid.model).</p>
    <div class="setup-choices" role="group" aria-label="Model provider">${choices}</div>
    <p class="setup-now">Now: ${esc(s.setup.current)}</p>
    <div class="setup-actions"><button class="setup-key secondary">Set API Key</button><button class="setup-test-button"${s.setup.testing ? " disabled" : ""}>Test connection</button></div>
    ${test}</div>`;
  if (!box) {
    transcript.insertAdjacentHTML("afterbegin", html);
    return;
  }
  patch(box, html);
}

/** Draws again the item holding `el` whose view changed but not its data (a toggle of the reader's). */
function redrawItemOf(el: HTMLElement): void {
  const i = drawn.findIndex((d) => d.el.contains(el));
  if (i >= 0) drawn[i].sig = "";
  render();
}

/** What is drawn for each item: its data as last drawn and its element (index = item index). */
let drawn: { sig: string; el: HTMLElement }[] = [];
let drawnSession: string | null = null;
/** Follow mode: keep the newest content in view unless the reader scrolled up. */
let follow = true;
/** Where follow mode last put the view: a reader who scrolled above it since has left follow mode,
 * even if the scroll event has not arrived yet. */
let autoTop = 0;

function elementOf(html: string): HTMLElement {
  const t = document.createElement("template");
  t.innerHTML = html.trim();
  return t.content.firstElementChild as HTMLElement;
}

/**
 * Brings `el` to the markup `html` while touching as little as possible: its attributes are
 * updated and only the top-level children that differ are replaced. A streaming message thus
 * changes only in its last block; earlier blocks (a text selection in them, a focused button)
 * stay as they are.
 */
function patch(el: HTMLElement, html: string): HTMLElement {
  const next = elementOf(html);
  if (el.tagName !== next.tagName) {
    el.replaceWith(next);
    return next;
  }
  for (const a of Array.from(el.attributes)) if (!next.hasAttribute(a.name)) el.removeAttribute(a.name);
  for (const a of Array.from(next.attributes)) if (el.getAttribute(a.name) !== a.value) el.setAttribute(a.name, a.value);
  const before = Array.from(el.childNodes);
  const after = Array.from(next.childNodes);
  after.forEach((n, j) => {
    const o = before[j];
    if (!o) el.appendChild(n);
    else if (!o.isEqualNode(n)) el.replaceChild(n, o);
  });
  for (const o of before.slice(after.length)) o.remove();
  return el;
}

function atBottom(): boolean {
  return transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 30;
}

function updateJump(): void {
  jumpBtn.hidden = follow || atBottom();
}

/** Draws the transcript incrementally: only items whose data changed are touched. */
function renderTranscript(s: ViewState): void {
  if (s.sessionId !== drawnSession || s.items.length < drawn.length) {
    transcript.replaceChildren();
    drawn = [];
    drawnSession = s.sessionId;
    follow = true;
    autoTop = 0;
  }
  if (follow && transcript.scrollTop < autoTop - 5) follow = false;
  // A redrawn card replaces the button that had the focus: it goes back to its successor.
  const focusKey = (document.activeElement as HTMLElement | null)?.dataset?.focusKey;
  renderWelcome(s);
  const empty = transcript.querySelector(":scope > .empty");
  if ((s.items.length || s.setup) && empty) empty.remove();
  if (!s.items.length && !s.setup && !empty) transcript.insertAdjacentHTML("afterbegin", `<div class="empty">Ask Corvid to read, change or explain code in this workspace.</div>`);
  s.items.forEach((item, i) => {
    const sig = JSON.stringify(item);
    const d = drawn[i];
    if (d?.sig === sig) return;
    const html = renderItem(item, i);
    if (d) drawn[i] = { sig, el: patch(d.el, html) };
    else {
      const el = elementOf(html);
      transcript.appendChild(el);
      drawn[i] = { sig, el };
    }
  });
  const active = document.activeElement;
  if (focusKey && (!active || active === document.body || !active.isConnected))
    transcript.querySelector<HTMLElement>(`[data-focus-key="${CSS.escape(focusKey)}"]`)?.focus();
  // A running command's card shows its newest lines.
  transcript.querySelectorAll<HTMLElement>("pre.out.terminal.live").forEach((pre) => (pre.scrollTop = pre.scrollHeight));
  if (follow) {
    transcript.scrollTop = transcript.scrollHeight;
    autoTop = transcript.scrollTop;
  }
  updateJump();
}

function render(): void {
  if (!state) return;
  renderTranscript(state);

  const pickers = state.config
    .map(
      (c) => `<label title="${esc(c.name)}">${esc(c.name)} <select data-config="${esc(c.id)}" aria-label="${esc(c.name)}">${c.options
        .map((o) => `<option value="${esc(o.value)}"${o.value === c.currentValue ? " selected" : ""}>${esc(o.name)}</option>`)
        .join("")}</select></label>`,
    )
    .join("");
  // Redrawn only when they change, so a picker keeps the focus while a turn streams.
  const pickerBox = document.getElementById("pickers")!;
  if (pickerBox.dataset.html !== pickers) {
    pickerBox.innerHTML = pickers;
    pickerBox.dataset.html = pickers;
  }

  const u = state.usage;
  document.getElementById("usage")!.textContent = u
    ? `${u.used.toLocaleString()} / ${u.size.toLocaleString()} tokens${u.cost ? ` · ${u.cost.amount.toFixed(4)} ${u.cost.currency}` : ""}`
    : "";
  document.getElementById("status")!.textContent = state.busy ? "Working…" : state.agentState === "ready" ? "" : state.agentState;
  stopBtn.style.display = state.busy ? "" : "none";
  // Retry and Edit last: after any turn, not while one runs.
  const canRepeat = !state.busy && state.agentState !== "loading" && lastPrompt(state) !== null;
  retryBtn.style.display = editLastBtn.style.display = canRepeat ? "" : "none";
  sendBtn.disabled = state.busy;
  document.body.dataset.busy = String(state.busy);
  document.body.dataset.session = state.sessionId ?? "";
  document.body.dataset.lastStop = state.lastStop ?? "";
  renderCommands();
}

/** The slash-command menu: its matches and the one the arrow keys point at. */
let commandMatches: { name: string; description: string }[] = [];
let activeCommand = 0;
/** Escape closed the menu; it stays closed until the input changes. */
let commandsDismissed = false;

function renderCommands(): void {
  const text = promptBox.value;
  const matches =
    !state || commandsDismissed || !text.startsWith("/") || text.includes(" ") ? [] : state.commands.filter((c) => `/${c.name}`.startsWith(text));
  if (matches.map((c) => c.name).join(" ") !== commandMatches.map((c) => c.name).join(" ")) activeCommand = 0;
  commandMatches = matches;
  commandsBox.innerHTML = matches
    .map(
      (c, i) =>
        `<div class="command${i === activeCommand ? " active" : ""}" id="command-${i}" role="option" aria-selected="${i === activeCommand}" data-command="${esc(c.name)}"><b>/${esc(c.name)}</b> ${esc(c.description)}</div>`,
    )
    .join("");
  // The `@` popup owns these while it is open.
  if (!document.getElementById("mentions")!.hidden) return;
  promptBox.setAttribute("aria-expanded", String(matches.length > 0));
  if (matches.length) promptBox.setAttribute("aria-activedescendant", `command-${activeCommand}`);
  else promptBox.removeAttribute("aria-activedescendant");
}

function pickCommand(name: string): void {
  promptBox.value = `/${name} `;
  promptBox.focus();
  renderCommands();
}

/** Prompts sent from this view, oldest first (kept with the webview's state), for Up/Down. */
const sentPrompts: string[] = Array.isArray(vscode.getState()?.sent) ? vscode.getState().sent : [];
/** Where Up/Down is in `sentPrompts`; `sentPrompts.length` = not recalling. */
let recall = sentPrompts.length;

function remember(text: string): void {
  if (sentPrompts[sentPrompts.length - 1] !== text) sentPrompts.push(text);
  sentPrompts.splice(0, Math.max(0, sentPrompts.length - 100));
  recall = sentPrompts.length;
  vscode.setState({ ...(vscode.getState() ?? {}), sent: sentPrompts });
}

function send(): void {
  const text = promptBox.value;
  if (!text.trim() || state?.busy) return;
  vscode.postMessage({ type: "prompt", text, attachments: context.attachments(text) });
  context.sent();
  remember(text);
  promptBox.value = "";
  follow = true;
  autoTop = 0;
  renderCommands();
}

promptBox.addEventListener("keydown", (e) => {
  if (e.isComposing) return;
  // The `@` popup, by keyboard (it takes these keys before the slash menu and recall).
  if (context.handleKey(e)) return;
  // The slash-command menu, by keyboard.
  if (commandMatches.length) {
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      activeCommand = (activeCommand + (e.key === "ArrowDown" ? 1 : commandMatches.length - 1)) % commandMatches.length;
      renderCommands();
      return;
    }
    if ((e.key === "Enter" && !e.shiftKey) || e.key === "Tab") {
      e.preventDefault();
      pickCommand(commandMatches[activeCommand].name);
      return;
    }
    if (e.key === "Escape") {
      e.preventDefault();
      e.stopPropagation();
      commandsDismissed = true;
      renderCommands();
      return;
    }
  }
  // Up in an empty input (or on a recalled prompt, unchanged) recalls earlier prompts; Down goes back.
  const recalling = recall < sentPrompts.length && promptBox.value === sentPrompts[recall];
  if (e.key === "ArrowUp" && !e.shiftKey && (promptBox.value === "" || recalling) && recall > 0) {
    e.preventDefault();
    promptBox.value = sentPrompts[--recall];
    promptBox.setSelectionRange(promptBox.value.length, promptBox.value.length);
    return;
  }
  if (e.key === "ArrowDown" && !e.shiftKey && recalling) {
    e.preventDefault();
    recall++;
    promptBox.value = recall < sentPrompts.length ? sentPrompts[recall] : "";
    return;
  }
  if (e.key === "Enter" && !e.shiftKey) {
    e.preventDefault();
    send();
  }
});
promptBox.addEventListener("input", () => {
  commandsDismissed = false;
  recall = sentPrompts.length;
  renderCommands();
  context.inputChanged();
});
sendBtn.addEventListener("click", send);
stopBtn.addEventListener("click", () => vscode.postMessage({ type: "stop" }));
retryBtn.addEventListener("click", () => {
  if (!state || state.busy) return;
  follow = true;
  autoTop = 0;
  vscode.postMessage({ type: "retry" });
});
editLastBtn.addEventListener("click", () => {
  const text = state && lastPrompt(state);
  if (text == null) return;
  promptBox.value = text;
  promptBox.focus();
  promptBox.setSelectionRange(text.length, text.length);
  renderCommands();
});
// Escape anywhere in the view stops a running turn (the command menu takes it first).
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && !e.defaultPrevented && state?.busy) {
    e.preventDefault();
    vscode.postMessage({ type: "stop" });
  }
});
commandsBox.addEventListener("mousedown", (e) => e.preventDefault()); // keep the focus in the input
commandsBox.addEventListener("click", (e) => {
  const el = (e.target as HTMLElement).closest<HTMLElement>("[data-command]");
  if (el) pickCommand(el.dataset.command!);
});
transcript.addEventListener("scroll", () => {
  follow = atBottom();
  updateJump();
});
jumpBtn.addEventListener("click", () => {
  follow = true;
  transcript.scrollTop = transcript.scrollHeight;
  autoTop = transcript.scrollTop;
  updateJump();
});
transcript.addEventListener("click", (e) => {
  const t = e.target as HTMLElement;
  const codeButton = t.closest<HTMLButtonElement>("button.code-copy, button.code-insert");
  if (codeButton) {
    const text = codeButton.closest(".codeblock")?.querySelector("pre code")?.textContent ?? "";
    const copy = codeButton.classList.contains("code-copy");
    // Copy: the webview's own clipboard (a click is a user gesture here), else VS Code's.
    if (!copy) vscode.postMessage({ type: "insertCode", text });
    else if (navigator.clipboard) navigator.clipboard.writeText(text).catch(() => vscode.postMessage({ type: "copyCode", text }));
    else vscode.postMessage({ type: "copyCode", text });
    const label = copy ? "Copy" : "Insert";
    codeButton.textContent = copy ? "Copied" : "Inserted";
    setTimeout(() => (codeButton.textContent = label), 1500);
  }
  const perm = t.closest<HTMLElement>("button.perm");
  if (perm) {
    const requestId = Number(perm.dataset.request);
    // The host decides what an approval with rejected hunks answers (hunkReview.ts).
    const rejected = [...(rejectedHunks.get(requestId) ?? [])].map((k) => ({ diff: Number(k.split(":")[0]), hunk: Number(k.split(":")[1]) }));
    rejectedHunks.delete(requestId);
    vscode.postMessage({ type: "permission", requestId, optionId: perm.dataset.option, rejectedHunks: rejected });
  }
  const hunk = t.closest<HTMLElement>("button.hunk-keep, button.hunk-reject");
  if (hunk) {
    const requestId = Number(hunk.dataset.request);
    const set = rejectedHunks.get(requestId) ?? new Set<string>();
    const key = `${hunk.dataset.diff}:${hunk.dataset.hunk}`;
    if (hunk.classList.contains("hunk-reject")) set.add(key);
    else set.delete(key);
    rejectedHunks.set(requestId, set);
    redrawItemOf(hunk);
  }
  const undo = t.closest<HTMLButtonElement>("button.undo-turn");
  if (undo && !state?.busy) vscode.postMessage({ type: "undoTurn", turn: Number(undo.dataset.turn) });
  const proposed = t.closest<HTMLElement>("button.open-proposed");
  if (proposed) vscode.postMessage({ type: "openProposedDiff", requestId: Number(proposed.dataset.request), index: Number(proposed.dataset.diff) });
  const toggle = t.closest<HTMLElement>("button.pdiff-toggle");
  if (toggle) {
    const key = toggle.dataset.whole!;
    if (wholeDiffs.has(key)) wholeDiffs.delete(key);
    else wholeDiffs.add(key);
    redrawItemOf(toggle);
  }
  const openTerminal = t.closest<HTMLElement>("button.open-terminal");
  if (openTerminal) vscode.postMessage({ type: "openTerminal", toolCallId: openTerminal.dataset.tool, index: Number(openTerminal.dataset.terminal) });
  const provider = t.closest<HTMLElement>("button.setup-provider");
  if (provider) vscode.postMessage({ type: "setupProvider", choice: provider.dataset.choice });
  if (t.closest("button.setup-key")) vscode.postMessage({ type: "setupKey" });
  if (t.closest("button.setup-test-button")) vscode.postMessage({ type: "testConnection" });
  const diff = t.closest<HTMLElement>("button.open-diff");
  if (diff) vscode.postMessage({ type: "openDiff", toolCallId: diff.dataset.tool, index: Number(diff.dataset.diff) });
  const fix = t.closest<HTMLElement>("button.fix");
  if (fix) vscode.postMessage({ type: "fix", kind: fix.dataset.fixKind, command: fix.dataset.command, setting: fix.dataset.setting });
  const path = t.closest<HTMLElement>(".path[data-path]");
  if (path) vscode.postMessage({ type: "openFile", path: path.dataset.path });
});
transcript.addEventListener(
  "toggle",
  (e) => {
    const d = e.target as HTMLDetailsElement;
    const key = d.dataset.key;
    if (!key) return;
    if (d.open) openDetails.add(key);
    else openDetails.delete(key);
  },
  true,
);
document.getElementById("pickers")!.addEventListener("change", (e) => {
  const s = e.target as HTMLSelectElement;
  vscode.postMessage({ type: "setConfig", configId: s.dataset.config, value: s.value });
});
/** The history list as last sent (session/list), newest first as the agent sends them. */
let past: { sessions: PastSession[]; current: string | null; canRename: boolean; canDelete: boolean } = { sessions: [], current: null, canRename: false, canDelete: false };

historyBox.innerHTML = `<div class="history-title"><span>Past chats in this folder</span><button id="history-close" class="secondary" aria-label="Close past chats" title="Close">×</button></div>
<input id="history-search" type="search" placeholder="Search by title" aria-label="Search past chats by title"><div id="history-list"></div>`;
const historySearch = document.getElementById("history-search") as HTMLInputElement;
const historyList = document.getElementById("history-list")!;

/** The rows that match the search box (its text stays as the list is sent again). */
function renderHistory(): void {
  const shown = filterSessions(past.sessions, historySearch.value);
  const rows = shown
    .map((s) => {
      const name = esc(s.title);
      const tools =
        (past.canRename ? `<button class="session-rename secondary" data-session="${esc(s.sessionId)}" aria-label="Rename ${name}" title="Rename">Rename</button>` : "") +
        (past.canDelete ? `<button class="session-delete secondary" data-session="${esc(s.sessionId)}" aria-label="Delete ${name}" title="Delete">Delete</button>` : "");
      return `<li data-session="${esc(s.sessionId)}"><button class="session${s.sessionId === past.current ? " current" : ""}" data-session="${esc(s.sessionId)}" title="${esc(s.sessionId)}">
        <span class="stitle">${name}</span><span class="sdate">${esc(s.updatedAt ? new Date(s.updatedAt).toLocaleString() : "")}</span></button>${tools}</li>`;
    })
    .join("");
  historyList.innerHTML = rows
    ? `<ul>${rows}</ul>`
    : `<div class="empty">${past.sessions.length ? "No past chat matches the search." : "No past chats in this folder yet."}</div>`;
}
historySearch.addEventListener("input", renderHistory);
historySearch.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && historySearch.value) {
    e.preventDefault();
    e.stopPropagation();
    historySearch.value = "";
    renderHistory();
  }
});
historyBox.addEventListener("click", (e) => {
  const t = e.target as HTMLElement;
  const titleOf = (id: string | undefined) => past.sessions.find((s) => s.sessionId === id)?.title ?? "";
  const rename = t.closest<HTMLElement>("button.session-rename");
  if (rename) vscode.postMessage({ type: "renameSession", sessionId: rename.dataset.session, title: titleOf(rename.dataset.session) });
  const del = t.closest<HTMLElement>("button.session-delete");
  if (del) vscode.postMessage({ type: "deleteSession", sessionId: del.dataset.session, title: titleOf(del.dataset.session) });
  const pick = t.closest<HTMLElement>("button.session");
  if (pick) vscode.postMessage({ type: "loadSession", sessionId: pick.dataset.session });
  if (pick || t.closest("#history-close")) historyBox.hidden = true;
});

window.addEventListener("message", (e: MessageEvent<ToWebview>) => {
  const m = e.data;
  if (m.type === "state") {
    if (state && m.state.sessionId !== state.sessionId) historyBox.hidden = true;
    state = m.state;
    render();
  } else if (m.type === "sessions") {
    past = { sessions: m.sessions, current: m.current, canRename: !!m.canRename, canDelete: !!m.canDelete };
    renderHistory();
    historyBox.hidden = false;
  }
  else if (m.type === "focus") promptBox.focus();
  else context.onMessage(m);
});
vscode.postMessage({ type: "ready" });

// The transcript: the view model's items drawn incrementally (only items whose data changed
// are touched, and inside one only the top-level children that differ, so a streaming message
// changes only in its last block and a focused button or a selection survives), follow mode
// (`followMode.ts`) after each draw, the first-run welcome, and the clicks on the cards' buttons.
import { escapeHtml as esc } from "../markdown";
import { PRESETS, type ProviderChoice } from "../providers";
import type { ViewState } from "../viewModel";
import type { FromWebview } from "../webviewMessages";
import { openDetails, rejectedHunks, renderItem, wholeDiffs } from "./cards";
import { followMode } from "./followMode";

export interface TranscriptView {
  /** Draws `s` (what changed since the last call). */
  render(s: ViewState): void;
  /** Back to follow mode (the user sent something: show the answer as it comes). */
  followLatest(): void;
}

export function transcriptView(transcript: HTMLElement, jumpBtn: HTMLButtonElement, post: (m: FromWebview) => void): TranscriptView {
  /** The state last drawn (a reader's toggle draws it again). */
  let last: ViewState | null = null;

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
      ${test}${s.setup.held ? `<p class="setup-held" role="status">Your message is kept and sent once Corvid is connected: “${esc(s.setup.held.length > 80 ? `${s.setup.held.slice(0, 79)}…` : s.setup.held)}”</p>` : ""}</div>`;
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
    if (last) render(last);
  }

  /** What is drawn for each item: its data as last drawn and its element (index = item index). */
  let drawn: { sig: string; el: HTMLElement }[] = [];
  let drawnSession: string | null = null;
  /** Follow mode: keep the newest content in view unless the reader scrolled up. */
  const follow = followMode(transcript, jumpBtn);

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

  /** Draws the transcript incrementally: only items whose data changed are touched. */
  function render(s: ViewState): void {
    last = s;
    if (s.sessionId !== drawnSession || s.items.length < drawn.length) {
      transcript.replaceChildren();
      drawn = [];
      drawnSession = s.sessionId;
      follow.follow();
    }
    // A redrawn card replaces the button that had the focus (a hunk's toggle): the focus goes to
    // the new button with the same `data-focus-key`, so the keyboard stays where it was.
    const focusKey = (document.activeElement as HTMLElement | null)?.dataset?.focusKey;
    renderWelcome(s);
    const empty = transcript.querySelector(":scope > .empty");
    if ((s.items.length || s.setup) && empty) empty.remove();
    if (!s.items.length && !s.setup && !empty) transcript.insertAdjacentHTML("afterbegin", `<div class="empty">Ask Corvid to read, change or explain code in this workspace.</div>`);
    const changed: HTMLElement[] = [];
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
      changed.push(drawn[i].el);
    });
    const active = document.activeElement;
    if (focusKey && (!active || active === document.body || !active.isConnected))
      transcript.querySelector<HTMLElement>(`[data-focus-key="${CSS.escape(focusKey)}"]`)?.focus();
    // A command's card shows its newest lines, running or ended (where a failure's summary is),
    // whenever it is drawn or changes; a card the reader scrolled stays put until it changes.
    for (const el of changed) el.querySelectorAll<HTMLElement>("pre.out.terminal").forEach((pre) => (pre.scrollTop = pre.scrollHeight));
    follow.contentChanged();
  }

  transcript.addEventListener("click", (e) => {
    const t = e.target as HTMLElement;
    const codeButton = t.closest<HTMLButtonElement>("button.code-copy, button.code-insert");
    if (codeButton) {
      const text = codeButton.closest(".codeblock")?.querySelector("pre code")?.textContent ?? "";
      const copy = codeButton.classList.contains("code-copy");
      // Copy: the webview's own clipboard (a click is a user gesture here), else VS Code's.
      if (!copy) post({ type: "insertCode", text });
      else if (navigator.clipboard) navigator.clipboard.writeText(text).catch(() => post({ type: "copyCode", text }));
      else post({ type: "copyCode", text });
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
      post({ type: "permission", requestId, optionId: perm.dataset.option, rejectedHunks: rejected });
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
    const rewind = t.closest<HTMLButtonElement>("button.rewind");
    if (rewind && !last?.busy && last?.canRewind) post({ type: "rewind", messageId: rewind.dataset.message });
    const undo = t.closest<HTMLButtonElement>("button.undo-turn");
    if (undo && !last?.busy) post({ type: "undoTurn", turn: Number(undo.dataset.turn) });
    const proposed = t.closest<HTMLElement>("button.open-proposed");
    if (proposed) post({ type: "openProposedDiff", requestId: Number(proposed.dataset.request), index: Number(proposed.dataset.diff) });
    const toggle = t.closest<HTMLElement>("button.pdiff-toggle");
    if (toggle) {
      const key = toggle.dataset.whole!;
      if (wholeDiffs.has(key)) wholeDiffs.delete(key);
      else wholeDiffs.add(key);
      redrawItemOf(toggle);
    }
    const openTerminal = t.closest<HTMLElement>("button.open-terminal");
    if (openTerminal) post({ type: "openTerminal", toolCallId: openTerminal.dataset.tool, index: Number(openTerminal.dataset.terminal) });
    const provider = t.closest<HTMLElement>("button.setup-provider");
    if (provider) post({ type: "setupProvider", choice: provider.dataset.choice });
    if (t.closest("button.setup-key")) post({ type: "setupKey" });
    if (t.closest("button.setup-test-button")) post({ type: "testConnection" });
    const diff = t.closest<HTMLElement>("button.open-diff");
    if (diff) post({ type: "openDiff", toolCallId: diff.dataset.tool, index: Number(diff.dataset.diff) });
    const fix = t.closest<HTMLElement>("button.fix");
    if (fix) post({ type: "fix", kind: fix.dataset.fixKind, command: fix.dataset.command, setting: fix.dataset.setting });
    const path = t.closest<HTMLElement>(".path[data-path]");
    if (path) post({ type: "openFile", path: path.dataset.path });
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

  return {
    render,
    followLatest: () => follow.follow(),
  };
}

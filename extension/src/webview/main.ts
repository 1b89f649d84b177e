// The chat webview: draws the view model the extension posts, sends user actions back. The page
// is a few components, each owning its part of the DOM and its keys: the transcript
// (`transcript.ts`, cards from `cards.ts`), the composer (`composer.ts`, with the `@` context
// in `composerContext.ts`) and the history list (`history.ts`); this file lays them out, draws
// the toolbar and routes the host's messages; `pendingSight.ts` tells the host which pending
// permission cards are on screen. All agent text goes through the escaping
// Markdown renderer; no raw HTML is ever inserted.
import { escapeHtml as esc } from "../markdown";
import { lastPrompt, modelWithoutImages, type ViewState } from "../viewModel";
import type { ToWebview } from "../webviewMessages";
import { composer, type VsCodeApi } from "./composer";
import { composerContext } from "./composerContext";
import { historyList } from "./history";
import { pendingSight } from "./pendingSight";
import { transcriptView } from "./transcript";
import { changedFilesView } from "./changedFiles";

declare function acquireVsCodeApi(): VsCodeApi;
const vscode = acquireVsCodeApi();

const app = document.getElementById("app")!;
app.innerHTML = `
<div class="toolbar" role="toolbar" aria-label="Session settings"><span id="pickers"></span><span id="usage" class="usage"></span></div>
<div id="history" class="history" role="region" aria-label="Past chats" hidden></div>
<div class="transcript-wrap"><div id="transcript" class="transcript" role="log" aria-live="polite" aria-label="Conversation" tabindex="0"></div>
<button id="jump" class="jump" hidden aria-label="Jump to latest message" title="Scroll to the newest message">↓ Jump to latest</button></div>
<div id="changes" class="changes" role="region" aria-label="Changed files" hidden></div>
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

const byId = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const promptBox = byId<HTMLTextAreaElement>("prompt");
const stopBtn = byId<HTMLButtonElement>("stop");
const sendBtn = byId<HTMLButtonElement>("send");
const retryBtn = byId<HTMLButtonElement>("retry");
const editLastBtn = byId<HTMLButtonElement>("edit-last");
const mentionsBox = byId("mentions");
let state: ViewState | null = null;
const post = (m: Parameters<VsCodeApi["postMessage"]>[0]) => vscode.postMessage(m);

const context = composerContext({
  promptBox,
  popup: mentionsBox,
  chipsBox: byId("chips"),
  note: byId("composer-note"),
  post,
  caps: () => state?.promptCaps,
  modelWithoutImages: () => (state ? modelWithoutImages(state) : null),
});
const transcript = transcriptView(byId("transcript"), byId<HTMLButtonElement>("jump"), post);
const input = composer(
  { promptBox, commandsBox: byId("commands"), mentionsBox, sendBtn, stopBtn, retryBtn, editLastBtn },
  { vscode, context, state: () => state, onSend: () => transcript.followLatest() },
);
const history = historyList(byId("history"), post);
const changes = changedFilesView(byId("changes"), post);
const sight = pendingSight(byId("transcript"), post);

/** The toolbar (pickers, usage), the status line and the composer's buttons, from the state. */
function render(): void {
  if (!state) return;
  transcript.render(state);
  sight.sync();
  changes.render(state.changedFiles);

  const pickers = state.config
    .map(
      (c) => `<label title="${esc(c.name)}">${esc(c.name)} <select data-config="${esc(c.id)}" aria-label="${esc(c.name)}">${c.options
        .map((o) => `<option value="${esc(o.value)}"${o.value === c.currentValue ? " selected" : ""}>${esc(o.name)}</option>`)
        .join("")}</select></label>`,
    )
    .join("");
  // Redrawn only when they change, so a picker keeps the focus while a turn streams.
  const pickerBox = byId("pickers");
  if (pickerBox.dataset.html !== pickers) {
    pickerBox.innerHTML = pickers;
    pickerBox.dataset.html = pickers;
  }

  const u = state.usage;
  byId("usage").textContent = u
    ? `${u.used.toLocaleString()} / ${u.size.toLocaleString()} tokens${u.cost ? ` · ${u.cost.amount.toFixed(4)} ${u.cost.currency}` : ""}`
    : "";
  byId("status").textContent = state.busy ? "Working…" : state.agentState === "ready" ? "" : state.agentState;
  stopBtn.style.display = state.busy ? "" : "none";
  // Retry and Edit last: after any turn, not while one runs.
  const canRepeat = !state.busy && state.agentState !== "loading" && lastPrompt(state) !== null;
  retryBtn.style.display = editLastBtn.style.display = canRepeat ? "" : "none";
  sendBtn.disabled = state.busy;
  document.body.dataset.busy = String(state.busy);
  document.body.dataset.rewind = String(!!state.canRewind);
  document.body.dataset.session = state.sessionId ?? "";
  document.body.dataset.lastStop = state.lastStop ?? "";
  input.renderCommands();
  context.modelChanged();
}

byId("pickers").addEventListener("change", (e) => {
  const s = e.target as HTMLSelectElement;
  post({ type: "setConfig", configId: s.dataset.config, value: s.value });
});

window.addEventListener("message", (e: MessageEvent<ToWebview>) => {
  const m = e.data;
  if (m.type === "state") {
    if (state && m.state.sessionId !== state.sessionId) history.hide();
    state = m.state;
    render();
  } else if (m.type === "sessions") history.show(m);
  else if (m.type === "focus") promptBox.focus();
  else if (m.type === "draft") {
    promptBox.value = m.text;
    promptBox.focus();
    promptBox.setSelectionRange(m.text.length, m.text.length);
  }
  else if (m.type === "showRequest") sight.show(Number(m.requestId));
  else context.onMessage(m);
});
post({ type: "ready" });

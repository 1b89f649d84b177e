// The history list: this folder's past chats (session/list) with a search by title, and
// Rename, Delete and Load sent to the host. Shown when the host sends the list.
import { escapeHtml as esc } from "../markdown";
import { filterSessions, type PastSession } from "../viewModel";
import type { FromWebview, ToWebview } from "../webviewMessages";

export interface HistoryList {
  /** The list the host sent: drawn (through the search's text) and shown. */
  show(m: Extract<ToWebview, { type: "sessions" }>): void;
  hide(): void;
}

/** A past chat's last change, short: "12/7/26, 6:13 AM" (the row's second line). */
function shortDate(updatedAt: string): string {
  const d = new Date(updatedAt);
  return Number.isNaN(d.getTime()) ? "" : d.toLocaleString(undefined, { dateStyle: "short", timeStyle: "short" });
}

export function historyList(historyBox: HTMLElement, post: (m: FromWebview) => void): HistoryList {
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
          (past.canRename ? `<button class="session-rename secondary" data-session="${esc(s.sessionId)}" aria-label="Rename ${name}" title="Rename">✎</button>` : "") +
          (past.canDelete ? `<button class="session-delete secondary" data-session="${esc(s.sessionId)}" aria-label="Delete ${name}" title="Delete">✕</button>` : "");
        return `<li data-session="${esc(s.sessionId)}"><button class="session${s.sessionId === past.current ? " current" : ""}" data-session="${esc(s.sessionId)}" title="${esc(s.sessionId)}">
          <span class="stitle">${name}</span><span class="sdate">${esc(s.updatedAt ? shortDate(s.updatedAt) : "")}</span></button>${tools}</li>`;
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
    if (rename) post({ type: "renameSession", sessionId: rename.dataset.session, title: titleOf(rename.dataset.session) });
    const del = t.closest<HTMLElement>("button.session-delete");
    if (del) post({ type: "deleteSession", sessionId: del.dataset.session, title: titleOf(del.dataset.session) });
    const pick = t.closest<HTMLElement>("button.session");
    if (pick) post({ type: "loadSession", sessionId: pick.dataset.session });
    if (pick || t.closest("#history-close")) historyBox.hidden = true;
  });

  return {
    show(m) {
      past = { sessions: m.sessions, current: m.current, canRename: !!m.canRename, canDelete: !!m.canDelete };
      renderHistory();
      historyBox.hidden = false;
    },
    hide() {
      historyBox.hidden = true;
    },
  };
}

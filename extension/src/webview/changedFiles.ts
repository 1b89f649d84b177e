// The chat's list of files the agent changed that are still under review in the editor: each
// with its count, opened by its name, kept or undone as a whole; Keep All / Undo All for every
// file. Per-change Keep / Undo lives in the editor (CodeLens above each change).
import { escapeHtml as esc } from "../markdown";
import type { ChangedFile } from "../viewModel";
import type { FromWebview } from "../webviewMessages";

export function changedFilesView(box: HTMLElement, post: (m: FromWebview) => void) {
  box.addEventListener("click", (e) => {
    const b = (e.target as HTMLElement).closest<HTMLButtonElement>("button");
    if (!b) return;
    if (b.dataset.open) post({ type: "openFile", path: b.dataset.open });
    else if (b.dataset.review) post({ type: "review", action: b.dataset.review, path: b.dataset.path });
  });
  return {
    render(files: ChangedFile[] | undefined): void {
      const list = files ?? [];
      const html = list.length ? markup(list) : "";
      // Redrawn only when it changes, so a button keeps the focus while a turn streams.
      if (box.dataset.html === html) return;
      box.dataset.html = html;
      box.innerHTML = html;
      box.hidden = !list.length;
    },
  };
}

function markup(files: ChangedFile[]): string {
  const n = files.length;
  const rows = files
    .map((f) => {
      const name = f.path.split("/").pop() ?? f.path;
      const what = f.created ? "new file" : `${f.changes} change${f.changes === 1 ? "" : "s"}`;
      return `<li class="changed-file"><button class="link cf-open" data-open="${esc(f.path)}" title="${esc(f.path)}">${esc(name)}</button><span class="cf-count">${what}</span>
        <span class="cf-actions"><button class="secondary" data-review="keep" data-path="${esc(f.path)}" aria-label="Keep Corvid's changes to ${esc(name)}">Keep</button><button class="secondary" data-review="undo" data-path="${esc(f.path)}" aria-label="Undo Corvid's changes to ${esc(name)}">Undo</button></span></li>`;
    })
    .join("");
  return `<div class="cf-head"><span class="cf-title">${n} file${n === 1 ? "" : "s"} changed</span><span class="cf-actions">
    <button class="secondary" data-review="keep" aria-label="Keep all of Corvid's changes">Keep all</button><button class="secondary" data-review="undo" aria-label="Undo all of Corvid's changes">Undo all</button></span></div>
    <ul class="cf-list">${rows}</ul>`;
}

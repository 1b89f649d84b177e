// The context of the message being written: the `@` completion popup, the chips above the
// input (current file and selection from the editor, added selections, images) and pasted or
// dropped images. The host answers `@` queries and reads the attached text when sending.
import { escapeHtml as esc } from "../markdown";
import { activeMentions, attachmentKey, imageProblem, insertMention, mentionAt, mentionToken, type Attachment, type PromptCaps } from "../context";
import type { FromWebview, ToWebview } from "../webviewMessages";

interface MentionItem {
  label: string;
  detail: string;
  attachment: Attachment;
}

export interface ComposerContext {
  /** Keys the popup takes (arrows, Enter, Tab, Escape); true when it took this one. */
  handleKey(e: KeyboardEvent): boolean;
  /** Messages from the host it handles ("mentions", "editor", "attach"); true when handled. */
  onMessage(m: ToWebview): boolean;
  /** What to send with the text now in the input. */
  attachments(text: string): Attachment[];
  /** The message `text` went: its chips and mentions are spent (kept for Edit last), removed chips come back. */
  sent(text: string): void;
  /**
   * Edit last: the context `text` was sent with comes back (its chips, its mentions; the
   * editor's chips it did not have are left out), so sending it again sends the same. False when
   * this page did not send `text` last (then only the text comes back).
   */
  restore(text: string): boolean;
  /** The input's text or caret moved: the popup follows. */
  inputChanged(): void;
  /** The session's model may have changed: image chips warn when it takes no images. */
  modelChanged(): void;
}

export function composerContext(opts: {
  promptBox: HTMLTextAreaElement;
  popup: HTMLElement;
  chipsBox: HTMLElement;
  note: HTMLElement;
  post(m: FromWebview): void;
  caps(): PromptCaps | undefined;
  /** The session's model if it takes no images (its name), else null. */
  modelWithoutImages(): string | null;
}): ComposerContext {
  const { promptBox, popup, chipsBox, note, post } = opts;
  /** The active editor's file and selection (from the host). */
  let editor: { file: Attachment | null; selection: Attachment | null } = { file: null, selection: null };
  /** Editor chips the user removed from this message (by key). */
  const removed = new Set<string>();
  /** Chips added to this message: selections (Add Selection to Chat) and images. */
  let added: Attachment[] = [];
  /** Picked mentions: their token in the text and what they attach. */
  let mentions: { token: string; attachment: Attachment }[] = [];
  let items: MentionItem[] = [];
  let active = 0;
  /** The `@` word being completed (where it starts), or null when the popup is closed. */
  let at: { start: number; query: string } | null = null;
  let dismissedAt = -1;
  let queryId = 0;
  let queryTimer: ReturnType<typeof setTimeout> | null = null;
  let imageCount = 0;
  /** The last message sent from this page: its text, chips and mentions (Edit last). */
  let lastSent: { text: string; chips: Attachment[]; mentions: { token: string; attachment: Attachment }[] } | null = null;

  function chips(): Attachment[] {
    const seen = new Set<string>();
    return [editor.file, editor.selection, ...added].filter((a): a is Attachment => {
      if (!a || removed.has(attachmentKey(a)) || seen.has(attachmentKey(a))) return false;
      seen.add(attachmentKey(a));
      return true;
    });
  }

  function say(text: string): void {
    note.textContent = text;
    note.hidden = !text;
  }

  /** The model the chips were last drawn for, if it takes no images. */
  let textOnly: string | null = null;

  function renderChips(): void {
    const editorKeys = new Set([editor.file, editor.selection].filter(Boolean).map((a) => attachmentKey(a!)));
    textOnly = opts.modelWithoutImages();
    const images = chips().filter((a) => a.kind === "image").length;
    // Said where it happens: the image is not lost, but the model cannot see it.
    if (images && textOnly) say(`${textOnly} takes no images: ${images === 1 ? "the image reaches it" : "the images reach it"} only as a saved file's path. Pick a model that takes images to show ${images === 1 ? "it" : "them"}.`);
    else if (note.dataset.images) say("");
    note.dataset.images = images && textOnly ? "1" : "";
    chipsBox.innerHTML = chips()
      .map((a) => {
        const key = attachmentKey(a);
        const label = a.kind === "file" && editorKeys.has(key) ? "Current file" : a.kind === "selection" && editorKeys.has(key) ? "Current selection" : a.kind === "image" ? "Image" : a.kind === "selection" ? "Selection" : "File";
        const thumb = a.kind === "image" ? `<img class="thumb" alt="" src="data:${esc(a.mimeType)};base64,${esc(a.data)}">` : "";
        // The editor's chips say so: they change with the editor, the others stay.
        const current = label.startsWith("Current") ? `<span class="chip-hint">current</span>` : "";
        const blind = a.kind === "image" && textOnly ? `<span class="chip-hint chip-warn" title="${esc(textOnly)} takes no images: it gets the saved file's path">path only</span>` : "";
        return `<span class="chip${current ? " current" : ""}${blind ? " warn" : ""}" role="listitem" data-kind="${esc(a.kind)}" data-key="${esc(key)}" title="${esc(label)}: ${esc(a.name)}">${thumb}<span class="chip-name">${esc(a.name)}</span>${current}${blind}<button class="chip-remove" data-key="${esc(key)}" aria-label="Remove ${esc(label.toLowerCase())} ${esc(a.name)} from this message" title="Remove">×</button></span>`;
      })
      .join("");
    chipsBox.hidden = !chipsBox.children.length;
  }

  function renderPopup(): void {
    const open = at !== null && items.length > 0;
    popup.hidden = !open;
    popup.innerHTML = open
      ? items
          .map(
            (it, i) =>
              `<div class="mention${i === active ? " active" : ""}" id="mention-${i}" role="option" aria-selected="${i === active}" data-index="${i}"><span class="mkind">${esc(it.attachment.kind)}</span> <b>${esc(it.label)}</b> <span class="mdetail">${esc(it.detail)}</span></div>`,
          )
          .join("")
      : "";
    promptBox.setAttribute("aria-expanded", String(open));
    if (open) {
      promptBox.setAttribute("aria-activedescendant", `mention-${active}`);
      popup.querySelector(".mention.active")?.scrollIntoView({ block: "nearest" });
    } else if (promptBox.getAttribute("aria-activedescendant")?.startsWith("mention-")) promptBox.removeAttribute("aria-activedescendant");
  }

  function close(): void {
    at = null;
    items = [];
    renderPopup();
  }

  function pick(i: number): void {
    const it = items[i];
    if (!it || !at) return;
    const token = mentionToken(it.label.replace(/\/$/, ""));
    const next = insertMention(promptBox.value, at.start, promptBox.selectionStart, token);
    promptBox.value = next.text;
    promptBox.setSelectionRange(next.caret, next.caret);
    mentions.push({ token, attachment: it.attachment });
    close();
    promptBox.focus();
  }

  function inputChanged(): void {
    const found = mentionAt(promptBox.value, promptBox.selectionStart);
    if (!found || found.start === dismissedAt) {
      if (at) close();
      return;
    }
    if (at && at.start === found.start && at.query === found.query) return;
    at = found;
    const id = ++queryId;
    if (queryTimer) clearTimeout(queryTimer);
    queryTimer = setTimeout(() => post({ type: "mentionQuery", id, query: found.query }), 60);
  }

  /** Images from a paste or a drop: read as base64 and shown as chips. */
  function addImages(files: File[]): void {
    for (const f of files) {
      const problem = imageProblem(f.size, f.type, opts.caps());
      if (problem) {
        say(problem);
        continue;
      }
      const reader = new FileReader();
      reader.onload = () => {
        const url = String(reader.result);
        const data = url.slice(url.indexOf(",") + 1);
        added.push({ kind: "image", id: `img${++imageCount}`, name: f.name || `pasted-image-${imageCount}.${f.type.split("/")[1] ?? "png"}`, mimeType: f.type, data });
        say("");
        renderChips();
      };
      reader.onerror = () => say(`Could not read ${f.name || "the image"}.`);
      reader.readAsDataURL(f);
    }
  }

  const imagesIn = (dt: DataTransfer | null) => Array.from(dt?.files ?? []).filter((f) => f.type.startsWith("image/"));
  promptBox.addEventListener("paste", (e) => {
    const images = imagesIn(e.clipboardData);
    if (!images.length) return; // text pastes as usual
    e.preventDefault();
    addImages(images);
  });
  const composer = promptBox.parentElement!;
  composer.addEventListener("dragover", (e) => {
    if (e.dataTransfer?.types.includes("Files")) e.preventDefault();
  });
  composer.addEventListener("drop", (e) => {
    const images = imagesIn(e.dataTransfer);
    if (!images.length) return;
    e.preventDefault();
    addImages(images);
  });
  chipsBox.addEventListener("click", (e) => {
    const b = (e.target as HTMLElement).closest<HTMLElement>("button.chip-remove");
    if (!b) return;
    const key = b.dataset.key!;
    added = added.filter((a) => attachmentKey(a) !== key);
    removed.add(key);
    renderChips();
    // The focus goes to the next chip's button, else the input (it was on the removed button).
    (chipsBox.querySelector<HTMLElement>("button.chip-remove") ?? promptBox).focus();
  });
  popup.addEventListener("mousedown", (e) => e.preventDefault()); // keep the focus in the input
  popup.addEventListener("click", (e) => {
    const el = (e.target as HTMLElement).closest<HTMLElement>("[data-index]");
    if (el) pick(Number(el.dataset.index));
  });
  for (const ev of ["click", "keyup"]) promptBox.addEventListener(ev, (e) => {
    if (ev === "keyup" && ["ArrowUp", "ArrowDown", "Enter", "Tab", "Escape"].includes((e as KeyboardEvent).key)) return;
    inputChanged();
  });

  renderChips();
  return {
    handleKey(e) {
      if (at === null || !items.length) return false;
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        active = (active + (e.key === "ArrowDown" ? 1 : items.length - 1)) % items.length;
        renderPopup();
      } else if ((e.key === "Enter" && !e.shiftKey) || e.key === "Tab") pick(active);
      else if (e.key === "Escape") {
        dismissedAt = at.start;
        close();
        e.stopPropagation();
      } else return false;
      e.preventDefault();
      return true;
    },
    onMessage(m) {
      if (m.type === "mentions") {
        if (m.id !== queryId || at === null) return true;
        items = m.items ?? [];
        active = 0;
        renderPopup();
      } else if (m.type === "editor") {
        editor = { file: m.file ?? null, selection: m.selection ?? null };
        renderChips();
      } else if (m.type === "attach") {
        const a = m.attachment as Attachment;
        if (!added.some((x) => attachmentKey(x) === attachmentKey(a))) added.push(a);
        removed.delete(attachmentKey(a));
        renderChips();
      } else return false;
      return true;
    },
    attachments(text) {
      return [...chips(), ...activeMentions(text, mentions).map((m) => m.attachment)];
    },
    sent(text) {
      lastSent = { text, chips: chips(), mentions: activeMentions(text, mentions) };
      added = [];
      mentions = [];
      removed.clear();
      dismissedAt = -1;
      say("");
      close();
      renderChips();
    },
    restore(text) {
      if (!lastSent || lastSent.text !== text) return false;
      const keep = new Set(lastSent.chips.map(attachmentKey));
      added = [...lastSent.chips];
      mentions = [...lastSent.mentions];
      removed.clear();
      // The editor's chips now that the message did not have (another file is open, or the
      // chip was removed then) stay out: the same context as before.
      for (const a of [editor.file, editor.selection]) if (a && !keep.has(attachmentKey(a))) removed.add(attachmentKey(a));
      say("");
      close();
      renderChips();
      return true;
    },
    inputChanged,
    modelChanged() {
      if (opts.modelWithoutImages() !== textOnly) renderChips();
    },
  };
}

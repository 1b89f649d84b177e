// The composer: the message being written and how it is sent. The slash-command menu and
// prompt recall by keyboard (the `@` popup and the context chips are `composerContext.ts`, which
// takes keys first), Send, Stop (and Escape anywhere in the view), Retry and Edit last.
import { escapeHtml as esc } from "../markdown";
import { lastPrompt, type ViewState } from "../viewModel";
import type { FromWebview } from "../webviewMessages";
import type { ComposerContext } from "./composerContext";

/** The webview's handle on VS Code: messages to the host, and state kept across reloads of the page. */
export interface VsCodeApi {
  postMessage(m: FromWebview): void;
  getState(): any;
  setState(s: unknown): void;
}

export interface ComposerElements {
  promptBox: HTMLTextAreaElement;
  commandsBox: HTMLElement;
  mentionsBox: HTMLElement;
  sendBtn: HTMLButtonElement;
  stopBtn: HTMLButtonElement;
  retryBtn: HTMLButtonElement;
  editLastBtn: HTMLButtonElement;
}

export interface Composer {
  /** The slash menu follows the input and the agent's commands (called on every state). */
  renderCommands(): void;
}

export function composer(
  els: ComposerElements,
  opts: { vscode: VsCodeApi; context: ComposerContext; state: () => ViewState | null; onSend: () => void },
): Composer {
  const { promptBox, commandsBox, mentionsBox, sendBtn, stopBtn, retryBtn, editLastBtn } = els;
  const { vscode, context } = opts;

  /** The slash-command menu: its matches and the one the arrow keys point at. */
  let commandMatches: { name: string; description: string }[] = [];
  let activeCommand = 0;
  /** Escape closed the menu; it stays closed until the input changes. */
  let commandsDismissed = false;

  function renderCommands(): void {
    const state = opts.state();
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
    if (!mentionsBox.hidden) return;
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
    const state = opts.state();
    const text = promptBox.value;
    if (!text.trim() || state?.busy) return;
    vscode.postMessage({ type: "prompt", text, attachments: context.attachments(text) });
    context.sent(text);
    remember(text);
    promptBox.value = "";
    opts.onSend();
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
    const state = opts.state();
    if (!state || state.busy) return;
    opts.onSend();
    vscode.postMessage({ type: "retry" });
  });
  editLastBtn.addEventListener("click", () => {
    const state = opts.state();
    const text = state && lastPrompt(state);
    if (text == null) return;
    // The text, and the chips and mentions it was sent with when this page sent it.
    promptBox.value = text;
    context.restore(text);
    promptBox.focus();
    promptBox.setSelectionRange(text.length, text.length);
    renderCommands();
  });
  // Escape anywhere in the view stops a running turn (the command menu takes it first).
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !e.defaultPrevented && opts.state()?.busy) {
      e.preventDefault();
      vscode.postMessage({ type: "stop" });
    }
  });
  commandsBox.addEventListener("mousedown", (e) => e.preventDefault()); // keep the focus in the input
  commandsBox.addEventListener("click", (e) => {
    const el = (e.target as HTMLElement).closest<HTMLElement>("[data-command]");
    if (el) pickCommand(el.dataset.command!);
  });

  return { renderCommands };
}

// The messages between the extension host and the chat webview, both ways. Types only (no
// code, so the webview's bundle gains nothing). What the webview sends is not trusted: its
// fields are what the page can put there (a dataset value may be missing), and the host
// coerces and checks each one before use.
import type { Attachment } from "./context";
import type { MentionItem } from "./editorContext";
import type { RejectedHunk } from "./hunkReview";
import type { PastSession, ViewState } from "./viewModel";

/** Host → webview. */
export type ToWebview =
  | { type: "state"; state: ViewState }
  | { type: "sessions"; current: string | null; canRename: boolean; canDelete: boolean; sessions: PastSession[] }
  | { type: "focus" }
  | { type: "editor"; file: Attachment | null; selection: Attachment | null }
  | { type: "attach"; attachment: Attachment }
  | { type: "mentions"; id: unknown; items: MentionItem[] }
  | { type: "showRequest"; requestId: number }
  /** Text put in the input to edit and send (a rewound prompt). */
  | { type: "draft"; text: string };

/** Webview → host. */
export type FromWebview =
  | { type: "ready" }
  | { type: "pendingSight"; shown: number[]; onScreen: number[] }
  | { type: "prompt"; text: string; attachments: Attachment[] }
  | { type: "mentionQuery"; id: number; query: string }
  | { type: "stop" }
  | { type: "permission"; requestId: number; optionId?: string; rejectedHunks?: RejectedHunk[] }
  | { type: "openDiff"; toolCallId?: string; index: number }
  | { type: "openProposedDiff"; requestId: number; index: number }
  | { type: "undoTurn"; turn: number }
  | { type: "rewind"; messageId?: string }
  | { type: "review"; action?: string; path?: string }
  | { type: "setConfig"; configId?: string; value: string }
  | { type: "newChat" }
  | { type: "copyCode"; text: string }
  | { type: "insertCode"; text: string }
  | { type: "openFile"; path?: string }
  | { type: "history" }
  | { type: "loadSession"; sessionId?: string }
  | { type: "retry" }
  | { type: "fix"; kind?: string; command?: string; setting?: string }
  | { type: "renameSession"; sessionId?: string; title: string }
  | { type: "deleteSession"; sessionId?: string; title: string }
  | { type: "openTerminal"; toolCallId?: string; index: number }
  | { type: "setupProvider"; choice?: string }
  | { type: "setupKey" }
  | { type: "testConnection" };

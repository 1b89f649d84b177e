// Context for a prompt: `@` mentions, the context chips (current file, selection, images) and
// how they become ACP content blocks. Pure (no `vscode`, no DOM): the webview and the host share
// it, and it is unit-tested directly.
import type * as acp from "@agentclientprotocol/sdk";

/** What the agent said it accepts in a prompt (`initialize` → `agentCapabilities.promptCapabilities`). */
export interface PromptCaps {
  image: boolean;
  embeddedContext: boolean;
}

export function promptCapsOf(init: { agentCapabilities?: { promptCapabilities?: { image?: boolean | null; embeddedContext?: boolean | null } | null } | null } | null | undefined): PromptCaps {
  const p = init?.agentCapabilities?.promptCapabilities;
  return { image: !!p?.image, embeddedContext: !!p?.embeddedContext };
}

/** Lines are 1-based and inclusive. */
export interface Lines {
  start: number;
  end: number;
}

/**
 * One piece of context sent with a prompt. A selection's or symbol's `text` may be missing
 * from the webview (the current selection chip): the host reads it when the prompt is sent.
 * A file's `text` is filled by the host when it is small enough to embed.
 */
export type Attachment =
  | { kind: "file"; uri: string; name: string; text?: string; mimeType?: string }
  | { kind: "folder"; uri: string; name: string }
  | { kind: "selection" | "symbol"; uri: string; name: string; lines: Lines; text?: string; mimeType?: string }
  | { kind: "image"; id: string; name: string; mimeType: string; data: string }
  /** `@problems`, `@changes`, `@terminal`: what VS Code knows now, read by the host at send. */
  | { kind: "context"; source: ContextSource; uri: string; name: string; text?: string };

/** The editor's own context the `@` popup offers besides files and symbols. */
export type ContextSource = "problems" | "changes" | "terminal";

/** Each context source: its mention name and what the popup says of it. */
export const CONTEXT_SOURCES: { source: ContextSource; detail: string }[] = [
  { source: "problems", detail: "the problems VS Code reports in the open files" },
  { source: "changes", detail: "the working tree's changes (git diff)" },
  { source: "terminal", detail: "the last command's output" },
];

/** The URI a context source's text is embedded under (the chip comes back from it on a replay). */
export function contextUri(source: ContextSource): string {
  return `corvid:${source}`;
}

/** How an attachment shows in the transcript (a chip: kind and name, no content). */
export interface Chip {
  kind: Attachment["kind"];
  name: string;
}

/** Same key, same context: sent once even when it is both a chip and a mention. */
export function attachmentKey(a: Attachment): string {
  if (a.kind === "image") return `image:${a.id}`;
  if (a.kind === "selection" || a.kind === "symbol") return `${a.uri}#L${a.lines.start}-${a.lines.end}`;
  return a.uri;
}

/** A file URI with its lines as a fragment (`#L3-5`), so the agent and the model see where. */
export function withLines(uri: string, lines: Lines): string {
  return `${uri.replace(/#.*$/, "")}#L${lines.start}-${lines.end}`;
}

/**
 * The prompt's content blocks: the text first (the agent titles a session from its first
 * text, and the model reads the question before the material), then the context, each piece
 * once. Only kinds the
 * agent advertises are sent: without `embeddedContext`, text becomes a `resource_link`;
 * without `image`, images are left out and named in `dropped`.
 */
export function contextBlocks(text: string, attachments: Attachment[], caps: PromptCaps): { blocks: acp.ContentBlock[]; dropped: string[] } {
  const blocks: acp.ContentBlock[] = text.trim() ? [{ type: "text", text }] : [];
  const dropped: string[] = [];
  const seen = new Set<string>();
  for (const a of attachments) {
    const key = attachmentKey(a);
    if (seen.has(key)) continue;
    seen.add(key);
    switch (a.kind) {
      case "image":
        if (caps.image) blocks.push({ type: "image", data: a.data, mimeType: a.mimeType });
        else dropped.push(a.name);
        break;
      case "folder":
        blocks.push({ type: "resource_link", uri: a.uri, name: a.name });
        break;
      case "file":
        if (a.text !== undefined && caps.embeddedContext) blocks.push(embedded(a.uri, a.text, a.mimeType));
        else blocks.push({ type: "resource_link", uri: a.uri, name: a.name, ...(a.mimeType ? { mimeType: a.mimeType } : {}) });
        break;
      case "context":
        if (a.text === undefined) break;
        if (caps.embeddedContext) blocks.push(embedded(a.uri, a.text, "text/plain"));
        else blocks.push({ type: "text", text: `@${a.source}:\n${a.text}` });
        break;
      case "selection":
      case "symbol": {
        const uri = withLines(a.uri, a.lines);
        if (a.text !== undefined && caps.embeddedContext) blocks.push(embedded(uri, a.text, a.mimeType));
        else blocks.push({ type: "resource_link", uri, name: a.name });
        break;
      }
    }
  }
  return { blocks, dropped };
}

function embedded(uri: string, text: string, mimeType?: string): acp.ContentBlock {
  return { type: "resource", resource: { uri, text, ...(mimeType ? { mimeType } : {}) } };
}

/** The transcript's chips for what was sent. */
export function chipsOf(attachments: Attachment[]): Chip[] {
  const seen = new Set<string>();
  return attachments.filter((a) => !seen.has(attachmentKey(a)) && seen.add(attachmentKey(a))).map((a) => ({ kind: a.kind, name: a.name }));
}

/** A replayed user content block (`session/load`) as a chip; null for text. */
export function chipOfBlock(block: any): Chip | null {
  if (!block || block.type === "text") return null;
  if (block.type === "image") return { kind: "image", name: "image" };
  const uri: string = block.type === "resource" ? (block.resource?.uri ?? "") : (block.uri ?? "");
  if (uri.startsWith("corvid:")) return { kind: "context", name: uri.slice("corvid:".length) };
  const lines = /#L(\d+)-(\d+)$/.exec(uri);
  const base = decodeURIComponent(uri.replace(/#.*$/, "").replace(/\/+$/, "").split("/").pop() ?? uri);
  if (block.type === "resource_link") return { kind: lines ? "selection" : "file", name: block.name || base };
  if (block.type === "resource") return { kind: lines ? "selection" : "file", name: lines ? `${base}:${lines[1]}-${lines[2]}` : base };
  return { kind: "file", name: String(block.type) };
}

// ---- `@` mentions in the text being written ---------------------------------------------

/** The `@` word the caret is in (after a space or at the start), or null: what to complete. */
export function mentionAt(text: string, caret: number): { start: number; query: string } | null {
  const m = /(^|\s)@([^\s@]*)$/.exec(text.slice(0, caret));
  if (!m) return null;
  return { start: caret - m[2].length - 1, query: m[2] };
}

/** The token a picked mention leaves in the text: `@` and its name, spaces dashed. */
export function mentionToken(name: string): string {
  return `@${name.replace(/\s+/g, "-")}`;
}

/** Inserts `token` (and a space) in place of the `@` word at `start`..`caret`. */
export function insertMention(text: string, start: number, caret: number, token: string): { text: string; caret: number } {
  const before = text.slice(0, start) + token + " ";
  const after = text.slice(caret).replace(/^ /, "");
  return { text: before + after, caret: before.length };
}

/** The mentions whose token is still in the text (a deleted token drops its context). */
export function activeMentions<T extends { token: string }>(text: string, mentions: T[]): T[] {
  return mentions.filter((m) => new RegExp(`(^|\\s)${escapeRegExp(m.token)}(?=$|[\\s.,;:!?)])`).test(text));
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

// ---- ranking of workspace paths ------------------------------------------------------------

/**
 * Scores a workspace-relative path against what was typed after `@` (higher is better, 0: no
 * match). The file name counts more than its folders: an exact name, a name prefix, a name
 * substring, a path substring, then the query's characters in order (fuzzy). Shorter paths
 * win ties.
 */
export function scorePath(query: string, path: string): number {
  const q = query.toLowerCase();
  const p = path.toLowerCase();
  const name = p.slice(p.lastIndexOf("/") + 1);
  const tie = 1 - Math.min(p.length, 200) / 1000;
  if (!q) return 1 + tie;
  if (name === q) return 100 + tie;
  if (name.startsWith(q)) return 80 + tie;
  if (name.includes(q)) return 60 + tie;
  if (p.includes(q)) return 40 + tie;
  let i = 0;
  for (const c of p) if (c === q[i]) i++;
  return i === q.length ? 10 + tie : 0;
}

/** The best `limit` paths for `query`, best first. */
export function rankPaths(query: string, paths: string[], limit: number): string[] {
  return paths
    .map((p) => ({ p, s: scorePath(query, p) }))
    .filter((x) => x.s > 0)
    .sort((a, b) => b.s - a.s || a.p.localeCompare(b.p))
    .slice(0, limit)
    .map((x) => x.p);
}

/** The folders that hold `files` (relative paths), each once: the folder mentions. */
export function foldersOf(files: string[]): string[] {
  const out = new Set<string>();
  for (const f of files) {
    const parts = f.split("/");
    for (let i = 1; i < parts.length; i++) out.add(parts.slice(0, i).join("/"));
  }
  return [...out];
}

/** Largest image accepted from a paste or a drop (the core takes up to 10 MB decoded). */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

/** Why an image cannot be attached, or null when it can. */
export function imageProblem(size: number, mimeType: string, caps: PromptCaps | undefined): string | null {
  if (!mimeType.startsWith("image/")) return null;
  if (!caps?.image) return "This agent does not accept images.";
  if (size > MAX_IMAGE_BYTES) return `The image is ${(size / 1024 / 1024).toFixed(1)} MB; the limit is ${MAX_IMAGE_BYTES / 1024 / 1024} MB.`;
  return null;
}

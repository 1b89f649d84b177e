// The chat's view model: a pure reducer from ACP session updates (and local events) to what
// the webview draws. No `vscode` import, so it is unit-tested directly.
import type { FixAction } from "./fixes";
import { chipOfBlock, type Chip, type PromptCaps } from "./context";
import { tailLines, type ExitStatus } from "./commandOutput";
import { numberList, reviewHunks, type AgentHunk, type RejectedHunk } from "./hunkReview";

/** Lines of a command's output its card shows (the tail; the whole is one click away, in a terminal). */
export const TAIL_LINES = 12;

export type ToolStatus = "pending" | "in_progress" | "completed" | "failed";

export interface DiffContent {
  type: "diff";
  path: string;
  oldText: string | null;
  newText: string;
  /**
   * The agent's numbering of the change's hunks (Corvid's `_meta.corvid.hunks` on a permission
   * question's diff): present when the agent writes the kept hunks of a partial approval itself.
   */
  hunks?: AgentHunk[];
}

/** The agent's hunks from a diff's `_meta`, if they are well formed (else none: no partial approval). */
function coreHunks(meta: any): AgentHunk[] | undefined {
  const list = meta?.corvid?.hunks;
  if (!Array.isArray(list) || !list.length) return undefined;
  const ok = (n: unknown) => Number.isInteger(n) && (n as number) >= 0;
  const hunks = list.map((h) => ({ oldStart: h?.oldStart, oldLines: h?.oldLines, newStart: h?.newStart, newLines: h?.newLines }));
  return hunks.every((h) => ok(h.oldStart) && ok(h.oldLines) && ok(h.newStart) && ok(h.newLines)) ? hunks : undefined;
}
export type ToolContent =
  | { type: "text"; text: string }
  | DiffContent
  // `stored`: the output the agent put in the call's `rawOutput` (Corvid does), for a replayed
  // card whose terminal belonged to an earlier extension host; `storedExit` its exit code.
  // `output` is what the card shows: the last TAIL_LINES lines, `hidden` the lines before them.
  | {
      type: "terminal";
      terminalId: string;
      output?: string;
      hidden?: number;
      exited?: boolean;
      exit?: ExitStatus | null;
      stored?: string;
      storedExit?: ExitStatus | null;
    };

export interface PermissionOption {
  optionId: string;
  name: string;
  kind: string;
}

export type Item =
  /** `attachments`: the context sent with it (files, selections, images), drawn as chips. */
  /** `followUp`: sent by the extension for the user when a turn ended (the rejected hunks of a reviewed edit). */
  /** `messageId`: the prompt's id (sent with it, or replayed), for "Rewind to here". */
  | { kind: "user"; text: string; attachments?: Chip[]; followUp?: boolean; messageId?: string }
  | { kind: "agent"; text: string }
  | { kind: "thought"; text: string }
  | {
      kind: "tool";
      id: string;
      title: string;
      toolKind: string;
      status: ToolStatus;
      content: ToolContent[];
      locations: string[];
      /** A plan update's own call ("Update plan"): drawn as the turn's plan card, not as a card of its own. */
      folded?: boolean;
    }
  | {
      kind: "permission";
      requestId: number;
      toolCallId: string;
      title: string;
      options: PermissionOption[];
      chosen?: string;
      /** The change asked about (the tool call's diffs), shown before the user answers. */
      diffs?: DiffContent[];
      /**
       * An approval with these hunks rejected: `partial`, the agent wrote the others (it numbered
       * the hunks); otherwise answered as a reject, the hunks named in a follow-up prompt.
       */
      rejectedHunks?: RejectedHunk[];
      partial?: boolean;
    }
  /** `actions`: what to do about it in VS Code (an error naming CORVID_API_KEY: Set API Key). */
  | { kind: "notice"; text: string; severity: string; actions?: FixAction[] }
  /** The turn's plan: one card per turn, updated in place by every `plan` update of the turn. */
  | { kind: "plan"; entries: PlanEntry[] }
  /** The end of a turn that wrote files through the editor: "Undo this turn" (`turn` is the host's checkpoint id). */
  | { kind: "checkpoint"; turn: number; files: string[]; undone?: { restored: number; removed: number; conflicts?: number } }
  /** A turn that did not end normally (cancelled, refused, a limit hit); `end_turn` has none. */
  | { kind: "stop"; reason: string };

export interface PlanEntry {
  content: string;
  status: string;
  priority?: string;
}

export interface ConfigSelect {
  id: string;
  name: string;
  category?: string | null;
  currentValue: string;
  /** `images`: a model's, from Corvid's `_meta.corvid.images` (whether it takes images). */
  options: { value: string; name: string; images?: boolean }[];
}

/** The first-run welcome (no model provider configured), with the last connection test. */
export interface SetupView {
  /** The provider VS Code's settings name now, in words. */
  current: string;
  testing?: boolean;
  test?: { ok: boolean; text: string };
  /** A message sent during setup, kept: sent once Corvid is connected. */
  held?: string;
}

export interface ViewState {
  sessionId: string | null;
  agentState: string;
  busy: boolean;
  items: Item[];
  plan: PlanEntry[];
  commands: { name: string; description: string; hint?: string }[];
  config: ConfigSelect[];
  usage: { used: number; size: number; cost?: { amount: number; currency: string } } | null;
  title: string | null;
  lastStop: string | null;
  /** What the agent accepts in a prompt (images, embedded context); set by the host. */
  promptCaps?: PromptCaps;
  /** Set while no model provider is configured: the view shows the welcome, not the chat. */
  setup: SetupView | null;
  /** The files the agent changed that are under review in the editor (Keep / Undo); set by the host. */
  changedFiles?: ChangedFile[];
  /** Whether the agent rewinds to a prompt (each user message offers "Rewind to here"); set by the host. */
  canRewind?: boolean;
}

/** A file under review in the editor, as the chat lists it (`editorReview.ts`). */
export interface ChangedFile {
  path: string;
  changes: number;
  created: boolean;
}

export function initialState(): ViewState {
  return { sessionId: null, agentState: "starting", busy: false, items: [], plan: [], commands: [], config: [], usage: null, title: null, lastStop: null, setup: null };
}

function textOf(content: any): string {
  if (!content) return "";
  if (content.type === "text") return content.text ?? "";
  if (content.type === "resource_link") return `[${content.name ?? content.uri}](${content.uri})`;
  if (content.type === "resource") return content.resource?.uri ? `\`${content.resource.uri}\`` : "";
  return `[${content.type}]`;
}

function toolContent(list: any[] | null | undefined): ToolContent[] {
  const out: ToolContent[] = [];
  for (const c of list ?? []) {
    if (c.type === "diff") {
      const hunks = coreHunks(c._meta);
      out.push({ type: "diff", path: c.path, oldText: c.oldText ?? null, newText: c.newText, ...(hunks ? { hunks } : {}) });
    }
    else if (c.type === "terminal") out.push({ type: "terminal", terminalId: c.terminalId });
    else if (c.type === "content") out.push({ type: "text", text: textOf(c.content) });
  }
  return out;
}

/** Flattens select options (plain or grouped); boolean options are left out of the pickers. */
export function configSelects(options: any[] | null | undefined): ConfigSelect[] {
  const out: ConfigSelect[] = [];
  for (const o of options ?? []) {
    if (o.type !== "select") continue;
    const flat: { value: string; name: string; images?: boolean }[] = [];
    const one = (y: any) => ({ value: y.value, name: y.name, ...(typeof y._meta?.corvid?.images === "boolean" ? { images: y._meta.corvid.images } : {}) });
    for (const x of o.options ?? []) {
      if (Array.isArray(x.options)) for (const y of x.options) flat.push(one(y));
      else flat.push(one(x));
    }
    out.push({ id: o.id, name: o.name, category: o.category ?? null, currentValue: String(o.currentValue), options: flat });
  }
  return out;
}

/** The session's model picker (by category, or an option with the id `model`), if it has one. */
export function modelPicker(state: Pick<ViewState, "config">): ConfigSelect | undefined {
  return state.config.find((o) => o.category === "model" || o.id === "model");
}

/**
 * The session's model when the agent says it takes no images (Corvid's model catalog): an image
 * sent to it reaches it only as the saved file's path. Null when it takes them or nobody says.
 */
export function modelWithoutImages(state: Pick<ViewState, "config">): string | null {
  const picker = modelPicker(state);
  const current = picker?.options.find((o) => o.value === picker.currentValue);
  return current?.images === false ? current.name : null;
}

/** Corvid's `update_plan` call (kind think, "Update plan"): its result is the plan card. */
function isPlanCall(kind: unknown, title: unknown): boolean {
  return kind === "think" && typeof title === "string" && /^update plan$/i.test(title.trim());
}

/** The items of the turn in progress (or the last one): everything after the last user message. */
function currentTurn(state: ViewState): Item[] {
  let start = state.items.length;
  while (start > 0 && state.items[start - 1].kind !== "user") start--;
  return state.items.slice(start);
}

/** Appends streamed text to the last item if it is of the same kind, else starts a new one. */
function appendText(state: ViewState, kind: "agent" | "thought", text: string): void {
  const last = state.items[state.items.length - 1];
  if (last && last.kind === kind) last.text += text;
  else state.items.push({ kind, text });
}

/** Applies one `session/update` payload. Mutates and returns `state`. */
export function applyUpdate(state: ViewState, u: any): ViewState {
  switch (u.sessionUpdate) {
    case "user_message_chunk": {
      // A replayed prompt's context blocks are chips on its message, not text. A chunk with
      // another messageId than the last message's starts a message of its own.
      const chip = chipOfBlock(u.content);
      const messageId = typeof u.messageId === "string" ? u.messageId : undefined;
      const last = state.items[state.items.length - 1];
      const same = last?.kind === "user" && (!messageId || !last.messageId || last.messageId === messageId);
      if (same) {
        if (chip) (last.attachments ??= []).push(chip);
        else last.text += textOf(u.content);
        if (messageId) last.messageId = messageId;
      } else {
        state.items.push({ kind: "user", text: chip ? "" : textOf(u.content), ...(chip ? { attachments: [chip] } : {}), ...(messageId ? { messageId } : {}) });
      }
      break;
    }
    case "agent_message_chunk":
      appendText(state, "agent", textOf(u.content));
      break;
    case "agent_thought_chunk":
      appendText(state, "thought", textOf(u.content));
      break;
    case "tool_call": {
      const existing = state.items.find((i) => i.kind === "tool" && i.id === u.toolCallId);
      const item = {
        kind: "tool" as const,
        id: u.toolCallId,
        title: u.title ?? "tool",
        toolKind: u.kind ?? "other",
        status: (u.status ?? "pending") as ToolStatus,
        content: toolContent(u.content),
        locations: (u.locations ?? []).map((l: any) => l.path),
        ...(isPlanCall(u.kind, u.title) ? { folded: true } : {}),
      };
      if (existing) Object.assign(existing, item);
      else state.items.push(item);
      break;
    }
    case "tool_call_update": {
      let item = state.items.find((i) => i.kind === "tool" && i.id === u.toolCallId) as Extract<Item, { kind: "tool" }> | undefined;
      if (!item) {
        item = { kind: "tool", id: u.toolCallId, title: u.title ?? "tool", toolKind: u.kind ?? "other", status: "pending", content: [], locations: [] };
        state.items.push(item);
      }
      if (u.title != null) item.title = u.title;
      if (u.kind != null) item.toolKind = u.kind;
      if (u.status != null) item.status = u.status;
      if (u.content != null) item.content = toolContent(u.content);
      if (u.locations != null) item.locations = u.locations.map((l: any) => l.path);
      if (typeof u.rawOutput?.output === "string")
        for (const c of item.content)
          if (c.type === "terminal") {
            c.stored = u.rawOutput.output;
            if (typeof u.rawOutput.exitCode === "number" || u.rawOutput.exitCode === null) c.storedExit = { exitCode: u.rawOutput.exitCode, signal: null };
          }
      break;
    }
    case "plan": {
      state.plan = (u.entries ?? []).map((e: any) => ({ content: e.content, status: e.status, priority: e.priority }));
      const card = currentTurn(state).find((i): i is Extract<Item, { kind: "plan" }> => i.kind === "plan");
      if (card) card.entries = state.plan.map((e) => ({ ...e }));
      else state.items.push({ kind: "plan", entries: state.plan.map((e) => ({ ...e })) });
      break;
    }
    case "available_commands_update":
      state.commands = (u.availableCommands ?? []).map((c: any) => ({ name: c.name, description: c.description ?? "", hint: c.input?.hint }));
      break;
    case "config_option_update":
      state.config = configSelects(u.configOptions);
      break;
    case "current_mode_update": {
      const mode = state.config.find((c) => c.category === "mode" || c.id === "mode");
      if (mode) mode.currentValue = u.currentModeId;
      break;
    }
    case "usage_update":
      state.usage = { used: u.used, size: u.size, ...(u.cost ? { cost: { amount: u.cost.amount, currency: u.cost.currency } } : {}) };
      break;
    case "session_info_update":
      if (u.title !== undefined) state.title = u.title;
      break;
    case "notice":
      state.items.push({ kind: "notice", text: u.message ?? u.text ?? "", severity: u.severity ?? "info" });
      break;
    default:
      break;
  }
  return state;
}

/** Adds a pending permission request as an inline item. */
export function addPermission(state: ViewState, requestId: number, params: any): ViewState {
  // The request's tool call carries the proposed change; else the card of that call has it.
  const tool = state.items.find((i) => i.kind === "tool" && i.id === params.toolCall?.toolCallId) as Extract<Item, { kind: "tool" }> | undefined;
  let diffs = toolContent(params.toolCall?.content).filter((c): c is DiffContent => c.type === "diff");
  if (!diffs.length && tool) diffs = tool.content.filter((c): c is DiffContent => c.type === "diff").map((d) => ({ ...d }));
  state.items.push({
    kind: "permission",
    requestId,
    toolCallId: params.toolCall?.toolCallId ?? "",
    title: params.toolCall?.title ?? state.items.find((i) => i.kind === "tool" && i.id === params.toolCall?.toolCallId)?.["title" as never] ?? "Permission",
    options: (params.options ?? []).map((o: any) => ({ optionId: o.optionId, name: o.name, kind: o.kind })),
    ...(diffs.length ? { diffs } : {}),
  });
  return state;
}

/**
 * Records the answer to a permission request ("cancelled" when the turn was stopped), and the
 * hunks an approval rejected (then `chosen` is the reject option).
 */
export function resolvePermission(state: ViewState, requestId: number, chosen: string, rejectedHunks: RejectedHunk[] = [], partial = false): ViewState {
  for (const i of state.items)
    if (i.kind === "permission" && i.requestId === requestId) {
      i.chosen = chosen;
      if (rejectedHunks.length) i.rejectedHunks = rejectedHunks.map((r) => ({ ...r }));
      if (rejectedHunks.length && partial) i.partial = true;
    }
  return state;
}

/** An answered permission request as one line, e.g. "Allowed once", "Rejected", "Cancelled". */
export function permissionSummary(item: Extract<Item, { kind: "permission" }>): string {
  if (item.chosen === undefined) return "";
  if (item.chosen === "cancelled") return "Cancelled";
  if (item.rejectedHunks?.length) {
    const n = item.rejectedHunks.length;
    // Numbered as the card numbered them (per change; Corvid's edits have one).
    const numbers = numberList(item.rejectedHunks.map((r) => r.hunk + 1));
    const total = (item.diffs ?? []).reduce((t, d) => t + (d.oldText == null ? 1 : reviewHunks(d).length), 0);
    if (item.partial) return `Allowed in part: hunk${n === 1 ? "" : "s"} ${numbers} of ${total} rejected, the rest written`;
    return `Rejected hunk${n === 1 ? "" : "s"} ${numbers} of ${total}; a follow-up asks for the edit without ${n === 1 ? "it" : "them"}`;
  }
  const option = item.options.find((o) => o.optionId === item.chosen);
  const byKind: Record<string, string> = { allow_once: "Allowed once", allow_always: "Always allowed", reject_once: "Rejected", reject_always: "Always rejected" };
  return (option && byKind[option.kind]) ?? option?.name ?? item.chosen;
}

/**
 * A turn's end: the stop reason is kept, and a turn that did not end normally (cancelled,
 * refused, a limit hit) leaves a line in the transcript. A normal end (`end_turn`) leaves none,
 * nor does "error", whose message is already a notice.
 */
export function endTurn(state: ViewState, stopReason: string): ViewState {
  state.lastStop = stopReason;
  if (stopReason !== "end_turn" && stopReason !== "error") state.items.push({ kind: "stop", reason: stopReason });
  return state;
}

/** A turn that wrote files ends with its checkpoint ("Undo this turn"); one that wrote none, with none. */
export function addCheckpoint(state: ViewState, turn: number, files: string[]): ViewState {
  if (files.length) state.items.push({ kind: "checkpoint", turn, files: [...files] });
  return state;
}

/** What a checkpoint line says. */
export function checkpointText(item: Extract<Item, { kind: "checkpoint" }>): string {
  const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? "" : "s"}`;
  if (item.undone) {
    const kept = item.undone.conflicts ?? 0;
    const parts = [
      item.undone.restored ? `${plural(item.undone.restored, "file")} restored` : "",
      item.undone.removed ? `${plural(item.undone.removed, "created file")} removed` : "",
      kept ? `${plural(kept, "file")} you changed since left as ${kept === 1 ? "it is" : "they are"}` : "",
    ];
    return `Turn undone: ${parts.filter(Boolean).join(", ")}.`;
  }
  return `This turn changed ${plural(item.files.length, "file")}: ${item.files.map((f) => f.split("/").pop()).join(", ")}`;
}

/** What a stop item says. */
export function stopText(reason: string): string {
  const known: Record<string, string> = {
    cancelled: "Turn cancelled.",
    refusal: "The model refused to continue.",
    max_tokens: "Turn ended: the model reached its output limit.",
    max_turn_requests: "Turn ended: too many model requests in one turn.",
  };
  return known[reason] ?? `Turn ended: ${reason.replace(/_/g, " ")}.`;
}

/** Pending permission requests (unanswered). */
export function pendingPermissions(state: ViewState): number[] {
  return state.items.filter((i): i is Extract<Item, { kind: "permission" }> => i.kind === "permission" && i.chosen === undefined).map((i) => i.requestId);
}

/** The pending permission requests with their titles (the alerts of a request the user cannot see). */
export function pendingRequests(state: ViewState): { id: number; title: string }[] {
  return state.items.filter((i): i is Extract<Item, { kind: "permission" }> => i.kind === "permission" && i.chosen === undefined).map((i) => ({ id: i.requestId, title: i.title }));
}

/** Finds a diff for "Open diff": the `index`-th diff of a tool call. */
export function findDiff(state: ViewState, toolCallId: string, index = 0): DiffContent | undefined {
  const tool = state.items.find((i) => i.kind === "tool" && i.id === toolCallId) as Extract<Item, { kind: "tool" }> | undefined;
  return tool?.content.filter((c): c is DiffContent => c.type === "diff")[index];
}

/** The `index`-th proposed change of a permission request (its "Open diff", before approval). */
export function findProposedDiff(state: ViewState, requestId: number, index = 0): DiffContent | undefined {
  const p = state.items.find((i) => i.kind === "permission" && i.requestId === requestId) as Extract<Item, { kind: "permission" }> | undefined;
  return p?.diffs?.[index];
}

/**
 * Fills each command card's output from the host's terminals (`peek`), else from what the agent
 * stored in the call (a replay): the tail the card shows, the count of lines above it, and the
 * exit status once the command ended. Only the tail goes to the webview, however long the output.
 */
export function withTerminalOutput(state: ViewState, peek: (id: string) => { output: string; exit: ExitStatus | null } | undefined): ViewState {
  for (const i of state.items) {
    if (i.kind !== "tool") continue;
    for (const c of i.content) {
      if (c.type !== "terminal") continue;
      const t = peek(c.terminalId);
      const full = t ? t.output : c.stored;
      if (full === undefined) continue;
      const tail = tailLines(full, TAIL_LINES);
      c.output = tail.text;
      c.hidden = tail.hidden;
      c.exited = t ? t.exit != null : true;
      c.exit = t ? t.exit : (c.storedExit ?? null);
    }
  }
  return state;
}

/** The lines a selection covers, 1-based, as "first-last": one that ends at the start of a
 * line (a whole-line selection made with the keyboard) does not cover that line. */
export function selectionLines(start: { line: number; character: number }, end: { line: number; character: number }): string {
  const last = end.character === 0 && end.line > start.line ? end.line - 1 : end.line;
  return `${start.line + 1}-${last + 1}`;
}

/** The text of the last prompt in the transcript (Retry, Edit last prompt), or null if none. */
export function lastPrompt(state: ViewState): string | null {
  for (let i = state.items.length - 1; i >= 0; i--) {
    const item = state.items[i];
    if (item.kind === "user") return item.text;
  }
  return null;
}

export interface PastSession {
  sessionId: string;
  title: string;
  updatedAt: string | null;
}

/**
 * The history list's search: sessions whose title holds every word of the query, in any case
 * and order. An empty query keeps them all. The order stays the agent's (newest first).
 */
export function filterSessions<T extends { title: string }>(sessions: T[], query: string): T[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return sessions;
  return sessions.filter((s) => {
    const title = s.title.toLowerCase();
    return words.every((w) => title.includes(w));
  });
}

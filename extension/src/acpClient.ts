// The one ACP client of the extension, over either transport (in-process addon or an external
// agent on stdio). Uses the official SDK's client API. No `vscode` import: the editor side is
// behind `ClientHost`, so this glue is unit-tested against a real agent without VS Code.
import * as acp from "@agentclientprotocol/sdk";
import type { Stream } from "@agentclientprotocol/sdk";
import { TerminalManager } from "./terminals";

export interface ClientHost {
  /** Current text of the file: the open document (unsaved edits included) or the disk. */
  readTextFile(path: string): Promise<string>;
  /** Writes through the editor (undoable), or the disk when there is no editor. */
  writeTextFile(path: string, content: string): Promise<void>;
  /**
   * Runs before every `terminal/create`: whatever the agent wrote that is still only in an
   * editor buffer goes to disk, so a command sees the files the agent changed.
   */
  beforeCommand(): Promise<void>;
  /** Asks the user; resolves with the chosen optionId (and the answer's `_meta`, if any), or null when cancelled. */
  requestPermission(params: acp.RequestPermissionRequest): Promise<PermissionChoice | null>;
  /** Every `session/update` notification, in arrival order. */
  onUpdate(params: acp.SessionNotification): void;
  log(level: "info" | "warn" | "error" | "debug", message: string): void;
  /** Default cwd for terminals. */
  cwd(): string | undefined;
}

/** A permission answer: the option, and `_meta` for an agent that reads more (Corvid's rejected hunks). */
export interface PermissionChoice {
  optionId: string;
  meta?: Record<string, unknown>;
}

export const CLIENT_INFO = { name: "corvid-vscode", title: "Corvid for VS Code", version: "0.1.0" };

export const CLIENT_CAPABILITIES: acp.ClientCapabilities = {
  fs: { readTextFile: true, writeTextFile: true },
  terminal: true,
};

/** Applies ACP's 1-based `line` and `limit` to a text. */
export function sliceLines(text: string, line?: number | null, limit?: number | null): string {
  if (line == null && limit == null) return text;
  const lines = text.split("\n");
  const start = Math.max(0, (line ?? 1) - 1);
  const end = limit == null ? lines.length : start + limit;
  return lines.slice(start, end).join("\n");
}

export class AcpClient {
  readonly terminals = new TerminalManager();
  private conn: acp.ClientConnection;
  init: acp.InitializeResponse | null = null;

  constructor(
    stream: Stream,
    private host: ClientHost,
  ) {
    const terms = this.terminals;
    this.conn = acp
      .client({ name: CLIENT_INFO.name })
      .onNotification(acp.methods.client.session.update, ({ params }) => host.onUpdate(params))
      .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
        const choice = await host.requestPermission(params);
        if (choice === null) return { outcome: { outcome: "cancelled" } };
        return { outcome: { outcome: "selected", optionId: choice.optionId }, ...(choice.meta ? { _meta: choice.meta } : {}) };
      })
      .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => {
        host.log("debug", `fs/read_text_file ${params.path}`);
        return { content: sliceLines(await host.readTextFile(params.path), params.line, params.limit) };
      })
      .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
        host.log("info", `fs/write_text_file ${params.path}`);
        await host.writeTextFile(params.path, params.content);
        return {};
      })
      .onRequest(acp.methods.client.terminal.create, async ({ params }) => {
        await host.beforeCommand();
        const terminalId = terms.create(params, host.cwd());
        host.log("info", `terminal/create ${terminalId}: ${params.command} ${(params.args ?? []).join(" ")}`);
        return { terminalId };
      })
      .onRequest(acp.methods.client.terminal.output, async ({ params }) => terms.output(params.terminalId))
      .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => terms.waitForExit(params.terminalId))
      .onRequest(acp.methods.client.terminal.kill, async ({ params }) => {
        terms.kill(params.terminalId);
        return {};
      })
      .onRequest(acp.methods.client.terminal.release, async ({ params }) => {
        terms.release(params.terminalId);
        return {};
      })
      .connect(stream);
  }

  get closed(): Promise<void> {
    return this.conn.closed;
  }

  async initialize(): Promise<acp.InitializeResponse> {
    const init = (await this.conn.agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: CLIENT_CAPABILITIES,
      clientInfo: CLIENT_INFO,
    })) as acp.InitializeResponse;
    this.init = init;
    return init;
  }

  newSession(cwd: string, mcpServers: acp.McpServer[] = []): Promise<acp.NewSessionResponse> {
    return this.conn.agent.request(acp.methods.agent.session.new, { cwd, mcpServers });
  }

  loadSession(sessionId: string, cwd: string, mcpServers: acp.McpServer[] = []): Promise<acp.LoadSessionResponse> {
    return this.conn.agent.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers });
  }

  /** The MCP transports besides stdio the agent takes (`initialize`'s `mcpCapabilities`). */
  get mcpTransports(): { http: boolean; sse: boolean } {
    const mcp = this.init?.agentCapabilities?.mcpCapabilities;
    return { http: !!mcp?.http, sse: !!mcp?.sse };
  }

  listSessions(cwd: string): Promise<acp.ListSessionsResponse> {
    return this.conn.agent.request(acp.methods.agent.session.list, { cwd });
  }

  /** `session/delete` (advertised as `sessionCapabilities.delete`). */
  deleteSession(sessionId: string): Promise<unknown> {
    return this.conn.agent.request(acp.methods.agent.session.delete, { sessionId });
  }

  /**
   * `session/set_title`: ACP v1's unstable method (advertised as `sessionCapabilities.title`),
   * not among the SDK's stable method names, hence the plain string.
   */
  setSessionTitle(sessionId: string, title: string): Promise<unknown> {
    return this.conn.agent.request("session/set_title", { sessionId, title });
  }

  /** What this agent offers for past sessions, from its `initialize` answer. */
  get sessionFeatures(): { load: boolean; delete: boolean; rename: boolean } {
    const caps = this.init?.agentCapabilities as any;
    const session = caps?.sessionCapabilities ?? {};
    return { load: !!caps?.loadSession, delete: session.delete != null, rename: session.title != null || session.setTitle != null };
  }

  /** `messageId`: the prompt's own id (Corvid's `_meta.corvid.messageId`), to rewind to it later. */
  prompt(sessionId: string, prompt: acp.ContentBlock[], messageId?: string): Promise<acp.PromptResponse> {
    const meta = messageId ? { _meta: { corvid: { messageId } } } : {};
    return this.conn.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt, ...meta });
  }

  /** Whether the agent rewinds to a prompt named by the client (Corvid's `initialize` `_meta.corvid.rewind`). */
  get canRewind(): boolean {
    const rewind = (this.init?._meta as any)?.corvid?.rewind;
    return !!rewind?.promptMessageId && !!rewind?.beforeMessage && (this.init?.agentCapabilities as any)?.sessionCapabilities?.fork != null;
  }

  /**
   * `session/fork` cut before prompt `messageId` (Corvid's `_meta.corvid.beforeMessage`): a new
   * session holding what came before it; the original stays. The answer's `_meta.corvid.rewind`
   * names the files to set back (`rewind.ts`). ACP v1's unstable method, hence the plain string.
   */
  forkBefore(sessionId: string, cwd: string, messageId: string, mcpServers: acp.McpServer[] = []): Promise<any> {
    return this.conn.agent.request("session/fork", { sessionId, cwd, mcpServers, _meta: { corvid: { beforeMessage: messageId } } });
  }

  cancel(sessionId: string): Promise<void> {
    return this.conn.agent.notify(acp.methods.agent.session.cancel, { sessionId });
  }

  setConfigOption(sessionId: string, configId: string, value: string): Promise<acp.SetSessionConfigOptionResponse> {
    return this.conn.agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId, value });
  }

  close(): void {
    this.terminals.disposeAll();
    this.conn.close();
  }
}

/** A prompt's content blocks: the text, plus an embedded resource (e.g. the selection). */
export function promptBlocks(text: string, resource?: { uri: string; text: string; mimeType?: string }): acp.ContentBlock[] {
  const blocks: acp.ContentBlock[] = [];
  if (resource) blocks.push({ type: "resource", resource: { uri: resource.uri, text: resource.text, ...(resource.mimeType ? { mimeType: resource.mimeType } : {}) } });
  blocks.push({ type: "text", text });
  return blocks;
}

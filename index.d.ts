import type { AgentOptions as NativeOptions, NativeAgent } from "./native.js";

export interface AgentOptions extends NativeOptions {
  /** Receives formatted log lines (filtered by `logLevel`). Corvid never writes to stdout. */
  onLog?: (line: string) => void;
}

/** An ACP `Stream` of JSON-RPC message objects, as the official SDK expects, plus `close()`. */
export interface AgentStream {
  readable: ReadableStream<unknown>;
  writable: WritableStream<unknown>;
  /** Cancels running turns, flushes the session store and stops the agent's runtime. */
  close(): Promise<void>;
}

/**
 * Starts the Corvid agent in this process. Its commands run in the sandbox through
 * `sandbox-launcher.cjs` (see `defaultSandboxLauncher`) unless `sandboxLauncher` says
 * otherwise (`[]`: unconfined).
 */
export declare function createAgent(options?: AgentOptions): AgentStream;

/** The launcher `createAgent` uses when given none: this Node running `sandbox-launcher.cjs`. */
export declare function defaultSandboxLauncher(): Required<Pick<AgentOptions, "sandboxLauncher" | "sandboxLauncherEnv">>;

export { NativeAgent };
export { login } from "./native.js";

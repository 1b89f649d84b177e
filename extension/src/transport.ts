// The two transports behind the one ACP client: the Corvid core in-process through the napi
// addon (default), or any external ACP agent spawned over stdio (`corvid.agent.command`).
import { spawn, type ChildProcess } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as path from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import type { Stream } from "@agentclientprotocol/sdk";

export interface AgentSettings {
  provider?: string;
  baseUrl?: string;
  model?: string;
  apiKey?: string;
  logLevel?: string;
  /** The built-in core's config file (`corvid.models` written into a copy of Corvid's own). */
  configFile?: string;
}

export interface Transport {
  stream: Stream;
  describe: string;
  /** Rejects when the agent can no longer answer (failed to spawn, exited); never resolves. */
  failed: Promise<never>;
  close(): Promise<void>;
}

function clean<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== "")) as Partial<T>;
}

/**
 * The in-process core. `corvid-acp`'s `createAgent` (the root package's index.js) is bundled
 * into the extension; it loads `native.cjs`, which loads `corvid.<platform>.node`, both copied
 * next to the bundle at build time. `dir` is that directory.
 */
export function addonTransport(settings: AgentSettings, onLog: (line: string) => void): Transport {
  let createAgent: typeof import("../../index.js").createAgent;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    ({ createAgent } = require("../../index.js") as typeof import("../../index.js"));
  } catch (e) {
    // Most likely no .node for this platform in the VSIX: say what to do instead.
    throw new Error(
      `the built-in Corvid core could not be loaded (${e instanceof Error ? e.message : String(e)}); set corvid.agent.command to run \`corvid acp\` instead`,
    );
  }
  const agent = createAgent({ ...clean(settings), onLog });
  return { stream: agent as unknown as Stream, describe: "in-process Corvid core", failed: new Promise<never>(() => {}), close: () => agent.close() };
}

/** Any ACP agent over stdio; the API key goes in the environment, never on the command line. */
export function stdioTransport(
  command: string,
  args: string[],
  settings: AgentSettings,
  cwd: string | undefined,
  onStderr: (line: string) => void,
): Transport & { child: ChildProcess } {
  const env: NodeJS.ProcessEnv = { ...process.env };
  const vars: Record<string, string | undefined> = {
    CORVID_PROVIDER: settings.provider,
    CORVID_BASE_URL: settings.baseUrl,
    CORVID_MODEL: settings.model,
    CORVID_API_KEY: settings.apiKey,
    CORVID_LOG: settings.logLevel,
  };
  for (const [k, v] of Object.entries(vars)) if (v) env[k] = v;
  // A command line like `corvid acp` is split on whitespace; more args via corvid.agent.args.
  const [cmd, ...rest] = command.trim().split(/\s+/);
  const child = spawn(cmd, [...rest, ...args], { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
  // A command that cannot start (ENOENT, EACCES) or exits early must fail the start at once,
  // not leave the client waiting for an answer that never comes.
  const failed = new Promise<never>((_, reject) => {
    child.once("error", (e) => reject(new Error(`could not run the agent command \`${command}\`: ${e.message}`)));
    child.once("exit", (code, signal) => reject(new Error(`the agent command \`${command}\` exited (${code ?? signal})`)));
  });
  failed.catch(() => {});
  let buf = "";
  child.stderr!.on("data", (d: Buffer) => {
    buf += d.toString("utf8");
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      onStderr(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  });
  const stream = acp.ndJsonStream(
    Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
    Readable.toWeb(child.stdout!) as unknown as ReadableStream<Uint8Array>,
  );
  return {
    stream,
    child,
    failed,
    describe: `${path.basename(cmd)} (stdio)`,
    close: async () => {
      child.stdin?.end();
      // Never started (pid undefined) or already gone: nothing to wait for.
      if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
        const t = setTimeout(() => child.kill("SIGTERM"), 2000);
        await new Promise((r) => child.once("exit", r));
        clearTimeout(t);
      }
    },
  };
}

// The MCP servers VS Code is configured with (the `mcp.servers` setting and a workspace's
// `.vscode/mcp.json`), as ACP's `mcpServers` for `session/new` and `session/load`. Each server
// reaches the agent only with the user's consent, asked once per server definition (a changed
// command or URL is asked again). Pure (no `vscode`), so it is unit-tested directly; the
// reading of settings and the question are `mcpConsent.ts`'s.
import { createHash } from "node:crypto";
import type { McpServer } from "@agentclientprotocol/sdk";

/** A server as VS Code's MCP configuration spells it. */
export interface VsCodeMcpServer {
  type?: string;
  command?: string;
  args?: unknown[];
  env?: Record<string, unknown>;
  cwd?: string;
  url?: string;
  headers?: Record<string, unknown>;
}

/** What VS Code's variables in a definition stand for here. */
export interface McpVariables {
  workspaceFolder?: string;
  userHome: string;
}

/** A server ready for ACP, with the words the consent question shows. */
export interface McpCandidate {
  name: string;
  server: McpServer;
  /** "node /x/server.mjs echo" or the URL: what the user agrees to. */
  what: string;
  /** Stable for the definition: the consent is remembered under it. */
  key: string;
}

/** ${workspaceFolder}, ${userHome} and ${env:X} replaced; null when a value needs VS Code's input prompts (${input:…}). */
function expand(value: unknown, vars: McpVariables, env: Record<string, string | undefined>): string | null {
  const text = String(value ?? "");
  if (/\$\{input:/.test(text)) return null;
  return text
    .replace(/\$\{workspaceFolder\}/g, vars.workspaceFolder ?? "")
    .replace(/\$\{userHome\}/g, vars.userHome)
    .replace(/\$\{env:([^}]+)\}/g, (_, name: string) => env[name] ?? "");
}

/** `{ NAME: value }` as ACP's `[{ name, value }]`, expanded; null when a value cannot be. */
function pairs(map: Record<string, unknown> | undefined, vars: McpVariables, env: Record<string, string | undefined>): { name: string; value: string }[] | null {
  const out: { name: string; value: string }[] = [];
  for (const [name, raw] of Object.entries(map ?? {})) {
    if (raw === null || raw === undefined) continue;
    const value = expand(raw, vars, env);
    if (value === null) return null;
    out.push({ name, value });
  }
  return out;
}

/**
 * VS Code's servers as ACP's, in the order configured, with why each one left out is left
 * out: an HTTP or SSE server the agent does not take (`mcpCapabilities`), one that needs VS
 * Code's input prompts, one without a command or URL.
 */
export function acpServers(
  servers: Record<string, VsCodeMcpServer>,
  caps: { http: boolean; sse: boolean },
  vars: McpVariables,
  env: Record<string, string | undefined> = {},
): { candidates: McpCandidate[]; skipped: { name: string; why: string }[] } {
  const candidates: McpCandidate[] = [];
  const skipped: { name: string; why: string }[] = [];
  for (const [name, s] of Object.entries(servers)) {
    if (!s || typeof s !== "object") continue;
    const kind = s.type ?? (s.url ? "http" : "stdio");
    let server: McpServer;
    let what: string;
    if (kind === "stdio") {
      const command = s.command ? expand(s.command, vars, env) : null;
      const args = (s.args ?? []).map((a) => expand(a, vars, env));
      const envPairs = pairs(s.env, vars, env);
      if (!command) {
        skipped.push({ name, why: s.command ? "it asks for an input VS Code prompts for" : "it names no command" });
        continue;
      }
      if (args.some((a) => a === null) || envPairs === null) {
        skipped.push({ name, why: "it asks for an input VS Code prompts for" });
        continue;
      }
      server = { name, command, args: args as string[], env: envPairs };
      what = [command, ...(args as string[])].join(" ");
    } else if (kind === "http" || kind === "sse") {
      if (!(kind === "http" ? caps.http : caps.sse)) {
        skipped.push({ name, why: `the agent does not take ${kind.toUpperCase()} MCP servers` });
        continue;
      }
      const url = s.url ? expand(s.url, vars, env) : null;
      const headers = pairs(s.headers, vars, env);
      if (!url || headers === null) {
        skipped.push({ name, why: url === null && s.url ? "it asks for an input VS Code prompts for" : "it names no URL" });
        continue;
      }
      server = { type: kind, name, url, headers } as McpServer;
      what = url;
    } else {
      skipped.push({ name, why: `its type "${kind}" is unknown` });
      continue;
    }
    const key = createHash("sha256").update(JSON.stringify(server)).digest("hex").slice(0, 32);
    candidates.push({ name, server, what, key });
  }
  return { candidates, skipped };
}

/** JSON with comments and trailing commas (how `.vscode/mcp.json` is written) parsed. */
export function parseJsonc(text: string): unknown {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      // A string, escapes and all, as it is.
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j;
    } else if (c === "/" && text[i + 1] === "/") {
      while (i < text.length && text[i] !== "\n") i++;
      out += "\n";
    } else if (c === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2);
      i = end < 0 ? text.length : end + 1;
    } else out += c;
  }
  return JSON.parse(out.replace(/,(\s*[}\]])/g, "$1"));
}

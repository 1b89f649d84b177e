// The MCP servers of VS Code's configuration that a session gets: read from the `mcp.servers`
// setting and each workspace folder's `.vscode/mcp.json`, turned into ACP's form
// (`mcpServers.ts`), and passed only with the user's consent: a modal question per server the
// first time its definition is seen, the answer kept in the global state (a changed definition
// is asked again; a dismissed question is asked at the next session).
import * as os from "node:os";
import * as vscode from "vscode";
import type { McpServer } from "@agentclientprotocol/sdk";
import { log } from "./log";
import { acpServers, parseJsonc, type VsCodeMcpServer } from "./mcpServers";

/** The answers so far, by the servers' definition keys: true allowed, false refused. */
const CONSENT = "corvid.mcpConsent";

/**
 * VS Code's MCP servers by name: the user's and the workspace's `mcp.servers` settings, then
 * each folder's `.vscode/mcp.json` (later ones win on a name). Never the setting's default: VS
 * Code ships an example server there ("mcp-server-time") that nobody configured.
 */
async function configured(): Promise<Record<string, VsCodeMcpServer>> {
  type Servers = Record<string, VsCodeMcpServer>;
  const set = vscode.workspace.getConfiguration("mcp").inspect<Servers>("servers");
  const servers: Servers = { ...(set?.globalValue ?? {}), ...(set?.workspaceValue ?? {}), ...(set?.workspaceFolderValue ?? {}) };
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    const file = vscode.Uri.joinPath(folder.uri, ".vscode", "mcp.json");
    let text: string;
    try {
      text = new TextDecoder().decode(await vscode.workspace.fs.readFile(file));
    } catch {
      continue; // no such file
    }
    try {
      Object.assign(servers, (parseJsonc(text) as { servers?: Record<string, VsCodeMcpServer> }).servers ?? {});
    } catch (e) {
      log.warn(`${file.fsPath} is not valid JSON, its MCP servers are not passed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return servers;
}

/** The servers a new or loaded session gets (the agent's `mcpCapabilities` say which transports it takes). */
export async function consentedMcpServers(context: vscode.ExtensionContext, caps: { http: boolean; sse: boolean }): Promise<McpServer[]> {
  const vars = { workspaceFolder: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath, userHome: os.homedir() };
  const { candidates, skipped } = acpServers(await configured(), caps, vars, process.env);
  for (const s of skipped) log.info(`MCP server ${s.name} is not passed to the agent: ${s.why}`);
  const decided = { ...(context.globalState.get<Record<string, boolean>>(CONSENT) ?? {}) };
  const passed: McpServer[] = [];
  for (const c of candidates) {
    let allowed = decided[c.key];
    if (allowed === undefined) {
      const answer = await vscode.window.showInformationMessage(
        `Let Corvid use the MCP server "${c.name}" from VS Code's MCP configuration?`,
        { modal: true, detail: `Corvid starts it for its chats and may call its tools (asking you first where the chat's mode says so):\n${c.what}` },
        "Allow",
        "Don't Allow",
      );
      if (answer === undefined) {
        log.info(`MCP server ${c.name}: the question was dismissed; not passed, asked again next time`);
        continue;
      }
      allowed = answer === "Allow";
      decided[c.key] = allowed;
      await context.globalState.update(CONSENT, decided);
    }
    log.info(`MCP server ${c.name} (${c.what}): ${allowed ? "passed to the agent" : "refused by the user"}`);
    if (allowed) passed.push(c.server);
  }
  return passed;
}

// The extension's log (the "Corvid" output channel) and how a failure reaches the user: once,
// as an error notification with Show Logs, never swallowed.
import * as vscode from "vscode";
import { inVsCodeTerms } from "./fixes";

/** Set by `activate`; every module logs through it. */
export let log: vscode.LogOutputChannel;

export function openLog(): vscode.LogOutputChannel {
  log = vscode.window.createOutputChannel("Corvid", { log: true });
  return log;
}

/** An error as one line for people: its message (a JSON-RPC error's too), else it as JSON. */
export function errorText(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (typeof e === "object" && e !== null && typeof (e as { message?: unknown }).message === "string") return (e as { message: string }).message;
  return typeof e === "object" ? JSON.stringify(e) : String(e);
}

/** Errors already shown to the user (by `fail`), so callers up the stack do not repeat them. */
const reported = new WeakSet<object>();

/** Marks an error as told another way (the welcome panel): `fail` stays quiet about it. */
export function markReported(e: unknown): void {
  if (typeof e === "object" && e !== null) reported.add(e);
}

/** Logs the failure of `what` and shows it once, with Show Logs. */
export function fail(what: string, e: unknown): void {
  if (typeof e === "object" && e !== null) {
    if (reported.has(e)) return;
    reported.add(e);
  }
  const msg = errorText(e);
  log.error(`${what}: ${msg}`);
  // In VS Code's terms, as the chat's notices are: with the built-in core the user fixes
  // "CORVID_MODEL" through the corvid.model setting (an external agent's words stay).
  const builtIn = !vscode.workspace.getConfiguration("corvid").get<string>("agent.command")?.trim();
  void vscode.window.showErrorMessage(`Corvid: ${what} failed: ${inVsCodeTerms(msg, builtIn)}`, "Show Logs").then((b) => b && log.show());
}

/** Runs a command; a failure is shown once (with Show Logs), never swallowed. */
export async function guard(what: string, action: () => Promise<void>): Promise<void> {
  try {
    await action();
  } catch (e) {
    fail(what, e);
  }
}

// "Fix with Corvid": a quick fix on every diagnostic (any language), which sends the problem
// to the chat as a prompt with the lines around it embedded, so the agent can fix it at once.
// The prompt's words are `fixPrompt`'s (pure, unit-tested in diagnostics.test.ts).
import * as vscode from "vscode";
import { promptBlocks } from "./acpClient";
import { diagnosticFacts, mimeOf } from "./editorContext";
import { fixPrompt } from "./diagnostics";
import type { SessionController } from "./sessionController";

export const FIX_COMMAND = "corvid.fixDiagnostic";
/** Lines shown around the problem (before and after). */
const AROUND = 10;


export class FixWithCorvid implements vscode.CodeActionProvider {
  static readonly kinds = [vscode.CodeActionKind.QuickFix];

  provideCodeActions(doc: vscode.TextDocument, _range: vscode.Range, context: vscode.CodeActionContext): vscode.CodeAction[] {
    if (doc.uri.scheme !== "file") return [];
    return context.diagnostics.map((d) => {
      const action = new vscode.CodeAction(`Fix with Corvid: ${d.message.split("\n")[0].slice(0, 60)}`, vscode.CodeActionKind.QuickFix);
      action.diagnostics = [d];
      action.command = { command: FIX_COMMAND, title: "Fix with Corvid", arguments: [doc.uri, d] };
      return action;
    });
  }
}

/** The command: the problem and its surroundings as a prompt in the chat. */
export async function fixDiagnostic(session: SessionController, uri: vscode.Uri, d: vscode.Diagnostic): Promise<void> {
  const doc = await vscode.workspace.openTextDocument(uri);
  const f = diagnosticFacts(doc, d);
  const first = Math.max(0, d.range.start.line - AROUND);
  const last = Math.min(doc.lineCount - 1, d.range.end.line + AROUND);
  const text = doc.getText(new vscode.Range(first, 0, last, doc.lineAt(last).text.length));
  const prompt = fixPrompt(f, { start: first + 1, end: last + 1 });
  await vscode.commands.executeCommand("corvid.chat.focus");
  const lines = `#L${first + 1}-${last + 1}`;
  await session.prompt(prompt, {
    blocks: promptBlocks(prompt, { uri: `${uri.toString()}${lines}`, text, mimeType: mimeOf(doc.languageId) }),
    chips: [{ kind: "selection", name: `${uri.path.split("/").pop()}:${first + 1}-${last + 1}` }],
  });
}

// A provider error from the core names the environment variables to fix (CORVID_API_KEY,
// CORVID_BASE_URL, CORVID_MODEL). With the built-in core, VS Code sets those through the
// extension: the API key with "Corvid: Set API Key", the endpoint and model with the
// `corvid.baseUrl` / `corvid.model` settings. This maps the one to the other. No `vscode`
// import, so it is unit-tested directly.

/** One thing the user can do in VS Code about an error: run a command or open a setting. */
export type FixAction = { kind: "command"; command: string; label: string } | { kind: "setting"; setting: string; label: string };

/** Every action `fixesFor` can return: the host runs only these (the webview's message is not trusted). */
export const KNOWN_FIXES: readonly FixAction[] = [
  { kind: "command", command: "corvid.setApiKey", label: "Set API Key" },
  { kind: "setting", setting: "corvid.baseUrl", label: "Open setting corvid.baseUrl" },
  { kind: "setting", setting: "corvid.model", label: "Open setting corvid.model" },
];

const BY_VARIABLE: [RegExp, FixAction][] = [
  // The key: CORVID_API_KEY or a provider's own variable it falls back to.
  [/\b(CORVID|OPENAI|ANTHROPIC|OPENROUTER)_API_KEY\b/, KNOWN_FIXES[0]],
  [/\bCORVID_BASE_URL\b/, KNOWN_FIXES[1]],
  [/\bCORVID_MODEL\b/, KNOWN_FIXES[2]],
];

/**
 * The VS Code actions for an error message, in the order of the variables above (key, base
 * URL, model), each once. `builtIn`: the extension runs the built-in core, whose settings it
 * controls; an external agent (`corvid.agent.command`) has its own environment, so none.
 */
export function fixesFor(message: string, builtIn: boolean): FixAction[] {
  if (!builtIn) return [];
  return BY_VARIABLE.filter(([re]) => re.test(message)).map(([, fix]) => ({ ...fix }));
}

/** The known action a webview message names, or undefined (anything else is ignored). */
export function knownFix(m: { kind?: unknown; command?: unknown; setting?: unknown }): FixAction | undefined {
  return KNOWN_FIXES.find((f) => f.kind === m.kind && (f.kind === "command" ? f.command === m.command : f.setting === m.setting));
}

/** Corvid's variables and what they are called in VS Code (longest spellings first). */
const IN_VSCODE: [RegExp, string][] = [
  [/\bCORVID_API_KEY \(or (OPENAI|ANTHROPIC)_API_KEY\)/g, "the API key (Corvid: Set API Key)"],
  [/\b(CORVID|OPENAI|ANTHROPIC|OPENROUTER)_API_KEY\b/g, "the API key (Corvid: Set API Key)"],
  [/\bCORVID_BASE_URL\b/g, "the corvid.baseUrl setting"],
  [/\bCORVID_MODEL\b/g, "the corvid.model setting"],
  [/\bCORVID_PROVIDER=(\w+)/g, "the corvid.provider setting to $1"],
  [/\bCORVID_PROVIDER\b/g, "the corvid.provider setting"],
];

/**
 * An error message as the user fixes it: with the built-in core, the variables Corvid names
 * become the VS Code setting or command that sets them (the extension passes those to the
 * core; the user never sets its environment). An external agent's message stays as it is.
 */
export function inVsCodeTerms(message: string, builtIn: boolean): string {
  if (!builtIn) return message;
  return IN_VSCODE.reduce((m, [re, words]) => m.replace(re, words), message);
}

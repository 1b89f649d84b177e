// What the agent starts with, from VS Code's settings and secret storage: the provider
// settings, the API key (bound to the endpoint it was saved for), and `corvid.models` as a copy
// of Corvid's config file for the built-in core; and the welcome panel's questions that write
// them (a provider preset, its model from the provider's own list, the API key).
import * as vscode from "vscode";
import * as os from "node:os";
import * as fs from "node:fs";
import * as path from "node:path";
import { withModels } from "./coreConfig";
import { log } from "./log";
import { checkBaseUrl, describeSettings, PRESETS, settingsFor, type ProviderChoice, type ProviderPreset } from "./providers";
import { modelsUrl, probeProvider, type ProbeTarget } from "./providerProbe";
import type { AgentSettings } from "./transport";

const SECRET_KEY = "corvid.apiKey";
/**
 * The endpoint the stored key was saved for (global state; the key itself is in secret
 * storage): the key goes only there. Cleared settings or another URL never get it, so a key
 * saved for OpenRouter is not sent to api.openai.com when the settings are emptied.
 */
const KEY_ENDPOINT = "corvid.apiKeyEndpoint";

/** The endpoint VS Code's settings name now (its model list's URL), "" when Corvid's own configuration decides. */
function currentEndpoint(): string {
  const c = vscode.workspace.getConfiguration("corvid");
  return modelsUrl({ provider: c.get<string>("provider") || undefined, baseUrl: c.get<string>("baseUrl") || undefined }) ?? "";
}

/** The stored key if it was saved for `endpoint` (a model list's URL, "" for Corvid's own configuration). */
async function keyFor(context: vscode.ExtensionContext, endpoint: string): Promise<string | undefined> {
  return context.globalState.get<string>(KEY_ENDPOINT) === endpoint ? (await context.secrets.get(SECRET_KEY)) || undefined : undefined;
}

/** The stored key if it was saved for the endpoint the settings name now. */
async function storedKey(context: vscode.ExtensionContext): Promise<string | undefined> {
  if (!(await context.secrets.get(SECRET_KEY))) return undefined;
  const now = currentEndpoint();
  const bound = context.globalState.get<string>(KEY_ENDPOINT);
  // A key saved before keys were bound: it belongs to the endpoint it is used with now.
  if (bound === undefined) await context.globalState.update(KEY_ENDPOINT, now);
  else if (bound !== now) log.info(`the stored API key is for ${bound || "Corvid's own configuration"}, not ${now || "Corvid's own configuration"}: not sent`);
  return keyFor(context, now);
}

/** What Test connection and the model question call: the settings' endpoint with its key. */
export async function probeTarget(context: vscode.ExtensionContext): Promise<ProbeTarget> {
  const c = vscode.workspace.getConfiguration("corvid");
  return { provider: c.get<string>("provider") || undefined, baseUrl: c.get<string>("baseUrl") || undefined, apiKey: await storedKey(context) };
}

/** The built-in core runs (not `corvid.agent.command`): its provider settings are the extension's. */
export function builtIn(): boolean {
  return !vscode.workspace.getConfiguration("corvid").get<string>("agent.command")?.trim();
}

export async function agentSettings(context: vscode.ExtensionContext): Promise<AgentSettings> {
  const c = vscode.workspace.getConfiguration("corvid");
  return {
    provider: c.get<string>("provider") || undefined,
    baseUrl: c.get<string>("baseUrl") || undefined,
    model: c.get<string>("model") || undefined,
    logLevel: c.get<string>("logLevel") || undefined,
    apiKey: await storedKey(context),
    // Only the built-in core reads it (an external agent gets variables, and has no list).
    configFile: builtIn() ? await coreConfigFile(context) : undefined,
  };
}

/**
 * `corvid.models` (the model picker's list) for the built-in core: a copy of Corvid's own
 * config file with `[provider] models` set, in the extension's storage; undefined (Corvid's
 * own file as it is) when the setting is empty. The addon's options have no model list.
 */
async function coreConfigFile(context: vscode.ExtensionContext): Promise<string | undefined> {
  const models = (vscode.workspace.getConfiguration("corvid").get<string[]>("models") ?? []).map((m) => String(m).trim()).filter(Boolean);
  if (!models.length) return undefined;
  const own = process.env.CORVID_CONFIG || path.join(os.homedir(), ".config/corvid/config.toml");
  let text: string | null = null;
  try {
    text = await fs.promises.readFile(own, "utf8");
  } catch {}
  const dir = context.globalStorageUri.fsPath;
  await fs.promises.mkdir(dir, { recursive: true });
  const file = path.join(dir, "core-config.toml");
  // 0600: the user's file may hold an API key.
  await fs.promises.writeFile(file, withModels(text, models), { mode: 0o600 });
  log.info(`corvid.models: ${models.join(", ")} (config ${file}, from ${text === null ? "no file" : own})`);
  return file;
}

/** The provider VS Code's settings name now, in words (the welcome's "Now:"). */
export async function describeProvider(context: vscode.ExtensionContext): Promise<string> {
  const c = vscode.workspace.getConfiguration("corvid");
  return describeSettings({ provider: c.get<string>("provider"), baseUrl: c.get<string>("baseUrl"), model: c.get<string>("model") }, await hasApiKey(context));
}

export async function hasApiKey(context: vscode.ExtensionContext): Promise<boolean> {
  return !!(await storedKey(context));
}

/** A provider choice of the welcome panel: asks what it needs, writes the user settings; undefined if the user gave up. */
export async function askProvider(context: vscode.ExtensionContext, choice: ProviderChoice): Promise<ProviderPreset | undefined> {
  const preset = PRESETS[choice];
  const c = vscode.workspace.getConfiguration("corvid");
  let baseUrl: string | undefined;
  if (preset.baseUrl === null) {
    baseUrl = await vscode.window.showInputBox({
      title: `Corvid: ${preset.label}`,
      prompt: "The endpoint's base URL (Chat Completions under it), e.g. https://api.openai.com/v1",
      value: c.get<string>("baseUrl") || "",
      ignoreFocusOut: true,
      validateInput: (v) => checkBaseUrl(v),
    });
    if (baseUrl === undefined) return undefined;
  }
  let model = "";
  // The provider's own list when it answers (with the key saved for that endpoint, if any);
  // typed by hand otherwise.
  const target = { provider: preset.provider, baseUrl: (preset.baseUrl ?? baseUrl ?? "").trim() || undefined };
  const endpoint = modelsUrl(target);
  const key = endpoint ? await keyFor(context, endpoint) : undefined;
  const listed = await probeProvider({ ...target, apiKey: key }, fetch, 5000);
  const picked = listed?.ok && listed.models.length ? await pickModel(preset, listed.models, c.get<string>("model") || "") : null;
  if (picked === undefined) return undefined;
  if (picked !== null) model = picked;
  else if (preset.modelHint) {
    const typed = await vscode.window.showInputBox({
      title: `Corvid: ${preset.label}: model`,
      prompt: `Model id, e.g. ${preset.modelHint} (empty: the endpoint's first model)`,
      value: c.get<string>("model") || "",
      ignoreFocusOut: true,
    });
    if (typed === undefined) return undefined;
    model = typed;
  }
  const values = settingsFor(choice, { baseUrl, model });
  for (const [key, value] of Object.entries(values)) await c.update(key, value || undefined, vscode.ConfigurationTarget.Global);
  log.info(`provider set up: ${preset.label} (${JSON.stringify(values)})`);
  return preset;
}

/** The model from the provider's list (the current one first); null: typed instead; undefined: gave up. */
async function pickModel(preset: ProviderPreset, models: string[], current: string): Promise<string | null | undefined> {
  const TYPE = "Type a model id…";
  const items: vscode.QuickPickItem[] = [...new Set([current, ...models].filter((m) => m && models.includes(m)))].map((m) => ({ label: m, description: m === current ? "current" : undefined }));
  items.push({ label: TYPE, alwaysShow: true });
  const pick = await vscode.window.showQuickPick(items, { title: `Corvid: ${preset.label}: model`, placeHolder: `The endpoint's models (${models.length})`, ignoreFocusOut: true });
  if (!pick) return undefined;
  return pick.label === TYPE ? null : pick.label;
}

/** Set API Key: asks, then stores it in secret storage for the endpoint the settings name (empty removes it); undefined if the user gave up. */
export async function askApiKey(context: vscode.ExtensionContext): Promise<string | undefined> {
  const endpoint = currentEndpoint();
  const where = endpoint ? `for ${endpoint.replace(/\/models$/, "")}` : "for the endpoint Corvid's own configuration names";
  const key = await vscode.window.showInputBox({ title: "Corvid: API key", prompt: `Stored in VS Code's secret storage ${where}, and sent only there (empty removes it)`, password: true, ignoreFocusOut: true });
  if (key === undefined) return undefined;
  if (key) {
    await context.secrets.store(SECRET_KEY, key);
    await context.globalState.update(KEY_ENDPOINT, endpoint);
  } else await context.secrets.delete(SECRET_KEY);
  return key;
}

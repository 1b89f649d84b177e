// First-run setup: the providers the welcome panel offers, the settings each one writes, and
// how the extension tells "no provider configured" from other start failures. Pure (no
// `vscode`), so it is unit-tested directly.

export type ProviderChoice = "openai" | "openrouter" | "anthropic" | "ollama";

export interface ProviderPreset {
  label: string;
  /** `corvid.provider`: the core's provider kind. */
  provider: "openai" | "anthropic";
  /** `corvid.baseUrl`; null: the user types it; "": the provider kind's default. */
  baseUrl: string | null;
  /** Whether the provider wants an API key (a local Ollama does not). */
  needsKey: boolean;
  /** An example model id for the model input box ("" : none asked, the server's first is used). */
  modelHint: string;
}

export const PRESETS: Record<ProviderChoice, ProviderPreset> = {
  openai: { label: "OpenAI-compatible URL", provider: "openai", baseUrl: null, needsKey: true, modelHint: "gpt-4.1-mini" },
  openrouter: { label: "OpenRouter", provider: "openai", baseUrl: "https://openrouter.ai/api/v1", needsKey: true, modelHint: "anthropic/claude-sonnet-4.5" },
  anthropic: { label: "Anthropic", provider: "anthropic", baseUrl: "", needsKey: true, modelHint: "claude-sonnet-4-5" },
  ollama: { label: "Local Ollama", provider: "openai", baseUrl: "http://127.0.0.1:11434/v1", needsKey: false, modelHint: "" },
};

export function isProviderChoice(v: unknown): v is ProviderChoice {
  return typeof v === "string" && Object.prototype.hasOwnProperty.call(PRESETS, v);
}

/** The settings a choice writes (`corvid.provider`, `corvid.baseUrl`, `corvid.model`). */
export function settingsFor(choice: ProviderChoice, answers: { baseUrl?: string; model?: string }): { provider: string; baseUrl: string; model: string } {
  const p = PRESETS[choice];
  return { provider: p.provider, baseUrl: (p.baseUrl ?? answers.baseUrl ?? "").trim(), model: (answers.model ?? "").trim() };
}

/** Why a typed base URL is not usable, or null when it is. */
export function checkBaseUrl(value: string): string | null {
  const v = value.trim();
  if (!v) return "Enter the endpoint's URL, e.g. https://api.openai.com/v1";
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    return "Not a URL: it must start with http:// or https://";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "The URL must start with http:// or https://";
  return null;
}

/** The provider the settings name, in words (the welcome panel's "Now:" line). */
export function describeSettings(s: { provider?: string; baseUrl?: string; model?: string }, hasKey: boolean): string {
  if (!s.provider && !s.baseUrl && !s.model) return "No provider set in VS Code's settings.";
  const kind = s.provider === "anthropic" ? "Anthropic" : "OpenAI-compatible";
  const where = s.baseUrl ? ` at ${s.baseUrl}` : "";
  const model = s.model ? `, model ${s.model}` : ", the endpoint's first model";
  return `${kind}${where}${model}; API key ${hasKey ? "set" : "not set"}.`;
}

/**
 * Whether a failed start means "no model provider is configured" (the welcome panel's case),
 * not a broken config file or anything else: the core answers `session/new` with ACP's
 * auth-required error (-32000) and lists "Configure a model provider" in `initialize`'s
 * auth methods (a broken config file lists "Fix Corvid's configuration" instead).
 */
export function needsProvider(error: unknown, authMethods: readonly { name?: string }[] | null | undefined): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  if (!e || e.code !== -32000) return false;
  if (typeof e.message === "string" && /no model provider is configured/i.test(e.message)) return true;
  return (authMethods ?? []).some((m) => typeof m.name === "string" && /configure a model provider/i.test(m.name));
}

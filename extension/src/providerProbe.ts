// Test connection and the welcome's model question call the provider itself: its model list
// (`GET {base}/models`, OpenAI-compatible and Anthropic alike), with the API key the core
// would send. A session opening proves only that the core started; this proves the URL
// answers, the key is taken, and the model exists. No `vscode` import (fetch is passed in),
// so it is unit-tested directly against a local server.

/** The endpoint VS Code's settings name: undefined fields are the provider kind's defaults. */
export interface ProbeTarget {
  provider?: string;
  baseUrl?: string;
  apiKey?: string;
}

export type ProbeResult = { ok: true; url: string; models: string[] } | { ok: false; url: string; reason: string };

const DEFAULT_BASE: Record<string, string> = { openai: "https://api.openai.com/v1", anthropic: "https://api.anthropic.com/v1" };

/** The model list's URL for the settings, or undefined when they name no endpoint (Corvid's own configuration decides). */
export function modelsUrl(t: ProbeTarget): string | undefined {
  const kind = t.provider === "anthropic" ? "anthropic" : "openai";
  if (!t.baseUrl && !t.provider) return undefined;
  let base = (t.baseUrl || DEFAULT_BASE[kind]).trim().replace(/\/+$/, "");
  // Anthropic's API lives under /v1; a base URL without it (as Corvid's settings take it) gets it.
  if (kind === "anthropic" && !/\/v1$/.test(base)) base += "/v1";
  return `${base}/models`;
}

/** The request headers the core would send to this provider kind. */
function headers(t: ProbeTarget): Record<string, string> {
  if (t.provider === "anthropic") return { "anthropic-version": "2023-06-01", ...(t.apiKey ? { "x-api-key": t.apiKey } : {}) };
  return t.apiKey ? { authorization: `Bearer ${t.apiKey}` } : {};
}

/** Why a fetch failed, in words (Node's fetch hides the cause: ECONNREFUSED, ENOTFOUND, …). */
function networkReason(e: unknown, url: string): string {
  const cause = (e as { cause?: { code?: string; message?: string } })?.cause;
  const code = cause?.code ?? "";
  if (code === "ECONNREFUSED") return `nothing answers at ${url} (connection refused)`;
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return `the host of ${url} is not found`;
  if ((e as Error)?.name === "TimeoutError" || (e as Error)?.name === "AbortError") return `${url} did not answer within 10 s`;
  return `${url} cannot be reached (${cause?.message ?? (e as Error)?.message ?? String(e)})`;
}

/** Lists the provider's models; the reason in words when it cannot. */
export async function probeProvider(t: ProbeTarget, fetchImpl: typeof fetch = fetch, timeoutMs = 10000): Promise<ProbeResult | undefined> {
  const url = modelsUrl(t);
  if (!url) return undefined;
  let res: Response;
  try {
    res = await fetchImpl(url, { headers: headers(t), signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    return { ok: false, url, reason: networkReason(e, url) };
  }
  const body = await res.text().catch(() => "");
  if (res.status === 401 || res.status === 403)
    return { ok: false, url, reason: t.apiKey ? `the provider refused the API key (HTTP ${res.status}): set the right one with Corvid: Set API Key` : `the provider wants an API key (HTTP ${res.status}): click Set API Key` };
  if (!res.ok) return { ok: false, url, reason: `${url} answered HTTP ${res.status}${res.status === 404 ? ": is the base URL right (it usually ends in /v1)?" : ""}` };
  let models: string[] = [];
  try {
    const data = (JSON.parse(body) as { data?: { id?: unknown }[]; models?: { name?: unknown; model?: unknown }[] }) ?? {};
    // OpenAI's and Anthropic's `data[].id`; Ollama's native `models[].name` when pointed at it.
    models = (data.data ?? []).map((m) => m.id).concat((data.models ?? []).map((m) => m.model ?? m.name)).filter((m): m is string => typeof m === "string" && m.length > 0);
  } catch {
    return { ok: false, url, reason: `${url} did not answer with a model list (not JSON): is the base URL right?` };
  }
  return { ok: true, url, models };
}

/** Test connection's verdict on a listing: connected, and whether the chosen model is offered. */
export function connectionText(r: ProbeResult, model: string | undefined): { ok: boolean; text: string } {
  if (!r.ok) return { ok: false, text: `The connection failed: ${r.reason}` };
  const listed = r.models.length;
  const some = r.models.slice(0, 5).join(", ") + (listed > 5 ? ", …" : "");
  if (model && listed && !r.models.includes(model))
    return { ok: false, text: `Connected to ${r.url.replace(/\/models$/, "")}, but it has no model ${model}. It offers ${listed}: ${some}. Pick one with the corvid.model setting.` };
  return { ok: true, text: `Connected to ${r.url.replace(/\/models$/, "")}${model ? `: model ${model} is there` : ""} (${listed} model${listed === 1 ? "" : "s"} listed).` };
}

// `corvid.models` for the built-in core. The addon's options carry one model, not a list: the
// list is the config file's `[provider] models`. So the extension writes a copy of Corvid's own
// config file with that one key set and hands the copy to the core (`configFile`). Pure (no
// `vscode`), so it is unit-tested directly; a line-based edit, not a TOML parser: it finds the
// `[provider]` table by its header line and a `models = [...]` key in it (one or more lines).

/** A TOML basic string. */
function tomlString(s: string): string {
  return `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/[\u0000-\u001f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)}"`;
}

/** The `models = [...]` line for `models`. */
export function modelsLine(models: readonly string[]): string {
  return `models = [${models.map(tomlString).join(", ")}]`;
}

const HEADER = /^\s*\[\s*([A-Za-z0-9_.\-"' ]+?)\s*\]\s*(#.*)?$/;
const ARRAY_HEADER = /^\s*\[\[/;

/**
 * `toml` (Corvid's config file, or null when there is none) with `[provider] models` set to
 * `models`: an existing `models` key of that table is replaced, else the key is added at the
 * top of the table, else a `[provider]` table is appended. Everything else stays as it was.
 */
export function withModels(toml: string | null, models: readonly string[]): string {
  const line = modelsLine(models);
  const lines = (toml ?? "").split("\n");
  const isHeader = (l: string) => ARRAY_HEADER.test(l) || HEADER.test(l);
  const start = lines.findIndex((l) => HEADER.test(l) && !ARRAY_HEADER.test(l) && HEADER.exec(l)![1].replace(/["']/g, "") === "provider");
  if (start < 0) {
    const text = toml ?? "";
    return `${text}${text && !text.endsWith("\n") ? "\n" : ""}${text ? "\n" : ""}[provider]\n${line}\n`;
  }
  let end = start + 1;
  while (end < lines.length && !isHeader(lines[end])) end++;
  for (let i = start + 1; i < end; i++) {
    if (!/^\s*models\s*=/.test(lines[i])) continue;
    // The array may span lines: up to the line where its brackets balance.
    let depth = 0;
    let j = i;
    for (; j < end; j++) {
      for (const ch of lines[j].replace(/"(?:[^"\\]|\\.)*"|'[^']*'/g, "").replace(/#.*$/, "")) {
        if (ch === "[") depth++;
        else if (ch === "]") depth--;
      }
      if (depth <= 0) break;
    }
    lines.splice(i, Math.min(j, end - 1) - i + 1, line);
    return lines.join("\n");
  }
  lines.splice(start + 1, 0, line);
  return lines.join("\n");
}

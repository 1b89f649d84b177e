// Markdown for the chat: markdown-it (CommonMark + GitHub tables and strikethrough) with raw
// HTML off, so HTML in the model's output shows up as text and no attribute of the model's
// choosing is ever emitted. Links are kept only for http(s) and mailto URLs (others, such as
// `javascript:`, stay literal text); images are off (no remote loads from agent text). Fenced
// code is highlighted by highlight.js (a few common languages, colored in chat.css through
// VS Code's theme variables) and gets Copy and Insert buttons.
import MarkdownIt from "markdown-it";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import ini from "highlight.js/lib/languages/ini";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

// A handful of common languages keeps the webview bundle small (css, sql and cpp alone would
// add about 25 KB); others render as plain, escaped text.
const languages = { bash, c, diff, go, ini, javascript, json, markdown, python, rust, shell, typescript, xml, yaml };
for (const [name, lang] of Object.entries(languages)) hljs.registerLanguage(name, lang);
hljs.registerAliases(["toml"], { languageName: "ini" });
hljs.registerAliases(["sh", "zsh", "console"], { languageName: "bash" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });
hljs.registerAliases(["cpp", "c++", "h", "hpp"], { languageName: "c" });

export function escapeHtml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}

function highlight(code: string, lang: string): string {
  if (lang && hljs.getLanguage(lang)) {
    try {
      // highlight.js escapes the source itself; its output holds only its own <span class>.
      return hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
    } catch {
      // fall through to plain text
    }
  }
  return escapeHtml(code);
}

const md = new MarkdownIt({ html: false, linkify: true, typographer: false });
md.disable("image");
// markdown-it's own check already refuses javascript:, vbscript:, file: and most data:; this
// one is stricter: only web and mail links become anchors.
md.validateLink = (url: string) => /^(https?:|mailto:)/i.test(url.trim());
md.renderer.rules.fence = (tokens, idx) => {
  const token = tokens[idx];
  const lang = token.info.trim().split(/\s+/)[0] ?? "";
  const code = token.content.replace(/\n$/, "");
  const label = lang ? `<span class="code-lang">${escapeHtml(lang)}</span>` : "";
  const cls = lang ? ` class="hljs language-${escapeHtml(lang)}"` : ` class="hljs"`;
  return (
    `<div class="codeblock">${label}<span class="code-actions">` +
    `<button class="code-copy secondary" aria-label="Copy code" title="Copy code">Copy</button>` +
    `<button class="code-insert secondary" aria-label="Insert code at cursor" title="Insert at the cursor in the editor">Insert</button>` +
    `</span><pre><code${cls}>${highlight(code, lang)}</code></pre></div>\n`
  );
};
md.renderer.rules.code_block = (tokens, idx) => `<pre><code>${escapeHtml(tokens[idx].content.replace(/\n$/, ""))}</code></pre>\n`;
// Links open outside the webview (VS Code routes them to the browser); say so to the reader.
const defaultLinkOpen = md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  tokens[idx].attrSet("title", tokens[idx].attrGet("href") ?? "");
  return defaultLinkOpen(tokens, idx, options, env, self);
};

export function renderMarkdown(src: string): string {
  return md.render(src);
}

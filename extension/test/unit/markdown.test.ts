import { test } from "node:test";
import assert from "node:assert/strict";
import { renderMarkdown } from "../../src/markdown";

test("raw HTML is escaped, never passed through", () => {
  const html = renderMarkdown('hi <script>alert(1)</script> <img src=x onerror="y">\n\n<div onclick="z">block</div>');
  assert.ok(!html.includes("<script"), html);
  assert.ok(!html.includes("<img"), html);
  assert.ok(!html.includes("<div onclick"), html);
  assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
  assert.match(html, /&lt;img src=x onerror=&quot;y&quot;&gt;/);
});

test("no attribute of the model's choosing: onerror and friends stay text, quotes in URLs stay inside href", () => {
  const html = renderMarkdown('[x](https://e.com/"onmouseover="y) and ![i](https://e.com/a.png" onerror="alert(1))');
  assert.ok(!/<[a-z][^>]*\sonmouseover=/i.test(html), html);
  assert.ok(!/<[a-z][^>]*\sonerror=/i.test(html), html);
  assert.ok(!html.includes("<img"), "images are off");
});

test("only http(s) and mailto links become anchors; javascript:, data: and vbscript: do not", () => {
  assert.match(renderMarkdown("[ok](https://example.com)"), /<a href="https:\/\/example.com" title="https:\/\/example.com">ok<\/a>/);
  assert.match(renderMarkdown("[m](mailto:a@b.c)"), /<a href="mailto:a@b.c"/);
  for (const bad of ["[x](javascript:alert(1))", "[x](JaVaScRiPt:alert(1))", "[x](data:text/html;base64,PHNjcmlwdD4=)", "[x](vbscript:msgbox)", "<javascript:alert(1)>"]) {
    const html = renderMarkdown(bad);
    assert.ok(!html.includes("<a"), `${bad} -> ${html}`);
  }
});

test("tables render as <table> with header and body cells", () => {
  const html = renderMarkdown("| Name | Size |\n|:-----|-----:|\n| a.rs | 10 |\n| b.rs | `20` |\n");
  assert.match(html, /<table>\s*<thead>\s*<tr>\s*<th[^>]*>Name<\/th>\s*<th[^>]*>Size<\/th>/);
  assert.match(html, /<tbody>\s*<tr>\s*<td[^>]*>a\.rs<\/td>\s*<td[^>]*>10<\/td>/);
  assert.match(html, /<td[^>]*><code>20<\/code><\/td>/);
});

test("nested lists nest", () => {
  const html = renderMarkdown("- one\n  - one.a\n  - one.b\n    1. deep\n- two\n");
  assert.match(html, /<ul>\s*<li>one\s*<ul>\s*<li>one\.a<\/li>\s*<li>one\.b\s*<ol>\s*<li>deep<\/li>\s*<\/ol>\s*<\/li>\s*<\/ul>\s*<\/li>\s*<li>two<\/li>\s*<\/ul>/);
});

test("emphasis around code, and code that holds emphasis markers", () => {
  const html = renderMarkdown("Call **`run()`** then *`stop()`*; `a*b*c` and `__x__` stay literal; ~~old~~.");
  assert.match(html, /<strong><code>run\(\)<\/code><\/strong>/);
  assert.match(html, /<em><code>stop\(\)<\/code><\/em>/);
  assert.match(html, /<code>a\*b\*c<\/code>/);
  assert.match(html, /<code>__x__<\/code>/);
  assert.match(html, /<s>old<\/s>/);
});

test("fenced code: highlighted by language, escaped, with Copy and Insert buttons", () => {
  const html = renderMarkdown("```ts\nconst x: number = 1 < 2 ? 3 : 4; // <b>\n```\n");
  assert.match(html, /<div class="codeblock"><span class="code-lang">ts<\/span>/);
  assert.match(html, /<button class="code-copy secondary" aria-label="Copy code"[^>]*>Copy<\/button>/);
  assert.match(html, /<button class="code-insert secondary" aria-label="Insert code at cursor"[^>]*>Insert<\/button>/);
  assert.match(html, /<code class="hljs language-ts"><span class="hljs-keyword">const<\/span>/);
  assert.ok(html.includes("&lt;b&gt;") && !html.includes("<b>"), html);
  // An unknown language is plain escaped text, still with the buttons.
  const plain = renderMarkdown("```nosuchlang\n<i>x</i>\n```");
  assert.match(plain, /<code class="hljs language-nosuchlang">&lt;i&gt;x&lt;\/i&gt;<\/code>/);
  // The language label cannot break out of its attribute.
  const sneaky = renderMarkdown('```"><img/onerror=1>\nx\n```');
  assert.ok(!sneaky.includes("<img"), sneaky);
});

test("an unterminated fence while streaming still renders as code", () => {
  assert.match(renderMarkdown("text\n```\npartial <b>"), /<pre><code class="hljs">partial &lt;b&gt;<\/code><\/pre>/);
});

test("headings, block quotes, rules and paragraphs", () => {
  const html = renderMarkdown("# Title\n\n> quoted *it*\n\n---\n\nplain");
  assert.match(html, /<h1>Title<\/h1>/);
  assert.match(html, /<blockquote>\s*<p>quoted <em>it<\/em><\/p>\s*<\/blockquote>/);
  assert.match(html, /<hr>/);
  assert.match(html, /<p>plain<\/p>/);
});

import { test } from "node:test";
import assert from "node:assert/strict";
import { renderMarkdown } from "../../src/markdown";

test("raw HTML is escaped, never passed through", () => {
  const html = renderMarkdown('hi <script>alert(1)</script> <img src=x onerror="y">');
  assert.ok(!html.includes("<script"));
  assert.ok(!html.includes("<img"));
  assert.match(html, /&lt;script&gt;/);
});

test("code fences, inline code, emphasis, headings, lists", () => {
  const html = renderMarkdown("# Title\n\nSome **bold** and *it* and `a<b`.\n\n```ts\nconst x = 1 < 2;\n```\n\n- one\n- two\n\n1. first\n");
  assert.match(html, /<h1>Title<\/h1>/);
  assert.match(html, /<strong>bold<\/strong>/);
  assert.match(html, /<em>it<\/em>/);
  assert.match(html, /<code>a&lt;b<\/code>/);
  assert.match(html, /<pre><code class="language-ts">const x = 1 &lt; 2;<\/code><\/pre>/);
  assert.match(html, /<ul><li>one<\/li><li>two<\/li><\/ul>/);
  assert.match(html, /<ol><li>first<\/li><\/ol>/);
});

test("only http(s) links become anchors; javascript: URLs do not", () => {
  assert.match(renderMarkdown("[ok](https://example.com)"), /<a href="https:\/\/example.com">ok<\/a>/);
  const bad = renderMarkdown("[x](javascript:alert(1))");
  assert.ok(!bad.includes("<a"));
  const quoted = renderMarkdown('[x](https://e.com/"onmouseover="y)');
  assert.ok(!/href="[^"]*"onmouseover/.test(quoted), quoted);
});

test("an unterminated fence while streaming still renders as code", () => {
  assert.match(renderMarkdown("text\n```\npartial <b>"), /<pre><code>partial &lt;b&gt;<\/code><\/pre>/);
});

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  activeMentions,
  chipOfBlock,
  chipsOf,
  contextBlocks,
  contextUri,
  foldersOf,
  imageProblem,
  insertMention,
  mentionAt,
  mentionToken,
  promptCapsOf,
  rankPaths,
  scorePath,
  type Attachment,
} from "../../src/context";
import { applyUpdate, initialState } from "../../src/viewModel";

const all = { image: true, embeddedContext: true };
const none = { image: false, embeddedContext: false };
const file: Attachment = { kind: "file", uri: "file:///w/src/a.ts", name: "a.ts", text: "let a = 1;", mimeType: "text/x-typescript" };
const sel: Attachment = { kind: "selection", uri: "file:///w/src/a.ts", name: "a.ts:3-5", lines: { start: 3, end: 5 }, text: "x" };
const img: Attachment = { kind: "image", id: "img1", name: "shot.png", mimeType: "image/png", data: "iVBORw0K" };

test("promptCapsOf reads initialize's promptCapabilities; missing means not offered", () => {
  assert.deepEqual(promptCapsOf({ agentCapabilities: { promptCapabilities: { image: true, embeddedContext: true } } }), all);
  assert.deepEqual(promptCapsOf({ agentCapabilities: {} }), none);
  assert.deepEqual(promptCapsOf(null), none);
});

test("contextBlocks: the text first, then the context; each kind as the agent advertises", () => {
  const folder: Attachment = { kind: "folder", uri: "file:///w/src", name: "src/" };
  const symbol: Attachment = { kind: "symbol", uri: "file:///w/src/a.ts", name: "main (a.ts:10)", lines: { start: 10, end: 12 }, text: "fn main() {}" };
  const { blocks, dropped } = contextBlocks("explain @a.ts", [file, folder, sel, symbol, img], all);
  assert.deepEqual(dropped, []);
  assert.deepEqual(blocks, [
    { type: "text", text: "explain @a.ts" },
    { type: "resource", resource: { uri: "file:///w/src/a.ts", text: "let a = 1;", mimeType: "text/x-typescript" } },
    { type: "resource_link", uri: "file:///w/src", name: "src/" },
    { type: "resource", resource: { uri: "file:///w/src/a.ts#L3-5", text: "x" } },
    { type: "resource", resource: { uri: "file:///w/src/a.ts#L10-12", text: "fn main() {}" } },
    { type: "image", data: "iVBORw0K", mimeType: "image/png" },
  ]);
});

test("contextBlocks without embeddedContext links instead of embedding; without image drops images", () => {
  const { blocks, dropped } = contextBlocks("q", [file, sel, img], none);
  assert.deepEqual(blocks, [
    { type: "text", text: "q" },
    { type: "resource_link", uri: "file:///w/src/a.ts", name: "a.ts", mimeType: "text/x-typescript" },
    { type: "resource_link", uri: "file:///w/src/a.ts#L3-5", name: "a.ts:3-5" },
  ]);
  assert.deepEqual(dropped, ["shot.png"]);
});

test("contextBlocks sends a file once when it is both the current-file chip and a mention", () => {
  const mention: Attachment = { kind: "file", uri: file.uri, name: "a.ts" };
  const { blocks } = contextBlocks("see @a.ts", [file, mention, sel, { ...sel, text: undefined }], all);
  assert.equal(blocks.filter((b) => b.type === "resource").length, 2);
  assert.deepEqual(chipsOf([file, mention, sel]), [
    { kind: "file", name: "a.ts" },
    { kind: "selection", name: "a.ts:3-5" },
  ]);
});

test("mentionAt finds the @ word at the caret, only at a word start", () => {
  assert.deepEqual(mentionAt("explain @mai", 12), { start: 8, query: "mai" });
  assert.deepEqual(mentionAt("@", 1), { start: 0, query: "" });
  assert.deepEqual(mentionAt("a\n@src/ma", 9), { start: 2, query: "src/ma" });
  assert.equal(mentionAt("mail me at me@example.com", 25), null);
  assert.equal(mentionAt("explain @main now", 17), null); // the caret is past the word
  assert.deepEqual(mentionAt("explain @main now", 13), { start: 8, query: "main" });
});

test("insertMention replaces the @ word with the token and a space; activeMentions keeps tokens still in the text", () => {
  const r = insertMention("explain @mai please", 8, 12, mentionToken("main.rs"));
  assert.deepEqual(r, { text: "explain @main.rs please", caret: 17 });
  assert.equal(mentionToken("My File.txt"), "@My-File.txt");
  const ms = [{ token: "@main.rs" }, { token: "@lib.rs" }, { token: "@a.ts" }];
  assert.deepEqual(activeMentions("explain @main.rs, and @a.ts.", ms).map((m) => m.token), ["@main.rs", "@a.ts"]);
  assert.deepEqual(activeMentions("@main.rsx is another file", ms), []);
});

test("rankPaths: exact name, then name prefix, name substring, path substring, fuzzy; shorter paths first", () => {
  const paths = ["src/mention-target.ts", "docs/mentions.md", "src/deep/a/b/mention.ts", "mention.ts", "README.md", "src/main.ts", "test/e2e/mention-target.cjs"];
  assert.deepEqual(rankPaths("mention.ts", paths, 3), ["mention.ts", "src/deep/a/b/mention.ts", "src/mention-target.ts"]);
  assert.deepEqual(rankPaths("mention-ta", paths, 5), ["src/mention-target.ts", "test/e2e/mention-target.cjs"]);
  assert.deepEqual(rankPaths("readme", paths, 5), ["README.md"]);
  assert.deepEqual(rankPaths("srcmain", paths, 5), ["src/main.ts"]);
  assert.ok(scorePath("deep", "src/deep/a/b/mention.ts") > scorePath("dmt", "src/deep/a/b/mention.ts"));
  assert.equal(scorePath("zzz", "src/main.ts"), 0);
  assert.equal(rankPaths("", paths, 2).length, 2);
});

test("foldersOf lists every folder that holds a file, once", () => {
  assert.deepEqual(foldersOf(["src/a.ts", "src/deep/b.ts", "c.md"]).sort(), ["src", "src/deep"]);
});

test("imageProblem: refused when the agent takes no images or when over 5 MB", () => {
  assert.equal(imageProblem(1000, "image/png", all), null);
  assert.match(imageProblem(1000, "image/png", none)!, /does not accept images/);
  assert.match(imageProblem(6 * 1024 * 1024, "image/png", all)!, /6\.0 MB; the limit is 5 MB/);
});

test("a replayed prompt's context blocks become chips on its message, not text", () => {
  assert.deepEqual(chipOfBlock({ type: "resource", resource: { uri: "file:///w/src/a.ts#L3-5", text: "x" } }), { kind: "selection", name: "a.ts:3-5" });
  assert.deepEqual(chipOfBlock({ type: "resource_link", uri: "file:///w/src", name: "src/" }), { kind: "file", name: "src/" });
  assert.equal(chipOfBlock({ type: "text", text: "hi" }), null);
  const s = initialState();
  applyUpdate(s, { sessionUpdate: "user_message_chunk", content: { type: "text", text: "what is this?" } });
  applyUpdate(s, { sessionUpdate: "user_message_chunk", content: { type: "resource", resource: { uri: "file:///w/README.md", text: "# demo" } } });
  applyUpdate(s, { sessionUpdate: "user_message_chunk", content: { type: "image", data: "AA==", mimeType: "image/png" } });
  assert.deepEqual(s.items, [
    {
      kind: "user",
      text: "what is this?",
      attachments: [
        { kind: "file", name: "README.md" },
        { kind: "image", name: "image" },
      ],
    },
  ]);
});

test("@problems, @changes, @terminal: embedded as text under corvid: URIs, a chip again on a replay", () => {
  const problems: Attachment = { kind: "context", source: "problems", uri: contextUri("problems"), name: "problems", text: "a.json:1:9: error: Expected comma" };
  const unread: Attachment = { kind: "context", source: "changes", uri: contextUri("changes"), name: "changes" };
  const embedded = contextBlocks("fix @problems", [problems, unread], { image: false, embeddedContext: true }).blocks;
  assert.deepEqual(embedded, [
    { type: "text", text: "fix @problems" },
    { type: "resource", resource: { uri: "corvid:problems", text: "a.json:1:9: error: Expected comma", mimeType: "text/plain" } },
  ]);
  // Without embedded context, the text goes as text (a link to corvid: would lead nowhere).
  const plain = contextBlocks("fix @problems", [problems], { image: false, embeddedContext: false }).blocks;
  assert.deepEqual(plain[1], { type: "text", text: "@problems:\na.json:1:9: error: Expected comma" });
  assert.deepEqual(chipOfBlock(embedded[1]), { kind: "context", name: "problems" });
  assert.deepEqual(chipsOf([problems, problems]), [{ kind: "context", name: "problems" }]);
});

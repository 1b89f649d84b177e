import { test } from "node:test";
import assert from "node:assert/strict";
import { acpServers, parseJsonc } from "../../src/mcpServers";

const vars = { workspaceFolder: "/w", userHome: "/home/u" };

test("VS Code's stdio and HTTP MCP servers become ACP's, variables expanded", () => {
  const { candidates, skipped } = acpServers(
    {
      files: { command: "npx", args: ["-y", "server-files", "${workspaceFolder}"], env: { TOKEN: "${env:GH}", EMPTY: null } },
      remote: { type: "http", url: "https://mcp.example/x", headers: { Authorization: "Bearer t" } },
      home: { type: "stdio", command: "${userHome}/bin/srv" },
    },
    { http: true, sse: false },
    vars,
    { GH: "gh-token" },
  );
  assert.deepEqual(skipped, []);
  assert.deepEqual(
    candidates.map((c) => [c.name, c.server, c.what]),
    [
      ["files", { name: "files", command: "npx", args: ["-y", "server-files", "/w"], env: [{ name: "TOKEN", value: "gh-token" }] }, "npx -y server-files /w"],
      ["remote", { type: "http", name: "remote", url: "https://mcp.example/x", headers: [{ name: "Authorization", value: "Bearer t" }] }, "https://mcp.example/x"],
      ["home", { name: "home", command: "/home/u/bin/srv", args: [], env: [] }, "/home/u/bin/srv"],
    ],
  );
});

test("servers the agent cannot take, or that need VS Code's input prompts, are left out with the reason", () => {
  const { candidates, skipped } = acpServers(
    {
      sse: { type: "sse", url: "https://x/sse" },
      http: { url: "https://x/mcp" },
      asks: { command: "srv", env: { KEY: "${input:key}" } },
      none: {},
      odd: { type: "websocket", url: "ws://x" },
    },
    { http: false, sse: false },
    vars,
  );
  assert.equal(candidates.length, 0);
  assert.deepEqual(skipped, [
    { name: "sse", why: "the agent does not take SSE MCP servers" },
    { name: "http", why: "the agent does not take HTTP MCP servers" },
    { name: "asks", why: "it asks for an input VS Code prompts for" },
    { name: "none", why: "it names no command" },
    { name: "odd", why: 'its type "websocket" is unknown' },
  ]);
});

test("the consent key follows the definition: same server, same key; another command, another key", () => {
  const key = (command: string) => acpServers({ s: { command } }, { http: false, sse: false }, vars).candidates[0].key;
  assert.equal(key("a"), key("a"));
  assert.notEqual(key("a"), key("b"));
});

test("parseJsonc takes comments and trailing commas, and leaves strings alone", () => {
  const text = `{
    // servers
    "servers": { /* one */ "a": { "command": "x//y", "args": ["/*no*/", "q\\"//",], }, },
  }`;
  assert.deepEqual(parseJsonc(text), { servers: { a: { command: "x//y", args: ["/*no*/", 'q"//'] } } });
});

// A real MCP server for the tests, on the official TypeScript SDK.
//   node mcp-server.mjs <name>           stdio
//   node mcp-server.mjs <name> --http    streamable HTTP on 127.0.0.1 (prints "PORT <n>")
// Tools: echo (text), whoami (name and pid), picture (an image), slow (never answers),
// crash (the process exits mid-call), peek (read-only: declared readOnlyHint).
import http from "node:http";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const name = process.argv[2] ?? "test";
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const obj = (props = {}) => ({ type: "object", properties: props });

function makeServer() {
  const server = new Server({ name, version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      { name: "echo", description: `Echo from ${name}`, inputSchema: obj({ text: { type: "string" } }) },
      { name: "whoami", description: "Server name and pid", inputSchema: obj() },
      { name: "picture", description: "An image", inputSchema: obj() },
      { name: "slow", description: "Never answers", inputSchema: obj() },
      { name: "crash", description: "Exits mid-call", inputSchema: obj() },
      { name: "peek", description: "Read-only look", inputSchema: obj(), annotations: { readOnlyHint: true } },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const args = req.params.arguments ?? {};
    switch (req.params.name) {
      case "echo":
        return { content: [{ type: "text", text: `${name} says: ${args.text}` }] };
      case "whoami":
        // apiKeys: which *_API_KEY variables this server inherited (the security test wants none).
        return { content: [{ type: "text", text: JSON.stringify({ name, pid: process.pid, apiKeys: Object.keys(process.env).filter((k) => k.endsWith("_API_KEY")) }) }] };
      case "picture":
        return { content: [{ type: "text", text: "here it is" }, { type: "image", data: PNG, mimeType: "image/png" }] };
      case "slow":
        return new Promise(() => {});
      case "crash":
        process.exit(3);
      case "peek":
        return { content: [{ type: "text", text: "peeked" }] };
      default:
        return { content: [{ type: "text", text: `no tool ${req.params.name}` }], isError: true };
    }
  });
  return server;
}

if (process.argv.includes("--http")) {
  const httpServer = http.createServer(async (req, res) => {
    let raw = "";
    for await (const c of req) raw += c;
    // Stateless: a server and transport per request, as the SDK documents.
    const server = makeServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, raw ? JSON.parse(raw) : undefined);
  });
  httpServer.listen(0, "127.0.0.1", () => console.log(`PORT ${httpServer.address().port}`));
} else {
  await makeServer().connect(new StdioServerTransport());
}

#!/usr/bin/env node
// One real prompt turn against a build of Corvid that this machine cannot test the usual way:
// a cross-built binary under an emulator, a cross-built addon in a foreign Node, or the npm
// package as a user installs it. Used by scripts/cross-check.sh, scripts/npm-packages.sh and
// the release workflow.
//
//   node smoke-turn.mjs [--wine] --exec <command> [args...]   spawns it, ACP over its stdio
//   node smoke-turn.mjs --addon <file.node>                     the addon's NativeAgent
//   node smoke-turn.mjs --package <folder>                      `createAgent` of the installed
//                                                               corvid-acp in <folder>
//   --initialize-only                                           stop after `initialize`
//
// The turn: `initialize`, `session/new` in a fresh folder, then one prompt that the fake model
// (tests/support/fake-model.mjs, on loopback) answers with a `write_file` call, a `run_command`
// call (`echo`, which `sh -c` and `cmd /C` both run) and a closing text. Every permission
// question is answered `allow_once`. Passes (exit 0) when the prompt ends with `end_turn`, the
// file holds what was written, the command's output came back to the model and the closing text
// was streamed. `--wine` gives the agent the folder as a Wine path (Z:\...). Fails on an error
// answer, an early exit, or after SMOKE_TIMEOUT seconds (default 180: first starts under Wine or
// qemu are slow). Prints each step with its time.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { startFakeModel } from "../tests/support/fake-model.mjs";

const args = process.argv.slice(2);
const flag = (name) => {
  const at = args.indexOf(name);
  if (at >= 0) args.splice(at, 1);
  return at >= 0;
};
const initializeOnly = flag("--initialize-only");
const wine = flag("--wine");
const [mode, ...rest] = args;
const timeoutSeconds = Number(process.env.SMOKE_TIMEOUT ?? 180);
const started = Date.now();
const log = (text) => console.log(`[${((Date.now() - started) / 1000).toFixed(1)} s] ${text}`);

function fail(text) {
  log(`FAILED: ${text}`);
  // What the tool calls reported, to tell where it went wrong.
  for (const u of updates) {
    if (u.sessionUpdate !== "tool_call" && u.sessionUpdate !== "tool_call_update") continue;
    const shown = (u.content ?? []).map((c) => (c.type === "content" ? c.content?.text : c.type)).join(" | ");
    log(`  ${u.sessionUpdate} ${u.toolCallId} ${u.status ?? ""} ${u.title ?? ""} ${shown}`.trimEnd());
  }
  process.exit(1);
}
const timer = setTimeout(() => fail(`no end within ${timeoutSeconds} s`), timeoutSeconds * 1000);

const fake = await startFakeModel({ models: ["fake-model"] });
const dataDir = realpathSync(mkdtempSync(join(tmpdir(), "corvid-smoke-data-")));
const workspace = realpathSync(mkdtempSync(join(tmpdir(), "corvid-smoke-ws-")));
const asAgentPath = (path) => (wine ? `Z:${path.replaceAll("/", "\\")}` : path);
writeFileSync(join(dataDir, "config.toml"), "# empty: the smoke turn's settings come from the environment\n");
// What the agent needs: the fake model, and nothing from this machine's own configuration.
const agentEnv = {
  CORVID_BASE_URL: fake.url,
  CORVID_API_KEY: "smoke",
  CORVID_MODEL: "fake-model",
  CORVID_DATA_DIR: asAgentPath(dataDir),
  CORVID_CONFIG: asAgentPath(join(dataDir, "config.toml")),
};

// The streamed session updates (the tool calls' are printed on failure).
const updates = [];
// A transport: send(message object); incoming messages go to `receive`.
let receive = () => {};
const transport = await open(mode, rest);

async function open(kind, rest) {
  if (kind === "--exec") {
    const [command, ...commandArgs] = rest;
    const child = spawn(command, commandArgs, {
      stdio: ["pipe", "pipe", "inherit"],
      env: { ...process.env, ...agentEnv },
    });
    let buffered = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => {
      buffered += chunk;
      let newline;
      while ((newline = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, newline).trim();
        buffered = buffered.slice(newline + 1);
        if (line) receive(JSON.parse(line));
      }
    });
    child.on("error", (e) => fail(`cannot start ${command}: ${e.message}`));
    child.on("exit", (code, signal) => {
      if (!finished) fail(`${command} exited (${signal ?? code}) before the turn ended`);
    });
    return {
      send: (message) => child.stdin.write(`${JSON.stringify(message)}\n`),
      close: async () => {
        child.stdin.end(); // end of input: the agent exits on its own
        await new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)));
      },
    };
  }
  if (kind === "--addon") {
    const addon = createRequire(import.meta.url)(resolve(rest[0]));
    if (typeof addon.NativeAgent !== "function") fail(`the addon exports no NativeAgent: ${Object.keys(addon).join(", ")}`);
    const options = { store: "none", dataDir, baseUrl: fake.url, apiKey: "smoke", model: "fake-model" };
    const agent = new addon.NativeAgent(options, (line) => line && receive(JSON.parse(line)));
    return { send: (message) => agent.send(JSON.stringify(message)), close: () => agent.close() };
  }
  if (kind === "--package") {
    // Resolved as a user's code would: `import "corvid-acp"` from a file in <folder>.
    const from = createRequire(join(resolve(rest[0]), "package.json"));
    const { createAgent } = await import(pathToFileURL(from.resolve("corvid-acp")).href);
    const agent = createAgent({ store: "none", dataDir, baseUrl: fake.url, apiKey: "smoke", model: "fake-model" });
    const writer = agent.writable.getWriter();
    (async () => {
      for await (const message of agent.readable) receive(message);
    })();
    return { send: (message) => writer.write(message), close: () => agent.close() };
  }
  console.log("usage: smoke-turn.mjs [--wine] [--initialize-only] --exec <command> [args...] | --addon <file.node> | --package <folder>");
  process.exit(2);
}

// Requests by id, and the streamed updates.
const waiting = new Map();
let finished = false;
receive = (message) => {
  if (message.method === "session/request_permission") {
    const option = message.params.options.find((o) => o.kind === "allow_once") ?? message.params.options[0];
    log(`permission asked for ${message.params.toolCall?.title ?? "a tool call"}: ${option.optionId}`);
    transport.send({ jsonrpc: "2.0", id: message.id, result: { outcome: { outcome: "selected", optionId: option.optionId } } });
  } else if (message.method === "session/update") {
    updates.push(message.params.update);
  } else if (message.id !== undefined && message.method !== undefined) {
    transport.send({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "Method not found" } });
  } else if (waiting.has(message.id)) {
    waiting.get(message.id)(message);
  }
};
let nextId = 0;
async function request(method, params) {
  const id = ++nextId;
  const answer = new Promise((r) => waiting.set(id, r));
  transport.send({ jsonrpc: "2.0", id, method, params });
  const message = await answer;
  if (message.error) fail(`${method}: error ${JSON.stringify(message.error)}`);
  return message.result;
}

const init = await request("initialize", { protocolVersion: 1, clientCapabilities: {} });
if (init.protocolVersion === undefined) fail(`initialize: no protocolVersion in ${JSON.stringify(init)}`);
log(`initialize answered: protocol ${init.protocolVersion}, ${init.agentInfo?.name ?? "?"} ${init.agentInfo?.version ?? ""}`);
// How the turn's command will be confined (landlock, or none with the reason).
const sandbox = init._meta?.corvid?.sandbox;
log(`sandbox: ${sandbox?.kind ?? "not reported"}${sandbox?.reason ? ` (${sandbox.reason})` : ""}`);

if (!initializeOnly) {
  const session = await request("session/new", { cwd: asAgentPath(workspace), mcpServers: [] });
  log(`session/new answered: ${session.sessionId}`);
  const marker = "SMOKE-TURN";
  const content = "written by the smoke turn\n";
  const call = (name, args, id) => ({ toolCalls: [{ name, arguments: args, id }] });
  fake.script(marker, {
    steps: [
      call("write_file", { path: "smoke.txt", content }, "w1"),
      call("run_command", { command: "echo corvid-smoke-output" }, "c1"),
      { chunks: [{ content: "smoke turn done" }] },
    ],
  });
  const answer = await request("session/prompt", { sessionId: session.sessionId, prompt: [{ type: "text", text: marker }] });
  log(`session/prompt answered: stopReason ${answer.stopReason}`);
  if (answer.stopReason !== "end_turn") fail(`stopReason ${answer.stopReason}`);
  let written = null;
  try {
    written = readFileSync(join(workspace, "smoke.txt"), "utf8");
  } catch (error) {
    fail(`smoke.txt was not written (${error.code})`);
  }
  if (written !== content) fail(`smoke.txt holds ${JSON.stringify(written)}`);
  log("write_file: the file holds what was written");
  const toolResults = fake.requests.filter((r) => r.body?.messages).at(-1).body.messages.filter((m) => m.role === "tool");
  const commandResult = toolResults.at(-1)?.content ?? "";
  if (!String(commandResult).includes("corvid-smoke-output")) fail(`run_command's result: ${JSON.stringify(commandResult)}`);
  log("run_command: its output reached the model");
  const text = updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");
  if (!text.includes("smoke turn done")) fail(`streamed text: ${JSON.stringify(text)}`);
  log("the closing text was streamed");
}

finished = true;
clearTimeout(timer);
await transport.close();
await fake.close();
for (const folder of [workspace, dataDir]) rmSync(folder, { recursive: true, force: true });
log(initializeOnly ? "initialize: ok" : "smoke turn: ok");
process.exit(0);

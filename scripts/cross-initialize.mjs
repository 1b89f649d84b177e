#!/usr/bin/env node
// One ACP `initialize` round trip, for scripts/cross-check.sh (a cross-built binary under an
// emulator, or the cross-built addon in a foreign Node).
//
//   node cross-initialize.mjs --exec <command> [args...]   spawns it, talks ACP over its stdio
//   node cross-initialize.mjs --addon <file.node>          loads the addon, talks to NativeAgent
//
// Passes (exit 0) when the answer to request 1 is a result with a protocolVersion; prints the
// answer's first 300 characters. Fails on an error answer, an early exit, or after
// CROSS_INIT_TIMEOUT seconds (default 120: first starts under Wine or qemu are slow).
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const request = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: 1, clientCapabilities: {} },
};
const timeoutSeconds = Number(process.env.CROSS_INIT_TIMEOUT ?? 120);
const [mode, ...rest] = process.argv.slice(2);

function check(line) {
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return undefined; // not JSON-RPC (a log line): keep reading
  }
  if (message.id !== 1) return undefined;
  if (message.result && message.result.protocolVersion !== undefined) return { ok: true, line };
  return { ok: false, line };
}

function finish(outcome) {
  const text = outcome.line.length > 300 ? `${outcome.line.slice(0, 300)}…` : outcome.line;
  console.log(`${outcome.ok ? "initialize answered" : "initialize failed"}: ${text}`);
  process.exit(outcome.ok ? 0 : 1);
}

const timer = setTimeout(() => {
  console.log(`no answer to initialize within ${timeoutSeconds} s`);
  process.exit(1);
}, timeoutSeconds * 1000);

if (mode === "--exec") {
  const [command, ...args] = rest;
  const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
  let buffered = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk) => {
    buffered += chunk;
    let newline;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, newline).trim();
      buffered = buffered.slice(newline + 1);
      const outcome = check(line);
      if (outcome) {
        clearTimeout(timer);
        child.stdin.end(); // end of input: the agent exits on its own
        child.kill();
        finish(outcome);
      }
    }
  });
  child.on("error", (e) => {
    console.log(`cannot start ${command}: ${e.message}`);
    process.exit(1);
  });
  child.on("exit", (code, signal) => {
    console.log(`${command} exited (${signal ?? code}) before answering initialize`);
    process.exit(1);
  });
  child.stdin.write(`${JSON.stringify(request)}\n`);
} else if (mode === "--addon") {
  const require = createRequire(import.meta.url);
  const addon = require(resolve(rest[0]));
  if (typeof addon.NativeAgent !== "function") {
    console.log(`the addon loaded but exports no NativeAgent: ${Object.keys(addon).join(", ")}`);
    process.exit(1);
  }
  const dataDir = mkdtempSync(join(tmpdir(), "corvid-cross-addon-"));
  let agent;
  agent = new addon.NativeAgent({ store: "none", dataDir }, (line) => {
    const outcome = line ? check(line) : undefined;
    if (outcome) {
      clearTimeout(timer);
      agent.close().then(() => finish(outcome));
    }
  });
  agent.send(JSON.stringify(request));
} else {
  console.log("usage: cross-initialize.mjs --exec <command> [args...] | --addon <file.node>");
  process.exit(2);
}

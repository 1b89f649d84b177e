// Model-provider behaviour through the real binary: configuration, discovery, failures.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent, withInitializedAgent } from "../support/agent.mjs";

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

const withAgent = withInitializedAgent;

async function promptOnce(agent, text, id = 2) {
  const s = await agent.request(1, "session/new", { cwd: tmpdir(), mcpServers: [] });
  assert.ok(s.result, JSON.stringify(s));
  return agent.request(id, "session/prompt", { sessionId: s.result.sessionId, prompt: [{ type: "text", text }] }, 15000);
}

test("no provider and no Ollama: initialize offers a setup auth method, session/new answers -32000", () =>
  withAgent(agentEnv(), async (agent) => {
    const init = agent.frames.find((f) => f.id === 0).result;
    assert.equal(init.authMethods.length, 1);
    assert.equal(init.authMethods[0].id, "corvid-setup");
    assert.match(init.authMethods[0].description, /CORVID_BASE_URL/);
    const r = await agent.request(1, "session/new", { cwd: tmpdir(), mcpServers: [] });
    assert.equal(r.error.code, -32000);
    assert.match(r.error.message, /CORVID_BASE_URL.*CORVID_API_KEY.*CORVID_MODEL/s);
    assert.match(r.error.message, /Ollama/);
    const a = await agent.request(2, "authenticate", { methodId: "corvid-setup" });
    assert.equal(a.error.code, -32000);
    assert.equal((await agent.request(3, "authenticate", { methodId: "bogus" })).error.code, -32602);
  }));

test("the setup text names what was tried: the configured Ollama URL and the config file in use", () => {
  const env = agentEnv();
  return withAgent(env, async (agent) => {
    const init = agent.frames.find((f) => f.id === 0).result;
    const text = init.authMethods[0].description;
    assert.ok(text.includes("http://127.0.0.1:9"), text); // agentEnv's closed discovery URL
    assert.ok(text.includes(env.CORVID_CONFIG), text);
    assert.ok(!text.includes("11434"), "not the built-in default");
    const r = await agent.request(1, "session/new", { cwd: tmpdir(), mcpServers: [] });
    assert.equal(r.error.message, text);
  });
});

// A broken start must not look like a crash to the editor: initialize is answered, and the
// problem is what it shows as the way to sign in and as session/new's error.
for (const [what, write, expected] of [
  ["a CORVID_CONFIG that names a missing file", null, /cannot read config file .*missing\.toml: No such file or directory \(os error 2\)$/],
  ["a config file that does not parse", "[provider]\nmodel = \"a\"\nbase_url = = 3\n", /invalid config file .*broken\.toml: line 3, column 12: /],
]) {
  test(`${what}: initialize is answered with an auth method naming the file and the problem; session/new says the same`, () => {
    const env = agentEnv({ fake });
    const path = join(env.HOME, write === null ? "missing.toml" : "broken.toml");
    if (write !== null) writeFileSync(path, write);
    return withAgent({ ...env, CORVID_CONFIG: path }, async (agent) => {
      const init = agent.frames.find((f) => f.id === 0).result;
      assert.equal(init.authMethods.length, 1, JSON.stringify(init.authMethods));
      const text = init.authMethods[0].description;
      assert.match(text, expected);
      assert.ok(text.includes(path), text);
      assert.equal(text.split("os error").length <= 2, true, `said once: ${text}`);
      const r = await agent.request(1, "session/new", { cwd: tmpdir(), mcpServers: [] });
      assert.equal(r.error.code, -32000);
      assert.equal(r.error.message, text);
    });
  });
}

test("a broken config file still keeps the store in the data dir, not in the editor's folder", async () => {
  const env = agentEnv({ fake });
  const path = join(env.HOME, "broken.toml");
  writeFileSync(path, "[provider\n");
  const project = mkdtempSync(join(tmpdir(), "corvid-project-"));
  const agent = spawnAgent({ env: { ...env, CORVID_CONFIG: path }, cwd: project });
  try {
    const init = (await agent.request(0, "initialize", { protocolVersion: 1, clientCapabilities: {} })).result;
    assert.match(init.authMethods[0].description, /invalid config file/);
    assert.equal(init._meta.corvid.store.location, join(env.CORVID_DATA_DIR, "sessions.db"));
    assert.equal(existsSync(join(project, ".corvid")), false, "nothing written into the project");
    assert.deepEqual(agent.violations, []);
  } finally {
    await agent.stop();
  }
});

test("a local Ollama is discovered at session/new and its first model is used", () =>
  // The fake server speaks Ollama's OpenAI-compatible API under /v1.
  withAgent(agentEnv({ ollamaUrl: fake.root }), async (agent) => {
    const init = agent.frames.find((f) => f.id === 0).result;
    assert.equal(init.authMethods[0].id, "corvid-setup", "nothing is probed at initialize");
    const s = await agent.request(1, "session/new", { cwd: tmpdir(), mcpServers: [] });
    const model = s.result.configOptions.find((o) => o.id === "model");
    assert.equal(model.currentValue, "fake-model");
    assert.deepEqual(model.options.map((o) => o.value), ["fake-model", "fake-model-2"]);
    fake.script("OLLAMA-HI", { chunks: [{ content: "from ollama" }] });
    const r = await agent.request(2, "session/prompt", { sessionId: s.result.sessionId, prompt: [{ type: "text", text: "OLLAMA-HI" }] });
    assert.equal(r.result.stopReason, "end_turn");
    assert.equal(fake.requests.at(-1).headers.authorization, undefined, "no key is sent to Ollama");
  }));

test("the model picker switches models for the next request", () =>
  withAgent(agentEnv({ fake, config: `[provider]\nmodels = ["fake-model", "fake-model-2"]\n` }), async (agent) => {
    const s = await agent.request(1, "session/new", { cwd: tmpdir(), mcpServers: [] });
    const sessionId = s.result.sessionId;
    const r = await agent.request(2, "session/set_config_option", { sessionId, configId: "model", value: "fake-model-2" });
    assert.equal(r.result.configOptions.find((o) => o.id === "model").currentValue, "fake-model-2");
    await agent.request(3, "session/prompt", { sessionId, prompt: [{ type: "text", text: "which model?" }] });
    assert.equal(fake.requests.at(-1).body.model, "fake-model-2");
  }));

test("provider 401 ends the turn with an actionable error", () =>
  withAgent(agentEnv({ fake }), async (agent) => {
    fake.script("AUTH-FAIL", { status: 401, body: { error: { message: "Incorrect API key provided" } } });
    const r = await promptOnce(agent, "AUTH-FAIL");
    assert.equal(r.error.code, -32603);
    assert.match(r.error.message, /model provider returned 401 Unauthorized.*check CORVID_API_KEY/);
    assert.match(r.error.message, /Incorrect API key provided/);
    assert.equal(r.error.data.httpStatus, 401);
    assert.equal(fake.attemptsFor("AUTH-FAIL"), 1, "401 is not retried");
  }));

test("provider 500 is retried with backoff, then reported", () =>
  withAgent(agentEnv({ fake, config: "[provider]\nmax_retries = 2\n" }), async (agent) => {
    fake.script("ALWAYS-500", { status: 500 });
    const r = await promptOnce(agent, "ALWAYS-500");
    assert.equal(r.error.code, -32603);
    assert.match(r.error.message, /500 Internal Server Error.*after 3 attempts/);
    assert.equal(fake.attemptsFor("ALWAYS-500"), 3);
  }));

test("transient 429/503 recover through retries", () =>
  withAgent(agentEnv({ fake }), async (agent) => {
    fake.script("FLAKY", { failTimes: 2, failStatus: 503, chunks: [{ content: "recovered" }] });
    const r = await promptOnce(agent, "FLAKY");
    assert.equal(r.result.stopReason, "end_turn");
    assert.equal(fake.attemptsFor("FLAKY"), 3);
    fake.script("RATE", { failTimes: 1, failStatus: 429, chunks: [{ content: "ok" }] });
    const r2 = await agent.request(5, "session/prompt", { sessionId: agent.frames.find((f) => f.id === 1).result.sessionId, prompt: [{ type: "text", text: "RATE" }] });
    assert.equal(r2.result.stopReason, "end_turn");
  }));

test("a garbage stream and a truncated stream are clear errors", () =>
  withAgent(agentEnv({ fake }), async (agent) => {
    fake.script("GARBAGE", { garbage: true });
    const r = await promptOnce(agent, "GARBAGE");
    assert.equal(r.error.code, -32603);
    assert.match(r.error.message, /invalid stream event: \{this is not json/);
    fake.script("CUT-SHORT", { chunks: [{ content: "half" }], truncate: true });
    const sessionId = agent.frames.find((f) => f.id === 1).result.sessionId;
    const r2 = await agent.request(3, "session/prompt", { sessionId, prompt: [{ type: "text", text: "CUT-SHORT" }] });
    assert.match(r2.error.message, /closed the stream before the answer was complete/);
  }));

test("an unreachable provider is reported with its URL", () =>
  withAgent(agentEnv({ extra: { CORVID_BASE_URL: "http://127.0.0.1:9/v1", CORVID_MODEL: "m" }, config: "[provider]\nmax_retries = 0\n" }), async (agent) => {
    const r = await promptOnce(agent, "anyone?");
    assert.match(r.error.message, /could not connect to the model provider at http:\/\/127.0.0.1:9\/v1\/chat\/completions/);
  }));

test("round-trips: Gemini's thought signature goes back with its tool call; reasoning_content goes back to models that want it", async () => {
  const signature = { google: { thought_signature: "sig-GEMINI-1" } };
  const loop = (marker) =>
    fake.script(marker, {
      steps: [
        { chunks: [{ reasoning: "Check the folder." }], toolCalls: [{ name: "list_directory", id: "call_ls", arguments: { path: "." }, extra_content: signature }] },
        { chunks: [{ content: "empty enough" }] },
      ],
    });
  const second = (marker) => fake.requests.filter((r) => r.api === "openai" && JSON.stringify(r.body.messages).includes(marker))[1].body.messages;
  for (const model of ["gemini-3-pro-preview", "deepseek-reasoner"]) {
    await withAgent(agentEnv({ fake, model }), async (agent) => {
      const marker = `ROUNDTRIP-${model}`;
      loop(marker);
      const r = await promptOnce(agent, marker);
      assert.equal(r.result?.stopReason, "end_turn", JSON.stringify(r.error));
      const assistant = second(marker).find((m) => m.role === "assistant");
      assert.deepEqual(assistant.tool_calls[0].extra_content, signature, `${model}: the signature goes back as it came`);
      if (model === "deepseek-reasoner") assert.equal(assistant.reasoning_content, "Check the folder.", "the catalog says it wants its reasoning back");
      else assert.equal(assistant.reasoning_content, undefined, "a model that does not ask for it is not sent its reasoning");
    });
  }
});

test("finish reasons map to stop reasons", () =>
  withAgent(agentEnv({ fake }), async (agent) => {
    fake.script("TOO-LONG", { chunks: [{ content: "..." }], finish: "length" });
    assert.equal((await promptOnce(agent, "TOO-LONG")).result.stopReason, "max_tokens");
    fake.script("FILTERED", { chunks: [], finish: "content_filter" });
    const sessionId = agent.frames.find((f) => f.id === 1).result.sessionId;
    const r = await agent.request(3, "session/prompt", { sessionId, prompt: [{ type: "text", text: "FILTERED" }] });
    assert.equal(r.result.stopReason, "refusal");
  }));

test("a stalled stream can be cancelled promptly", () =>
  withAgent(agentEnv({ fake }), async (agent) => {
    fake.script("HANG", { hang: true });
    const s = await agent.request(1, "session/new", { cwd: tmpdir(), mcpServers: [] });
    const sessionId = s.result.sessionId;
    agent.send({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "HANG" }] } });
    await new Promise((r) => setTimeout(r, 200));
    const t0 = performance.now();
    agent.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId } });
    const r = await agent.waitFor((f) => f.id === 2);
    assert.equal(r.result.stopReason, "cancelled");
    assert.ok(performance.now() - t0 < 500);
  }));

/** A CA and a certificate for 127.0.0.1 signed by it (openssl), in a new folder. */
function makeCertificates() {
  const dir = mkdtempSync(join(tmpdir(), "corvid-tls-"));
  const ssl = (...args) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  // A CA name of its own: two CAs of one name would fail as a bad signature, not an unknown issuer.
  ssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
    "-subj", `/CN=Corvid test CA ${dir.slice(-6)}`, "-keyout", "ca.key", "-out", "ca.pem");
  ssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-subj", "/CN=127.0.0.1", "-keyout", "leaf.key", "-out", "leaf.csr");
  writeFileSync(join(dir, "leaf.ext"), "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n");
  ssl("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
    "-extfile", "leaf.ext", "-out", "leaf.pem");
  return { ca: join(dir, "ca.pem"), key: readFileSync(join(dir, "leaf.key")), cert: readFileSync(join(dir, "leaf.pem")) };
}

test("a provider over HTTPS that offers HTTP/2 and HTTP/1.1: verified against the system's roots, spoken to in HTTP/1.1", async () => {
  const tls = makeCertificates();
  // A TLS front for the fake model, as a CDN would be: ALPN offers h2 first, HTTP/1.1 too.
  const seen = [];
  const front = http2.createSecureServer({ key: tls.key, cert: tls.cert, allowHTTP1: true }, (req, res) => {
    seen.push({ version: req.httpVersion, alpn: req.socket.alpnProtocol, path: req.url });
    const upstream = http.request(new URL(req.url, fake.root), { method: req.method, headers: { ...req.headers, host: new URL(fake.root).host } }, (up) => {
      res.writeHead(up.statusCode, up.headers);
      up.pipe(res);
    });
    req.pipe(upstream);
  });
  await new Promise((r) => front.listen(0, "127.0.0.1", r));
  try {
    const url = `https://127.0.0.1:${front.address().port}/v1`;
    // The system's trust store, as the platform verifier reads it on Linux: SSL_CERT_FILE.
    const env = agentEnv({ fake, extra: { CORVID_BASE_URL: url, SSL_CERT_FILE: tls.ca } });
    await withAgent(env, async (agent) => {
      fake.script("OVER-TLS", { chunks: [{ content: "sealed" }] });
      const r = await promptOnce(agent, "OVER-TLS");
      assert.equal(r.result?.stopReason, "end_turn", JSON.stringify(r));
      const said = agent.frames.filter((f) => f.params?.update?.sessionUpdate === "agent_message_chunk").map((f) => f.params.update.content.text).join("");
      assert.equal(said, "sealed");
    });
    assert.ok(seen.some((s) => s.path.endsWith("/chat/completions")), JSON.stringify(seen));
    for (const s of seen) {
      assert.equal(s.alpn, "http/1.1", `ALPN offers only what the client speaks: ${JSON.stringify(s)}`);
      assert.equal(s.version, "1.1");
    }
  } finally {
    await new Promise((r) => front.close(r));
  }
});

test("a provider whose certificate the system does not trust: the turn fails at once, saying so", async () => {
  const tls = makeCertificates();
  const front = http2.createSecureServer({ key: tls.key, cert: tls.cert, allowHTTP1: true }, (_req, res) => res.end());
  let connections = 0;
  front.on("connection", () => connections++);
  await new Promise((r) => front.listen(0, "127.0.0.1", r));
  try {
    const url = `https://127.0.0.1:${front.address().port}/v1`;
    // A trust store that holds another CA, not the one that signed the server's certificate.
    // The default retries stay on: a certificate that is not trusted is not worth retrying.
    const env = agentEnv({ fake, extra: { CORVID_BASE_URL: url, SSL_CERT_FILE: makeCertificates().ca } });
    await withAgent(env, async (agent) => {
      const r = await promptOnce(agent, "UNTRUSTED");
      assert.equal(r.error?.code, -32603, JSON.stringify(r));
      assert.match(r.error.message, /could not connect to the model provider at https:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions/);
      assert.match(r.error.message, /invalid peer certificate: UnknownIssuer/);
      assert.match(r.error.message, /certificate is not trusted by this system.*SSL_CERT_FILE/);
      assert.doesNotMatch(r.error.message, /server is running/);
    });
    assert.equal(connections, 1, "one attempt, no retries");
  } finally {
    await new Promise((r) => front.close(r));
  }
});

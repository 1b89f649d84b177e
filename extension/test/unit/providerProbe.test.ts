import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { connectionText, modelsUrl, probeProvider } from "../../src/providerProbe";

/** A loopback server answering every request with `answer`; records the requests. */
async function server(answer: (path: string) => { status: number; body: string }) {
  const seen: { path: string; headers: IncomingHttpHeaders }[] = [];
  const s = createServer((req, res) => {
    seen.push({ path: req.url ?? "", headers: req.headers });
    const a = answer(req.url ?? "");
    res.writeHead(a.status, { "content-type": "application/json" });
    res.end(a.body);
  });
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  return { base, seen, close: () => new Promise<void>((r) => s.close(() => r())) };
}

test("modelsUrl: the settings' endpoint's model list; none when the settings name no endpoint", () => {
  assert.equal(modelsUrl({}), undefined);
  assert.equal(modelsUrl({ provider: "openai" }), "https://api.openai.com/v1/models");
  assert.equal(modelsUrl({ baseUrl: "https://openrouter.ai/api/v1/" }), "https://openrouter.ai/api/v1/models");
  assert.equal(modelsUrl({ provider: "anthropic" }), "https://api.anthropic.com/v1/models");
  assert.equal(modelsUrl({ provider: "anthropic", baseUrl: "http://127.0.0.1:5/" }), "http://127.0.0.1:5/v1/models");
});

test("probeProvider lists the models with the key the core would send", async () => {
  const s = await server(() => ({ status: 200, body: JSON.stringify({ object: "list", data: [{ id: "m-1" }, { id: "m-2" }] }) }));
  try {
    const r = await probeProvider({ baseUrl: `${s.base}/v1`, apiKey: "sk-1" });
    assert.deepEqual(r, { ok: true, url: `${s.base}/v1/models`, models: ["m-1", "m-2"] });
    assert.equal(s.seen[0].path, "/v1/models");
    assert.equal(s.seen[0].headers.authorization, "Bearer sk-1");
    const a = await probeProvider({ provider: "anthropic", baseUrl: s.base, apiKey: "sk-ant" });
    assert.equal(a?.ok, true);
    assert.equal(s.seen[1].headers["x-api-key"], "sk-ant");
    assert.equal(s.seen[1].headers["anthropic-version"], "2023-06-01");
    assert.equal(s.seen[1].headers.authorization, undefined);
    assert.deepEqual(connectionText(r!, "m-2"), { ok: true, text: `Connected to ${s.base}/v1: model m-2 is there (2 models listed).` });
    const missing = connectionText(r!, "gpt-9");
    assert.equal(missing.ok, false);
    assert.match(missing.text, /has no model gpt-9\. It offers 2: m-1, m-2\./);
  } finally {
    await s.close();
  }
});

test("probeProvider says why in words: refused, the key, a wrong URL, not a model list", async () => {
  const s = await server((p) => (p.startsWith("/key") ? { status: 401, body: "{}" } : p.startsWith("/html") ? { status: 200, body: "<html>" } : { status: 404, body: "{}" }));
  try {
    const noKey = await probeProvider({ baseUrl: `${s.base}/key` });
    assert.deepEqual(noKey, { ok: false, url: `${s.base}/key/models`, reason: "the provider wants an API key (HTTP 401): click Set API Key" });
    const badKey = await probeProvider({ baseUrl: `${s.base}/key`, apiKey: "wrong" });
    assert.match(badKey && !badKey.ok ? badKey.reason : "", /refused the API key \(HTTP 401\)/);
    const wrong = await probeProvider({ baseUrl: `${s.base}/nothing` });
    assert.match(wrong && !wrong.ok ? wrong.reason : "", /answered HTTP 404: is the base URL right/);
    const html = await probeProvider({ baseUrl: `${s.base}/html` });
    assert.match(html && !html.ok ? html.reason : "", /did not answer with a model list/);
  } finally {
    await s.close();
  }
  // A port nothing listens on (a server's that was never called, closed).
  const gone = await server(() => ({ status: 200, body: "{}" }));
  await gone.close();
  const refused = await probeProvider({ baseUrl: `${gone.base}/v1` });
  assert.deepEqual(refused, { ok: false, url: `${gone.base}/v1/models`, reason: `nothing answers at ${gone.base}/v1/models (connection refused)` });
  assert.equal(connectionText(refused!, "m").text, `The connection failed: nothing answers at ${gone.base}/v1/models (connection refused)`);
});

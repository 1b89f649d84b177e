// Sign-in and sign-out: `corvid login` (also run as `corvid acp --login` by editors with
// terminal auth) writes the provider to the config file with mode 0600; the ACP `logout`
// method and `corvid logout` remove the key. Real binary, real files, fake model.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, corvidBin, spawnAgent } from "../support/agent.mjs";

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

const ptyRun = resolve(dirname(fileURLToPath(import.meta.url)), "..", "support", "pty-run.py");

/** Runs `corvid <args>` with `input` on stdin (a pipe, as a script would). */
const run = (args, env, input = "") => spawnSync(corvidBin(), args, { env, input, encoding: "utf8", timeout: 20000 });

test("corvid login stores the provider (mode 0600, other settings kept); the agent then uses it", async () => {
  const env = agentEnv(); // no provider configured
  const answers = `openai\n${fake.url}\nfake-model\nsk-from-login\n`;
  const r = run(["login"], env, answers);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /Provider \(openai or anthropic.*\[openai\]: /);
  assert.match(r.stderr, /Saved to .*config\.toml \(readable only by you\)/);
  assert.equal(r.stdout, "", "nothing on stdout");
  assert.equal(statSync(env.CORVID_CONFIG).mode & 0o777, 0o600);
  const text = readFileSync(env.CORVID_CONFIG, "utf8");
  assert.match(text, /\[provider\]/);
  assert.match(text, /api_key = "sk-from-login"/);
  assert.match(text, /ollama_url = "http:\/\/127\.0\.0\.1:9"/, "the rest of the file is kept");

  // The agent signs in with what was stored.
  const agent = spawnAgent({ env });
  await agent.request("i", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  const s = await agent.request("n", "session/new", { cwd: tmpdir(), mcpServers: [] });
  assert.ok(s.result?.sessionId, JSON.stringify(s));
  await agent.request("p", "session/prompt", { sessionId: s.result.sessionId, prompt: [{ type: "text", text: "hi" }] });
  assert.equal(fake.requests.at(-1).headers.authorization, "Bearer sk-from-login");
  await agent.stop();

  // Logging in again: Enter keeps every current value, the key included.
  const again = run(["acp", "--login"], env, "\n\n\n\n");
  assert.equal(again.status, 0, again.stderr);
  assert.match(again.stderr, /Base URL \[http:\/\/127\.0\.0\.1:\d+\/v1\]/);
  assert.match(again.stderr, /API key \(Enter keeps the current one\)/);
  assert.match(readFileSync(env.CORVID_CONFIG, "utf8"), /api_key = "sk-from-login"/);

  // Input that ends early saves nothing.
  const cut = run(["login"], env, "anthropic\n");
  assert.notEqual(cut.status, 0);
  assert.match(cut.stderr, /nothing was saved/);
  assert.match(readFileSync(env.CORVID_CONFIG, "utf8"), /kind = "openai"/);

  const out = run(["logout"], env);
  assert.equal(out.status, 0);
  assert.match(out.stderr, /Removed the API key/);
  assert.doesNotMatch(readFileSync(env.CORVID_CONFIG, "utf8"), /api_key/);
});

test("terminal auth is offered only to clients that advertise auth.terminal; logout is advertised", async () => {
  const agent = spawnAgent({ env: agentEnv({ fake }) });
  const plain = await agent.request("a", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  assert.deepEqual(plain.result.authMethods, []);
  assert.deepEqual(plain.result.agentCapabilities.auth, { logout: {} });
  const terminal = await agent.request("b", "initialize", { protocolVersion: 1, clientCapabilities: { auth: { terminal: true } } });
  const [method] = terminal.result.authMethods;
  assert.equal(method.type, "terminal");
  assert.equal(method.id, "corvid-login");
  assert.deepEqual(method.args, ["--login"]);
  // The registry's check (and Zed builds before auth.terminal) say it under _meta.
  const registry = await agent.request("m", "initialize", {
    protocolVersion: 1,
    clientInfo: { name: "ACP Registry Validator", version: "1.0.0" },
    clientCapabilities: { terminal: true, fs: { readTextFile: true, writeTextFile: true }, _meta: { terminal_output: true, "terminal-auth": true } },
  });
  assert.deepEqual(registry.result.authMethods.map((m) => [m.id, m.type]), [["corvid-login", "terminal"]]);
  const wrong = await agent.request("c", "authenticate", { methodId: "corvid-login" });
  assert.equal(wrong.error.code, -32602);
  assert.match(wrong.error.message, /terminal method: run `corvid acp --login`/);
  await agent.stop();
  assert.deepEqual(agent.violations, []);
});

test("terminal auth signalled through _meta: the client runs the terminal method in a pseudo-terminal, and session/new then works on the same connection", async () => {
  const env = agentEnv(); // no provider configured
  const agent = spawnAgent({ env });
  const init = await agent.request("i", "initialize", { protocolVersion: 1, clientCapabilities: { _meta: { "terminal-auth": true } } });
  const method = init.result.authMethods.find((m) => m.type === "terminal");
  assert.ok(method, JSON.stringify(init.result.authMethods));
  const before = await agent.request("n0", "session/new", { cwd: tmpdir(), mcpServers: [] });
  assert.equal(before.error?.code, -32000, JSON.stringify(before));
  // What the client does (ACP terminal auth): the agent's own command plus the method's args and
  // env, in a terminal, typed into by the user (here: a scripted provider URL, model and key).
  const extraEnv = Array.isArray(method.env) ? Object.fromEntries(method.env.map((e) => [e.name, e.value])) : (method.env ?? {});
  const answers = `openai\n${fake.url}\nfake-model\nsk-from-terminal\n`;
  const login = spawnSync("python3", [ptyRun, corvidBin(), "acp", ...(method.args ?? [])], { env: { ...env, ...extraEnv }, input: answers, encoding: "utf8", timeout: 20000 });
  assert.equal(login.status, 0, login.stdout + login.stderr);
  assert.match(readFileSync(env.CORVID_CONFIG, "utf8"), /api_key = "sk-from-terminal"/);
  // No restart: the same connection now opens a session and the model gets the new key.
  const s = await agent.request("n1", "session/new", { cwd: tmpdir(), mcpServers: [] });
  assert.ok(s.result?.sessionId, JSON.stringify(s));
  await agent.request("p", "session/prompt", { sessionId: s.result.sessionId, prompt: [{ type: "text", text: "hi" }] }, 10000);
  assert.equal(fake.requests.at(-1).headers.authorization, "Bearer sk-from-terminal");
  await agent.stop();
  assert.deepEqual(agent.violations, []);
});

test("ACP logout removes the stored key and later sessions need a new sign-in", async () => {
  const env = agentEnv({ config: `[provider]\nbase_url = "${fake.url}"\nmodel = "fake-model"\napi_key = "sk-stored"\n` });
  const agent = spawnAgent({ env });
  await agent.request("i", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  assert.ok((await agent.request("n1", "session/new", { cwd: tmpdir(), mcpServers: [] })).result.sessionId);
  const out = await agent.request("o", "logout", {});
  assert.deepEqual(out.result, {});
  const text = readFileSync(env.CORVID_CONFIG, "utf8");
  assert.doesNotMatch(text, /sk-stored/);
  assert.match(text, /model = "fake-model"/);
  assert.equal(statSync(env.CORVID_CONFIG).mode & 0o777, 0o600);
  const after = await agent.request("n2", "session/new", { cwd: tmpdir(), mcpServers: [] });
  assert.equal(after.error.code, -32000);
  assert.match(after.error.message, /Signed out/);
  await agent.stop();
  assert.deepEqual(agent.violations, []);
});

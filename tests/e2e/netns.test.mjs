// A private loopback for sandboxed commands (issue 42, item 4), through the real binary and
// the scripted fake model: a command in the default sandbox can serve and reach 127.0.0.1
// itself (its own network namespace) while a server the test runs on the host's loopback
// stays out of reach; `escalate: "network"` still gets the host's network; `initialize` says
// whether commands get a private loopback. Where the kernel cannot make the namespace (no
// unprivileged user namespaces), the report must say "none" and the command gets no socket.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import * as acp from "@agentclientprotocol/sdk";
import { startFakeModel } from "../support/fake-model.mjs";
import { startHitServer } from "../support/hit-server.mjs";
import { agentEnv, corvidBin, spawnAgent } from "../support/agent.mjs";
import { launcherRefusal } from "../support/landlock.mjs";

const skip = launcherRefusal(corvidBin(), [], "/nonexistent") ?? false;

// The oracle, independent of Corvid: can this user make a user + network namespace here?
const namespaces = spawnSync("unshare", ["--user", "--map-current-user", "--net", "true"]).status === 0;

// Binds 127.0.0.1:0, connects to itself and echoes; then tries the host's server (argv[1]).
const SELF_AND_OUTSIDE = String.raw`
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
c = socket.create_connection(s.getsockname(), timeout=3); a, _ = s.accept(); a.sendall(b"OK")
print("self:", c.recv(2).decode())
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3); print("outside: reached")
except OSError as e:
    print("outside: unreachable", e)
`;
const script = (port) => `python3 -c '${SELF_AND_OUTSIDE}' ${port}`;

let fake;
let server;
before(async () => {
  fake = await startFakeModel();
  server = await startHitServer();
});
after(async () => {
  await fake.close();
  await server.close();
});

let marker = 0;
async function setup({ config = "" } = {}) {
  const env = agentEnv({ fake, config });
  const root = join(realpathSync(env.HOME), "project");
  mkdirSync(root);
  const agent = spawnAgent({ env });
  const app = acp
    .client({ name: "corvid-e2e" })
    .onRequest(acp.methods.client.session.requestPermission, () => ({ outcome: { outcome: "selected", optionId: "allow_once" } }));
  const conn = app.connect(await agent.sdkStream(acp.ndJsonStream));
  const init = await conn.agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: "corvid-e2e", version: "1.0.0" },
  });
  const { sessionId } = await conn.agent.request(acp.methods.agent.session.new, { cwd: root, mcpServers: [] });
  await conn.agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: "mode", value: "full" });
  return {
    init,
    /** Runs each as one run_command call of one model step; each result as the model read it. */
    async calls(commands) {
      const m = `NETNS-${++marker}`;
      const toolCalls = commands.map((c, i) => ({ name: "run_command", arguments: typeof c === "string" ? { command: c } : c, id: `c${i}` }));
      fake.script(m, { steps: [{ toolCalls }, { chunks: [{ content: "done" }] }] });
      const r = await conn.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: m }] });
      assert.equal(r.stopReason, "end_turn");
      return fake.requests.at(-1).body.messages.filter((msg) => msg.role === "tool").slice(-commands.length).map((msg) => msg.content);
    },
    async done() {
      conn.close();
      await agent.stop();
      assert.deepEqual(agent.violations, [], "every frame is valid ACP");
      assert.doesNotMatch(agent.stderr, /panicked/);
    },
  };
}

test("a command serves and reaches its own loopback; the host's stays out of reach", { skip }, async () => {
  const t = await setup();
  assert.equal(t.init._meta.corvid.sandbox.loopback, namespaces ? "private" : "none", JSON.stringify(t.init._meta.corvid.sandbox));
  server.hits.length = 0;
  const [inside] = await t.calls([script(server.port)]);
  if (namespaces) {
    assert.match(inside, /^self: OK$/m, inside);
    assert.match(inside, /^outside: unreachable/m, inside);
    assert.match(inside, /\[exit code 0\]$/, inside);
  } else {
    assert.match(inside, /Operation not permitted/, inside);
  }
  assert.doesNotMatch(inside, /outside: reached/, inside);
  assert.deepEqual(server.hits, [], "the host's server got no request");
  await t.done();
});

test("escalate: network gets the host's network, not a namespace", { skip }, async () => {
  const t = await setup();
  server.hits.length = 0;
  const [escalated] = await t.calls([{ command: `curl -sS -m 3 ${server.url}/escalated`, escalate: "network", reason: "a test" }]);
  assert.match(escalated, /reached/, escalated);
  assert.deepEqual(server.hits, ["/escalated"]);
  await t.done();
});

test("with [sandbox] network = true the report says the loopback is the host's", { skip }, async () => {
  const t = await setup({ config: "[sandbox]\nnetwork = true\n" });
  assert.equal(t.init._meta.corvid.sandbox.network, "on");
  assert.equal(t.init._meta.corvid.sandbox.loopback, "host");
  await t.done();
});

// The product runs as a normal user, where the namespace needs a user namespace too: the
// launcher itself, as nobody, when the test runs as root.
const asNobody = process.getuid?.() === 0 && spawnSync("setpriv", ["--version"]).status === 0;
test("as a normal user the launcher maps the user to itself and has a private loopback", { skip: skip || (!asNobody && "not root, or no setpriv") || (!namespaces && "no user namespaces here") }, () => {
  const policy = JSON.stringify({ roots: [], tmp: "/tmp" });
  const nobody = ["--reuid=65534", "--regid=65534", "--clear-groups"];
  const r = spawnSync("setpriv", [...nobody, corvidBin(), "sandbox", "--policy", policy, "--", "python3", "-c", `${SELF_AND_OUTSIDE}\nimport os; print("uid:", os.getuid(), open("/proc/self/uid_map").read().split())`, String(server.port)], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^self: OK$/m, r.stdout);
  assert.match(r.stdout, /^outside: unreachable/m, r.stdout);
  assert.match(r.stdout, /^uid: 65534 \['65534', '65534', '1'\]$/m, r.stdout);
});

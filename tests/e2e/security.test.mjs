// Security checks through the real binary: every file tool against every way out of the
// jail, a directory swapped for a symlink while tools run, forbidden paths, and provider keys
// kept out of the commands and MCP servers the agent starts and out of its logs.
// (`corvid serve` auth and limits: serve.test.mjs.)
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, spawnAgent } from "../support/agent.mjs";

const MCP_SERVER = join(dirname(fileURLToPath(import.meta.url)), "..", "support", "mcp-server.mjs");

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

/** A workspace, a sibling directory outside it holding a secret, and links out. */
function workspace() {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "corvid-sec-")));
  const root = join(base, "project");
  const outside = join(base, "outside");
  mkdirSync(join(root, "src"), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(root, "src", "main.rs"), "fn main() {}\n");
  writeFileSync(join(outside, "secret.txt"), "top secret\n");
  symlinkSync(outside, join(root, "dir-link"));
  symlinkSync(join(outside, "secret.txt"), join(root, "file-link.txt"));
  return { base, root, outside };
}

let marker = 0;
/** An agent with a session in `root` (mode full: nothing asks, the jail alone decides). */
async function setup(root, { env = agentEnv({ fake }), mcpServers = [] } = {}) {
  const agent = spawnAgent({ env });
  await agent.request("init", "initialize", { protocolVersion: 1, clientCapabilities: {} });
  const s = await agent.request("new", "session/new", { cwd: root, mcpServers }, 10000);
  assert.ok(s.result, JSON.stringify(s));
  const sessionId = s.result.sessionId;
  await agent.request("mode", "session/set_config_option", { sessionId, configId: "mode", value: "full" });
  let n = 0;
  return {
    agent,
    sessionId,
    /** One model step making all `calls` at once, then "ok"; returns each call's result text. */
    async calls(calls) {
      const m = `SEC-${++marker}`;
      fake.script(m, {
        steps: [{ toolCalls: calls.map(([name, args], i) => ({ name, arguments: args, id: `c${i}` })) }, { chunks: [{ content: "ok" }] }],
      });
      const r = await agent.request(`p${++n}`, "session/prompt", { sessionId, prompt: [{ type: "text", text: m }] }, 30000);
      assert.equal(r.result?.stopReason, "end_turn", JSON.stringify(r));
      const results = fake.requests.at(-1).body.messages.filter((msg) => msg.role === "tool").slice(-calls.length);
      return results.map((msg) => msg.content);
    },
    async done() {
      await agent.stop();
      assert.deepEqual(agent.violations, [], "every frame is valid ACP");
      assert.doesNotMatch(agent.stderr, /panicked/);
    },
  };
}

const ESCAPES = (outside) => [
  ["a .. path", "../outside/secret.txt", /outside the session's folders/],
  ["an absolute path outside", join(outside, "secret.txt"), /outside the session's folders/],
  ["a directory symlink out", "dir-link/secret.txt", /outside the session's folders/],
  ["a file symlink out", "file-link.txt", /outside the session's folders/],
  ["a NUL byte", "src/main.rs\u0000.txt", /NUL byte/],
  ["/ itself", "/", /outside the session's folders/],
];

/** The arguments that make `tool` touch `path`. */
function argsFor(tool, path) {
  switch (tool) {
    case "write_file":
      return { path, content: "planted\n" };
    case "edit_file":
      return { path, old_text: "top secret", new_text: "planted" };
    case "glob":
      return { pattern: "*", path };
    case "search":
      return { pattern: "secret", path };
    default:
      return { path };
  }
}

test("every file tool refuses .., absolute paths out, symlinks out, NUL bytes and /", async () => {
  const { root, outside } = workspace();
  const t = await setup(root);
  const tools = ["read_file", "write_file", "edit_file", "list_directory", "glob", "search", "deliver_file"];
  for (const tool of tools) {
    const escapes = ESCAPES(outside).filter(([, path]) => !(path === "/" && ["write_file", "edit_file"].includes(tool)));
    const results = await t.calls(escapes.map(([, path]) => [tool, argsFor(tool, path)]));
    for (const [[what, , pattern], result] of escapes.map((e, i) => [e, results[i]])) {
      assert.match(result, /^error: /, `${tool} with ${what}: ${result}`);
      assert.match(result, pattern, `${tool} with ${what}`);
      assert.doesNotMatch(result, /top secret/, `${tool} with ${what} leaked the file`);
    }
  }
  assert.equal(readFileSync(join(outside, "secret.txt"), "utf8"), "top secret\n", "the file outside is untouched");
  assert.deepEqual(readdirSync(outside), ["secret.txt"], "nothing was created outside");
  await t.done();
});

test("forbidden paths: the defaults (~/.ssh, credentials) and configured ones, inside the workspace too", async () => {
  const env = agentEnv({ fake });
  const home = env.HOME;
  mkdirSync(join(home, ".ssh"));
  writeFileSync(join(home, ".ssh", "id_ed25519"), "PRIVATE KEY\n");
  writeFileSync(join(home, ".netrc"), "machine x password p\n");
  mkdirSync(join(home, "project", "secrets"), { recursive: true });
  writeFileSync(join(home, "project", "secrets", "prod.env"), "TOKEN=1\n");
  // The session works in $HOME itself, so only the deny list stands between the model and the keys.
  const t = await setup(home, { env });
  const results = await t.calls([
    ["read_file", { path: ".ssh/id_ed25519" }],
    ["list_directory", { path: ".ssh" }],
    ["write_file", { path: ".ssh/authorized_keys", content: "ssh-ed25519 AAAA attacker\n" }],
    ["read_file", { path: ".netrc" }],
    ["search", { pattern: "PRIVATE", path: ".ssh" }],
    ["deliver_file", { path: ".config/corvid/config.toml" }],
  ]);
  for (const [i, r] of results.entries()) assert.match(r, /is a protected location/, `call ${i}: ${r}`);
  assert.equal(existsSync(join(home, ".ssh", "authorized_keys")), false);
  await t.done();

  const env2 = agentEnv({ fake, config: `[limits]\nforbidden_paths = ["${join(home, "project", "secrets")}"]\n` });
  const t2 = await setup(join(home, "project"), { env: env2 });
  const [read, write] = await t2.calls([
    ["read_file", { path: "secrets/prod.env" }],
    ["write_file", { path: "secrets/new.env", content: "x" }],
  ]);
  assert.match(read, /secrets\/prod\.env is a protected location/);
  assert.match(write, /is a protected location/);
  await t2.done();
});

test("a directory swapped for a symlink out while file tools run: nothing outside is read, written or created", async () => {
  const { root, outside } = workspace();
  mkdirSync(join(root, "work"));
  writeFileSync(join(root, "work", "note.txt"), "inside\n");
  writeFileSync(join(outside, "note.txt"), "top secret\n");
  // A tight loop atomically exchanges `work` with a symlink to the outside directory
  // (renameat2 RENAME_EXCHANGE), so `work` is always there, a real directory or a link out.
  const swapper = spawn("python3", [
    "-c",
    `import ctypes,os,sys
libc = ctypes.CDLL(None, use_errno=True)
d, out = sys.argv[1].encode(), sys.argv[2]
link = d + b".link"
os.symlink(out, link)
parent = os.getppid()
n = 0
while True:
    if libc.renameat2(-100, d, -100, link, 2) != 0:
        sys.exit("renameat2 failed: errno %d" % ctypes.get_errno())
    n += 1
    if n % 1024 == 0 and os.getppid() != parent:
        sys.exit(0)`,
    join(root, "work"),
    outside,
  ]);
  let swapError = "";
  swapper.stderr.on("data", (d) => (swapError += d));
  // The swapper spins until killed: killed below whatever fails (the agent not starting too),
  // and it stops by itself once orphaned, should the test process die first.
  let t;
  const seen = [];
  const walked = [];
  try {
    t = await setup(root);
    for (let round = 0; round < 10; round++) {
      const calls = [];
      for (let i = 0; i < 25; i++) {
        calls.push(["write_file", { path: `work/planted-${round}-${i}.txt`, content: "planted\n" }]);
        calls.push(["read_file", { path: "work/note.txt" }]);
      }
      // The walking tools, several times a round: a walk reads directories while the swap runs.
      // Walked as the root, and from above (a directory met deeper in the walk).
      for (let i = 0; i < 8; i++) {
        calls.push(["list_directory", { path: "work", recursive: i % 2 === 1 }], ["glob", { pattern: "**/*.txt", path: "work" }]);
        calls.push(["list_directory", { path: ".", recursive: true }], ["glob", { pattern: "**/*.txt" }]);
      }
      calls.push(["search", { pattern: "secret", path: "work" }], ["deliver_file", { path: "work/note.txt" }]);
      const results = await t.calls(calls);
      seen.push(...results);
      walked.push(...results.filter((_, i) => ["list_directory", "glob"].includes(calls[i][0])));
    }
  } finally {
    swapper.kill();
  }
  assert.equal(swapError, "", "the swapper kept swapping");
  for (const r of seen) assert.doesNotMatch(r, /top secret|secret\.txt/, `leaked from outside: ${r}`);
  assert.deepEqual(readdirSync(outside).sort(), ["note.txt", "secret.txt"], "nothing was created outside");
  assert.equal(readFileSync(join(outside, "note.txt"), "utf8"), "top secret\n");
  assert.ok(seen.some((r) => !r.startsWith("error")), "some calls ran (inside)");
  // (The inside's note; a walk that listed the outside would have shown secret.txt too.)
  assert.ok(walked.some((r) => /^note\.txt$/m.test(r)), `some walks listed the inside: ${JSON.stringify([...new Set(walked)])}`);
  await t.done();
});

test("provider keys never reach commands, MCP servers or the log", async () => {
  const { root } = workspace();
  const KEY = `sk-corvid-${Math.random().toString(36).slice(2)}-SECRET`;
  const OTHER = `sk-other-${Math.random().toString(36).slice(2)}-SECRET`;
  const env = agentEnv({ fake, extra: { CORVID_API_KEY: KEY, GEMINI_API_KEY: OTHER, CORVID_LOG: "debug" } });
  const mcp = { name: "keys", command: process.execPath, args: [MCP_SERVER, "keys"], env: [] };
  const t = await setup(root, { env, mcpServers: [mcp] });
  const [shell, server] = await t.calls([
    ["run_command", { command: "env" }],
    ["mcp__keys__whoami", {}],
  ]);
  assert.match(shell, /PATH=/, "the command ran");
  assert.ok(!shell.includes(KEY) && !shell.includes(OTHER), "no key in the command's environment");
  assert.doesNotMatch(shell, /_API_KEY=/);
  assert.deepEqual(JSON.parse(server).apiKeys, [], "no key in the MCP server's environment");
  assert.equal(fake.requests.at(-1).headers.authorization, `Bearer ${KEY}`, "the provider did get the key");
  await t.done();
  assert.ok(!t.agent.stderr.includes(KEY) && !t.agent.stderr.includes(OTHER), "no key in the debug log");
});

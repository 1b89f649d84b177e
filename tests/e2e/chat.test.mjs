// `corvid chat`, the terminal client, driven through a real pseudo-terminal (python3's pty
// module, see tests/support/pty-run.py): the core in-process against the fake model,
// permission questions answered at the prompt, Ctrl-C, an external agent, and `-p`.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, corvidBin } from "../support/agent.mjs";

const ptyRun = resolve(dirname(fileURLToPath(import.meta.url)), "..", "support", "pty-run.py");
const WAIT = 30000; // generous: the machine is slow and shared

let fake;
before(async () => (fake = await startFakeModel()));
after(async () => fake.close());

const workdir = () => realpathSync(mkdtempSync(join(tmpdir(), "corvid-chat-")));
const call = (name, args) => ({ toolCalls: [{ name, arguments: args }] });
const say = (text) => ({ chunks: [{ content: text }] });

/** `corvid chat ARGS` in a pty; `expect` waits for output past what was already matched. */
function chat(args = [], { env = agentEnv({ fake, extra: { NO_COLOR: "1" } }), cwd = workdir() } = {}) {
  const child = spawn("python3", [ptyRun, corvidBin(), "chat", ...args], { env, cwd, stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  let seen = 0;
  child.stdout.on("data", (d) => (out += d.toString("utf8")));
  child.stderr.on("data", (d) => (out += d.toString("utf8")));
  const exited = new Promise((r) => child.on("exit", (code, signal) => r({ code, signal })));
  return {
    cwd,
    exited,
    get out() {
      return out;
    },
    type(keys) {
      child.stdin.write(keys);
    },
    async expect(pattern, ms = WAIT) {
      const t0 = performance.now();
      for (;;) {
        const m = pattern.exec(out.slice(seen));
        if (m) {
          seen += m.index + m[0].length;
          return m;
        }
        if (performance.now() - t0 > ms) throw new Error(`never saw ${pattern}; output:\n${out.slice(-3000)}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async close() {
      child.stdin.end();
      const t = setTimeout(() => child.kill("SIGKILL"), 10000);
      const r = await exited;
      clearTimeout(t);
      return r;
    },
  };
}

/** The last tool result the fake model received. */
const lastToolResult = () => fake.requests.at(-1).body.messages.filter((m) => m.role === "tool").at(-1)?.content;

test("chat: a permission question answered 1 (allow once) lets write_file run; Ctrl-D exits 0", async () => {
  fake.script("CHAT-ALLOW", { steps: [call("write_file", { path: "notes/todo.md", content: "- ship it\n" }), say("Wrote your notes.")] });
  const c = chat();
  await c.expect(/Ctrl-D or \/quit exits/);
  await c.expect(/> $/);
  c.type("please CHAT-ALLOW\n");
  await c.expect(/⏺ .*notes\/todo\.md.*\(edit\)/);
  await c.expect(/\? Allow .*notes\/todo\.md/);
  // The question shows the proposed diff, compactly, before anything is written.
  await c.expect(/^\s+notes\/todo\.md \(new file, 1 line\)\s+\+ - ship it\s+(?=1\) Allow)/m);
  await c.expect(/1\) Allow\s+2\) .*3\) Reject\s+4\) /);
  await c.expect(/choose 1-4: $/);
  c.type("1\n");
  await c.expect(/✓ done/);
  await c.expect(/Wrote your notes\./);
  await c.expect(/> $/);
  assert.equal(readFileSync(join(c.cwd, "notes/todo.md"), "utf8"), "- ship it\n");
  c.type("\x04");
  assert.equal((await c.close()).code, 0);
});

test("chat: a command's card ends with its last output lines and how it exited, not just done", async () => {
  const command = "for i in 1 2 3 4 5 6 7 8; do echo out-line-$i; done; exit 3";
  fake.script("CHAT-RUN", { steps: [call("run_command", { command }), say("It failed as expected.")] });
  const c = chat();
  await c.expect(/> $/);
  c.type("please CHAT-RUN\n");
  await c.expect(/choose 1-\d: $/);
  c.type("1\n");
  // The last six lines (the first two are cut), then the exit code where "✓ done" was.
  const shown = await c.expect(/│ out-line-3\s+│ out-line-4\s+│ out-line-5\s+│ out-line-6\s+│ out-line-7\s+│ out-line-8\s+✗ exit code 3/);
  assert.doesNotMatch(c.out, /│ out-line-2/);
  assert.doesNotMatch(shown[0], /\[exit code 3\]/, "not the note for the model");
  await c.expect(/It failed as expected\./);
  await c.expect(/> $/);
  c.type("\x04");
  assert.equal((await c.close()).code, 0);
});

test("chat: rejecting leaves the file alone and the turn goes on; Ctrl-C at the idle prompt exits 0", async () => {
  fake.script("CHAT-REJECT", { steps: [call("write_file", { path: "nope.txt", content: "x\n" }), say("Fine, I will not write it.")] });
  const c = chat();
  await c.expect(/> $/);
  c.type("please CHAT-REJECT\n");
  await c.expect(/choose 1-4: $/);
  c.type("3\n");
  await c.expect(/Fine, I will not write it\./);
  await c.expect(/> $/);
  assert.equal(existsSync(join(c.cwd, "nope.txt")), false);
  assert.match(lastToolResult(), /declined/);
  c.type("\x03"); // Ctrl-C at an idle prompt leaves cleanly
  assert.equal((await c.close()).code, 0);
});

test("chat: Ctrl-C cancels a streaming answer, the prompt comes back and the next turn works", async () => {
  const words = Array.from({ length: 40 }, (_, i) => ({ content: `w${i}-tick ` }));
  fake.script("CHAT-SLOW", { chunks: words, delayMs: 250 });
  fake.script("CHAT-AFTER", say("Back again."));
  const c = chat();
  await c.expect(/> $/);
  c.type("CHAT-SLOW\n");
  await c.expect(/w1-tick/);
  c.type("\x03");
  await c.expect(/⏹ cancelled/);
  await c.expect(/> $/);
  assert.doesNotMatch(c.out, /w39-tick/);
  c.type("CHAT-AFTER\n");
  await c.expect(/Back again\./);
  await c.expect(/> $/);
  c.type("/exit\n");
  assert.equal((await c.close()).code, 0);
});

test("chat --agent drives another ACP agent (here: corvid acp) over stdio; Ctrl-C cancels, not kills, it", async () => {
  fake.script("CHAT-EXTERNAL", say("Hello from the agent over stdio."));
  fake.script("CHAT-EXT-SLOW", { chunks: Array.from({ length: 40 }, (_, i) => ({ content: `x${i}-tock ` })), delayMs: 250 });
  const c = chat(["--agent", `'${corvidBin()}' acp`]);
  await c.expect(/Corvid · .*model: fake-model/);
  await c.expect(/> $/);
  c.type("CHAT-EXTERNAL\n");
  await c.expect(/Hello from the agent over stdio\./);
  await c.expect(/> $/);
  // The agent runs in its own process group: the terminal's Ctrl-C reaches only the chat.
  c.type("CHAT-EXT-SLOW\n");
  await c.expect(/x1-tock/);
  c.type("\x03");
  await c.expect(/⏹ cancelled/);
  await c.expect(/> $/);
  c.type("CHAT-EXTERNAL again\n");
  await c.expect(/Hello from the agent over stdio\./);
  await c.expect(/> $/);
  c.type("/quit\n");
  assert.equal((await c.close()).code, 0);
});

/** `corvid chat ARGS` with plain pipes, as a script would run it. */
function runPlain(args, env) {
  const child = spawn(corvidBin(), ["chat", ...args], { env, cwd: workdir(), stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const t = setTimeout(() => child.kill("SIGKILL"), WAIT);
  return new Promise((r) =>
    child.on("exit", (code) => {
      clearTimeout(t);
      r({ code, stdout, stderr });
    }),
  );
}

test("chat -p answers one question on stdout and exits 0; without a provider it exits non-zero and says how to configure one", async () => {
  fake.script("CHAT-ONESHOT", say("Forty-two."));
  const ok = await runPlain(["-p", "CHAT-ONESHOT what is the answer?"], agentEnv({ fake }));
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.stdout.trim(), "Forty-two.");

  const none = await runPlain(["-p", "anything"], agentEnv({ fake: null }));
  assert.notEqual(none.code, 0);
  assert.match(none.stderr, /No model provider is configured/);
  assert.match(none.stderr, /CORVID_BASE_URL/);
  assert.equal(none.stdout, "");
});

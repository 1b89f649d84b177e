import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TerminalManager } from "../../src/terminals";

// The launcher script as build.mjs copied it next to the bundle (this file runs from out/unit/).
const launcher = join(__dirname, "../../dist/sandbox-launcher.cjs");

/** A folder to work in, one beside it, a data dir with the temp dir; the launcher's policy. */
function sandboxPlace() {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "corvid-vscode-sandbox-")));
  for (const d of ["w", "beside", "data/tmp/s"]) mkdirSync(join(base, d), { recursive: true });
  const policy = JSON.stringify({ roots: [join(base, "w")], tmp: join(base, "data/tmp/s"), forbidden: [join(base, "data")], required: true });
  return { base, policy };
}

/** Why the launcher cannot confine here (no Landlock), or false. */
const noSandbox = (() => {
  const r = spawnSync(process.execPath, [launcher, "sandbox", "--policy", sandboxPlace().policy, "--", "true"], { encoding: "utf8" });
  return r.status === 0 ? false : `the launcher refuses here: ${r.stderr.trim() || `exit ${r.status}`}`;
})();

/** Pids of processes whose command line starts with `needle`. */
function running(needle: string): number[] {
  return readdirSync("/proc")
    .filter((n) => /^\d+$/.test(n))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").startsWith(needle);
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function until(what: string, check: () => boolean, ms = 5000) {
  const t0 = Date.now();
  while (!check()) {
    if (Date.now() - t0 > ms) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("a shell command's output and exit code are captured", async () => {
  const tm = new TerminalManager();
  const id = tm.create({ command: "echo out; echo err >&2; exit 3" });
  assert.deepEqual(await tm.waitForExit(id), { exitCode: 3, signal: null });
  const o = tm.output(id);
  assert.match(o.output, /out/);
  assert.match(o.output, /err/);
  assert.equal(o.truncated, false);
  assert.deepEqual(o.exitStatus, { exitCode: 3, signal: null });
});

test("terminal ids differ between extension hosts, so a reloaded chat never shows another command's output", async () => {
  // Two managers stand for two extension hosts (a reload starts a new one).
  const [a, b] = [new TerminalManager(), new TerminalManager()];
  const first = a.create({ command: "echo one" });
  const second = b.create({ command: "echo two" });
  assert.notEqual(first, second);
  assert.match(first, /^term-[0-9a-f]{8}-1$/);
  await Promise.all([a.waitForExit(first), b.waitForExit(second)]);
  assert.throws(() => b.output(first));
});

test("args, env and cwd are honoured; output is bounded", async () => {
  const tm = new TerminalManager();
  const id = tm.create({ command: "/bin/sh", args: ["-c", 'printf "%s %s" "$FOO" "$(pwd)"; head -c 5000 /dev/zero | tr "\\0" x'], env: [{ name: "FOO", value: "bar" }], cwd: "/tmp", outputByteLimit: 100 });
  await tm.waitForExit(id);
  const o = tm.output(id);
  assert.equal(o.truncated, true);
  assert.ok(Buffer.byteLength(o.output) <= 100);
  const id2 = tm.create({ command: 'printf "%s %s" "$FOO" "$(pwd)"', env: [{ name: "FOO", value: "bar" }], cwd: "/tmp" });
  await tm.waitForExit(id2);
  assert.equal(tm.output(id2).output, "bar /tmp");
});

test("kill stops a running command; unknown ids are errors", async () => {
  const tm = new TerminalManager();
  const id = tm.create({ command: "sleep 30" });
  tm.kill(id);
  const exit = await tm.waitForExit(id);
  assert.equal(exit.signal, "SIGTERM");
  tm.release(id);
  assert.throws(() => tm.output("nope"), /unknown terminal/);
});

test("the sandbox launcher's argv, as the in-process core sends it, runs confined with the env it is given", { skip: noSandbox }, async () => {
  const { base, policy } = sandboxPlace();
  const tm = new TerminalManager();
  const command = 'echo in > in.txt; echo pwned > ../beside/x.txt; echo "foo=$FOO ern=[$ELECTRON_RUN_AS_NODE]"; exit 5';
  const id = tm.create({
    command: process.execPath,
    args: [launcher, "sandbox", "--policy", policy, "--", "sh", "-c", command],
    env: [
      { name: "ELECTRON_RUN_AS_NODE", value: "1" },
      { name: "FOO", value: "bar" },
    ],
    cwd: join(base, "w"),
  });
  assert.deepEqual(await tm.waitForExit(id), { exitCode: 5, signal: null });
  const { output } = tm.output(id);
  assert.equal(readFileSync(join(base, "w", "in.txt"), "utf8"), "in\n");
  assert.equal(existsSync(join(base, "beside", "x.txt")), false, "the write beside the folder was refused");
  assert.match(output, /Permission denied/);
  // The env reached the launcher; Electron's switch went no further than the launcher.
  assert.match(output, /^foo=bar ern=\[\]$/m);
});

test("kill stops the launcher, and it takes what the command setsid'd with it", { skip: noSandbox }, async () => {
  const { base, policy } = sandboxPlace();
  const tag = `${8000 + Math.floor(Math.random() * 900)}.5`;
  const tm = new TerminalManager();
  const id = tm.create({
    command: process.execPath,
    args: [launcher, "sandbox", "--policy", policy, "--", "sh", "-c", `setsid sleep ${tag} & sleep ${tag}1`],
    env: [{ name: "ELECTRON_RUN_AS_NODE", value: "1" }],
    cwd: join(base, "w"),
  });
  await until("the command to run", () => running(`sleep ${tag}`).length === 2, 10000);
  tm.kill(id);
  // SIGTERM to the terminal's process group: the launcher kills the tree, then exits 128 + 15.
  assert.deepEqual(await tm.waitForExit(id), { exitCode: 143, signal: null });
  await until("nothing of the command to be left", () => running(`sleep ${tag}`).length === 0, 3000);
});

test("a watcher gets each later chunk and the exit; stopping it or having one never holds the command", async () => {
  const tm = new TerminalManager();
  const id = tm.create({ command: "echo first; read line; echo second; exit 4" });
  await until("the first line", () => tm.output(id).output.includes("first"));
  const seen: string[] = [];
  const stop = tm.watch(id, (e) => seen.push("data" in e ? e.data : `exit ${e.exit.exitCode}`))!;
  // The process waits on stdin; a watcher (the user's open terminal) does not change that,
  // and the agent's kill still ends it.
  tm.kill(id);
  assert.deepEqual(await tm.waitForExit(id), { exitCode: null, signal: "SIGTERM" });
  assert.deepEqual(seen, ["exit null"]);
  stop();
  assert.equal(tm.watch("term-unknown", () => {}), undefined);
  // Stopped watchers hear nothing more; a watcher that throws does not stop the capture.
  const id2 = tm.create({ command: "sleep 0.3; echo late" });
  const unheard: string[] = [];
  tm.watch(id2, (e) => unheard.push(JSON.stringify(e)))!();
  tm.watch(id2, () => {
    throw new Error("a broken watcher");
  });
  const heard: string[] = [];
  tm.watch(id2, (e) => heard.push("data" in e ? e.data : `exit ${e.exit.exitCode}`));
  await tm.waitForExit(id2);
  assert.deepEqual(unheard, []);
  assert.deepEqual(heard, ["late\n", "exit 0"]);
  assert.equal(tm.output(id2).output, "late\n");
  // Released (what the agent does after the call), the output stays for display.
  tm.release(id2);
  assert.equal(tm.peek(id2)?.output, "late\n");
});

test("what the user types reaches the command's stdin; the end of input ends a reader", async () => {
  const tm = new TerminalManager();
  const created: string[] = [];
  tm.onCreate = (id) => created.push(id);
  const id = tm.create({ command: "printf 'name? '; read name; echo \"hello, $name\"; cat; echo eof" });
  assert.deepEqual(created, [id]);
  assert.equal(tm.peek(id)?.command, "printf 'name? '; read name; echo \"hello, $name\"; cat; echo eof");
  await until("the question", () => tm.output(id).output.includes("name? "));
  assert.equal(tm.input(id, "Corvid\n"), true);
  await until("the answer", () => tm.output(id).output.includes("hello, Corvid"));
  assert.equal(tm.input(id, "more\n"), true);
  assert.equal(tm.input(id, null), true);
  assert.deepEqual(await tm.waitForExit(id), { exitCode: 0, signal: null });
  assert.equal(tm.output(id).output, "name? hello, Corvid\nmore\neof\n");
  // An ended command reads nothing; an unknown one neither.
  assert.equal(tm.input(id, "late\n"), false);
  assert.equal(tm.input("term-unknown", "x"), false);
});

test("interrupt sends SIGINT to the command's process group", async () => {
  const tm = new TerminalManager();
  const id = tm.create({ command: "trap 'echo got-int; exit 130' INT; echo ready; while :; do sleep 0.05; done" });
  await until("the command", () => tm.output(id).output.includes("ready"));
  tm.interrupt(id);
  assert.deepEqual(await tm.waitForExit(id), { exitCode: 130, signal: null });
  assert.match(tm.output(id).output, /got-int/);
});

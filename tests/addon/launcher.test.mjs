// The addon's sandbox launcher on its own: `node sandbox-launcher.cjs sandbox --policy JSON --
// PROG ARGS…` under plain Node, as the in-process agent runs it. Node has threads of its own
// that take signals (V8's and libuv's) and handlers of its own for SIGTERM and SIGINT, so
// these check what the supervisor must do there: confine the command, pass its stdio and exit
// status through, kill what it leaves running, and kill the whole tree when the launcher alone
// is sent SIGTERM, SIGINT or SIGHUP, or when its parent dies. Skipped (with the reason) only
// where the kernel has no Landlock.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { test } from "node:test";
import { createServer } from "node:net";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { running, until } from "../support/processes.mjs";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const launcher = join(repo, "sandbox-launcher.cjs");

/** A folder to work in, one beside it, and a data dir holding the temp dir; the policy. */
function place() {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "corvid-launcher-")));
  for (const d of ["w", "beside", "data/tmp/s"]) mkdirSync(join(base, d), { recursive: true });
  const policy = JSON.stringify({ roots: [join(base, "w")], tmp: join(base, "data/tmp/s"), forbidden: [join(base, "data")], required: true });
  return { base, policy };
}

function launch(policy, command, { env = process.env, cwd } = {}) {
  return spawnSync(process.execPath, [launcher, "sandbox", "--policy", policy, "--", "sh", "-c", command], { cwd, env, encoding: "utf8" });
}

const python3 = () => spawnSync("python3", ["-c", "pass"]).status === 0;

const skip = (() => {
  const r = launch(place().policy, "true");
  return r.status === 0 ? false : `the launcher refuses here: ${r.stderr.trim() || `exit ${r.status}`}`;
})();

test("the command is confined, and its output and exit status pass through", { skip }, () => {
  const { base, policy } = place();
  const r = launch(policy, 'echo in > in.txt && cat in.txt; echo pwned > ../beside/x; echo "tmp=$TMPDIR ern=[$ELECTRON_RUN_AS_NODE]"; echo err >&2; exit 7', {
    cwd: join(base, "w"),
    env: { ...process.env, ELECTRON_RUN_AS_NODE: "1" },
  });
  assert.equal(r.status, 7, r.stderr);
  assert.match(r.stdout, /^in$/m);
  assert.equal(existsSync(join(base, "beside", "x")), false, "the write beside the folder was refused");
  assert.match(r.stderr, /Permission denied/);
  assert.match(r.stderr, /^err$/m);
  // The launcher's own switch does not reach the command.
  assert.match(r.stdout, new RegExp(`^tmp=${join(base, "data/tmp/s")} ern=\\[\\]$`, "m"));
});

test("no network from inside, and the data dir cannot be read", { skip }, async () => {
  const { base, policy } = place();
  // A server on the host's loopback: the kernel would complete a connection to it (into its
  // backlog) even while this thread waits for the launcher. From inside, the socket is refused
  // (EPERM: the filter) or finds nobody (ECONNREFUSED: a private loopback of its own).
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address();
  const r = launch(policy, `node -e "require('net').connect(${port}, '127.0.0.1').on('connect', () => { console.log('connected'); process.exit(0) }).on('error', (e) => { console.log(e.code); process.exit(3) })"; ls ${join(base, "data")}`, { cwd: join(base, "w") });
  server.close();
  assert.match(r.stdout, /^(EPERM|ECONNREFUSED)$/m, r.stdout + r.stderr);
  assert.doesNotMatch(r.stdout, /connected/);
  assert.match(r.stderr, /Permission denied/);
});

test("the command can neither trace its launcher's threads nor open its memory", { skip: skip || (!python3() && "no python3 for ptrace") }, () => {
  // Were a thread of the launcher inside the sandbox, the command could attach to it (Landlock
  // lets a process trace its own domain) and write the memory it shares with Node's own,
  // unconfined threads. Each attempt must fail, for every thread, root or not.
  const probe = [
    "import ctypes, os, sys",
    "libc = ctypes.CDLL(None, use_errno=True)",
    "pid = int(sys.argv[1])",
    "for tid in os.listdir(f'/proc/{pid}/task'):",
    "    r = libc.ptrace(16, int(tid), 0, 0)  # PTRACE_ATTACH",
    "    print('attached' if r == 0 else 'refused', tid)",
    "    r == 0 and libc.ptrace(17, int(tid), 0, 0)  # PTRACE_DETACH",
    "try:",
    "    open(f'/proc/{pid}/mem', 'rb').close(); print('mem opened')",
    "except OSError:",
    "    print('mem refused')",
  ].join("\n");
  const r = launch(place().policy, `python3 -c "${probe}" $PPID`);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^refused \d+$/m);
  assert.doesNotMatch(r.stdout, /attached|mem opened/, r.stdout);
  assert.match(r.stdout, /^mem refused$/m);
});

test("failures are one line and the shell's statuses: 126 for the policy, 127 for the program", { skip }, () => {
  const bad = spawnSync(process.execPath, [launcher, "sandbox", "--policy", "{not json", "--", "true"], { encoding: "utf8" });
  assert.equal(bad.status, 126);
  assert.match(bad.stderr, /^corvid sandbox: invalid policy: .*\n$/);
  const usage = spawnSync(process.execPath, [launcher, "--policy", "{}"], { encoding: "utf8" });
  assert.equal(usage.status, 126);
  assert.match(usage.stderr, /^corvid sandbox: usage: /);
  const missing = spawnSync(process.execPath, [launcher, "sandbox", "--policy", place().policy, "--", "/nonexistent/prog"], { encoding: "utf8" });
  assert.equal(missing.status, 127);
  assert.match(missing.stderr, /^corvid sandbox: cannot run \/nonexistent\/prog: /);
  const quiet = launch(place().policy, "true");
  assert.deepEqual([quiet.status, quiet.stdout, quiet.stderr], [0, "", ""], "silent on success");
  // The editor-terminal form: the policy in CORVID_SANDBOX_POLICY, gone from the command's
  // environment; without it, a clear refusal.
  const { CORVID_SANDBOX_POLICY: _, ...clean } = process.env;
  const none = spawnSync(process.execPath, [launcher, "sandbox", "--", "true"], { encoding: "utf8", env: clean });
  assert.equal(none.status, 126);
  assert.match(none.stderr, /^corvid sandbox: no policy: pass --policy <JSON> or set CORVID_SANDBOX_POLICY\n$/);
  const viaEnv = spawnSync(process.execPath, [launcher, "sandbox", "--", "sh", "-c", "echo \"[$CORVID_SANDBOX_POLICY]\""], { encoding: "utf8", env: { ...clean, CORVID_SANDBOX_POLICY: place().policy } });
  assert.deepEqual([viaEnv.status, viaEnv.stdout, viaEnv.stderr], [0, "[]\n", ""], "the command runs and does not see the policy");
});

test("what the command leaves running is killed when it exits, setsid'd daemons included", { skip }, async () => {
  const tag = `${5000 + Math.floor(Math.random() * 900)}.5`;
  const r = launch(place().policy, `setsid sleep ${tag} >/dev/null 2>&1 < /dev/null & sleep ${tag}1 >/dev/null 2>&1 & echo started`);
  assert.equal(r.status, 0, r.stderr);
  await until("the leftovers to be killed", () => running(`sleep ${tag}`).length === 0, 3000);
});

const signalNumber = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 };

/** The signal mask of one thread. */
function blocked(pid, tid) {
  return BigInt(`0x${readFileSync(`/proc/${pid}/task/${tid}/status`, "utf8").match(/^SigBlk:\s*(\w+)/m)[1]}`);
}

/** Gone, or a zombie nobody reaped yet (a container's init may not). */
function gone(pid) {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].startsWith("Z");
  } catch {
    return true;
  }
}

for (const [signal, status] of [["SIGTERM", 143], ["SIGINT", 130], ["SIGHUP", 129]]) {
  test(`${signal} to the launcher alone kills the whole tree, though Node's threads take signals too`, { skip }, async () => {
    const tag = `${6000 + Math.floor(Math.random() * 900)}.5`;
    const child = spawn(process.execPath, [launcher, "sandbox", "--policy", place().policy, "--", "sh", "-c", `setsid sleep ${tag} & sleep ${tag}1`], { stdio: "ignore" });
    const exited = new Promise((r) => child.on("exit", (code, sig) => r({ code, sig })));
    await until("the command to run", () => running(`sleep ${tag}`).length === 2, 10000);
    // The point of the test: threads besides the one that called in take the signal as well
    // (the kernel may hand it to any of them).
    const others = readdirSync(`/proc/${child.pid}/task`).filter((t) => t !== String(child.pid));
    const takers = others.filter((t) => (blocked(child.pid, t) & (1n << BigInt(signalNumber[signal] - 1))) === 0n);
    assert.ok(takers.length > 0, `no other thread of the launcher takes ${signal} (threads: ${others.length + 1})`);
    child.kill(signal);
    assert.deepEqual(await exited, { code: status, sig: null }, "the launcher ends itself, with 128 + the signal");
    await until("nothing of the command to be left", () => running(`sleep ${tag}`).length === 0, 3000);
  });
}

test("the tree dies when whoever started the launcher is killed with SIGKILL", { skip }, async () => {
  const tag = `${7000 + Math.floor(Math.random() * 900)}.5`;
  const argv = [process.execPath, launcher, "sandbox", "--policy", place().policy, "--", "sh", "-c", `setsid sleep ${tag} & sleep ${tag}1`];
  // A shell stands in for Corvid: the launcher's parent-death signal fires when it dies.
  const parent = spawn("sh", ["-c", `"$@" & wait`, "sh", ...argv], { stdio: "ignore" });
  await until("the command to run", () => running(`sleep ${tag}`).length === 2, 10000);
  const [launcherPid] = running(`${process.execPath} ${launcher} sandbox`).filter((pid) => readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(tag));
  assert.ok(launcherPid, "the launcher is running");
  parent.kill("SIGKILL");
  await until("nothing of the command to be left", () => running(`sleep ${tag}`).length === 0, 3000);
  await until("the launcher to end", () => gone(launcherPid), 3000);
});

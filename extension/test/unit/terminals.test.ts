import { test } from "node:test";
import assert from "node:assert/strict";
import { TerminalManager } from "../../src/terminals";

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

// Processes as the sandbox tests look for them: by command line, from /proc (a `setsid`'d
// leftover is in no process group the test knows of).
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";

/** Pids of processes whose command line starts with `needle`. */
export function running(needle) {
  const found = [];
  for (const pid of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").startsWith(needle)) found.push(Number(pid));
    } catch {}
  }
  return found;
}

/** Waits until `check()` holds, polling every 20 ms; fails after `ms`. */
export async function until(what, check, ms = 5000) {
  const t0 = Date.now();
  while (!check()) {
    if (Date.now() - t0 > ms) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

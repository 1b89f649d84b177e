// Processes on this machine, from /proc: for tests that check nothing is left running.
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

/** Waits until `check()` holds; fails naming `what` after `ms`. */
export async function until(what, check, ms = 5000) {
  const t0 = Date.now();
  while (!check()) {
    if (Date.now() - t0 > ms) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

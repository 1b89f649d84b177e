// Whether the sandbox can run here: asks a launcher itself to require Landlock.
import { spawnSync } from "node:child_process";

/** Why `program [...leading] sandbox …` refuses to run `true` with Landlock required, or null. */
export function launcherRefusal(program, leading, tmp) {
  const policy = JSON.stringify({ roots: [], tmp, required: true });
  const r = spawnSync(program, [...leading, "sandbox", "--policy", policy, "--", "true"], { encoding: "utf8" });
  return r.status === 0 ? null : `the launcher refuses here: ${r.stderr.trim() || `exit ${r.status}`}`;
}

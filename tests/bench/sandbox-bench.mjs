// The sandbox's set-up cost per command: `sh -c true` run 200 times directly and through the
// launcher (`corvid sandbox --policy … -- sh -c true`), wall time of each run, median and p90.
// Also the Node addon's launcher (`node sandbox-launcher.cjs sandbox --policy … -- sh -c
// true`, what the in-process agent and the VS Code extension run), once the addon is built
// (`npm run build:native`), beside a bare `node -e 0` start: most of its cost is Node's own
// start-up, which no launcher script can avoid. Prints a table; the numbers belong in notes,
// never in timed tests.
//
//   npm run bench:sandbox            (uses target/release/corvid or $CORVID_BIN)
//   BENCH_DIR=/some/dir npm run bench:sandbox   (where the fake home goes; default the temp dir)
//
// The policy is a realistic one: a project folder, the default forbidden paths under a home
// holding a few dozen entries (so the read rules are split around ~/.ssh and ~/.config/corvid),
// the data dir and its session temp dir. The cost grows with the entries of every directory on
// the way from / to a forbidden path (each sibling is one Landlock rule), so a home inside a
// crowded temp dir (CI machines) costs more than a home in /home.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { corvidBin } from "../support/agent.mjs";
import { percentile, printTable } from "./report.mjs";

const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const home = realpathSync(mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "corvid-sbench-")));
for (const d of [".ssh", ".aws", ".config/corvid", ".config/nvim", "project/src", "data/tmp/s"]) mkdirSync(join(home, d), { recursive: true });
for (let i = 0; i < 40; i++) writeFileSync(join(home, `file-${i}`), "x");
const forbidden = [".ssh", ".aws", ".gnupg", ".config/corvid", ".netrc", ".git-credentials", ".docker", ".kube", ".config/gh", ".config/gcloud", ".azure", "data", "config.toml"].map((d) => join(home, d));
const policy = (extra) => JSON.stringify({ roots: [join(home, "project")], tmp: join(home, "data/tmp/s"), forbidden, read_only_paths: ["/etc"], ...extra });

function time(cmd, args) {
  const ms = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = process.hrtime.bigint();
    const r = spawnSync(cmd, args, { cwd: join(home, "project"), stdio: "ignore" });
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} exited ${r.status}`);
  }
  return ms;
}

const bin = corvidBin();
const cases = [
  ["sh -c true (direct)", "sh", ["-c", "true"]],
  ["launcher, network off (Landlock + seccomp)", bin, ["sandbox", "--policy", policy({}), "--", "sh", "-c", "true"]],
  ["launcher, network on (Landlock only)", bin, ["sandbox", "--policy", policy({ network: true }), "--", "sh", "-c", "true"]],
  ["launcher, session in $HOME (write rules split too)", bin, ["sandbox", "--policy", policy({ roots: [home] }), "--", "sh", "-c", "true"]],
];
const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const script = join(repo, "sandbox-launcher.cjs");
if (readdirSync(repo).some((f) => /^corvid\..*\.node$/.test(f)) && existsSync(script)) {
  cases.push(
    ["node -e 0 (Node's own start, for scale)", process.execPath, ["-e", "0"]],
    ["addon launcher (node sandbox-launcher.cjs), network off", process.execPath, [script, "sandbox", "--policy", policy({}), "--", "sh", "-c", "true"]],
  );
} else {
  console.log("no corvid.*.node at the repository root: the addon launcher is not measured (npm run build:native)\n");
}
const results = cases.map(([name, cmd, args]) => [name, time(cmd, args)]);
const base = percentile(results[0][1], 0.5);
const parent = join(home, "..");
console.log(`home: ${home} (${readdirSync(parent).length} entries beside it), ${RUNS} runs per case\n`);
rmSync(home, { recursive: true, force: true });
printTable(
  ["case", "median ms", "p90 ms", "added (median) ms"],
  results.map(([name, ms]) => [name, percentile(ms, 0.5).toFixed(2), percentile(ms, 0.9).toFixed(2), (percentile(ms, 0.5) - base).toFixed(2)]),
);

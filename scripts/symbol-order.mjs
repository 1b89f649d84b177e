// Regenerates server/symbol-order.txt: the functions a typical `corvid acp` session runs, in
// the order they first run, which the release link lays out together (server/build.rs).
//
//   node scripts/symbol-order.mjs     (needs valgrind; about ten minutes, most of it the link)
//
// Why: the kernel maps a binary's code 64 KB at a time around each page that is touched, and
// the code one session runs (about 4 of 14 MB) was spread over most of the binary, so most of it
// became resident. Laid out together, it maps a quarter of that (README, "Performance").
//
// How: the release binary is linked again with a map of where each function landed (only the
// final link is redone, and the binary is byte for byte the same), a scripted session
// (initialize, session/new, a streamed answer, file tools, a command through the sandbox
// launcher, list, load) runs under valgrind's lackey, which prints the address of every block
// of code run, and each address is looked up in the map. The names carry the compiler's hashes,
// which change when a function or the dependencies change: names that no longer exist are
// skipped by the linker, so a stale file costs memory, never a failed build. (Names ending in
// fat LTO's counter, `.N`, are also placed without it: server/link_layout.rs.) Run this again
// after large changes (the memory figures of `npm run bench` say when).
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, createReadStream, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..");
const target = process.env.CARGO_TARGET_DIR ?? join(repo, "target");
const work = mkdtempSync(join(tmpdir(), "corvid-symbol-order-"));
if (spawnSync("valgrind", ["--version"]).status !== 0) throw new Error("valgrind is needed (apt-get install valgrind)");

// 1. The release binary and its link map.
const map = join(work, "corvid.map");
const build = spawnSync("cargo", ["rustc", "--release", "--locked", "-p", "corvid", "--bin", "corvid", "--", "-C", `link-arg=-Wl,-Map=${map}`], {
  cwd: repo,
  stdio: "inherit",
});
if (build.status !== 0) throw new Error("cargo rustc failed");
// Named `corvid`, so that it is its own sandbox launcher (core/src/config/sandbox.rs).
mkdirSync(join(work, "bin"));
const binary = join(work, "bin", "corvid");
copyFileSync(join(target, "release", "corvid"), binary);
chmodSync(binary, 0o755);
const traced = join(work, "traced");
writeFileSync(
  traced,
  `#!/bin/sh\nexec valgrind --tool=lackey --trace-superblocks=yes --trace-children=yes --log-file=${work}/trace.%p.log ${binary} "$@"\n`,
);
chmodSync(traced, 0o755);

// 2. The session, traced.
execFileSync(process.execPath, [join(repo, "scripts", "symbol-order-session.mjs")], {
  env: { ...process.env, CORVID_BIN: traced },
  stdio: "inherit",
});

// 3. Where each function is (input sections `.text.<symbol>`: every function has its own).
const sections = [];
const line = /^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+\s+\S.*:\(\.text\.([^)]+)\)\s*$/;
for (const l of readFileSync(map, "utf8").split("\n")) {
  const m = line.exec(l);
  if (m) sections.push({ start: parseInt(m[1], 16), size: parseInt(m[2], 16), symbol: m[3].replace(/^(unlikely|hot|startup|exit)\./, "") });
}
sections.sort((a, b) => a.start - b.start);
const find = (addr) => {
  let lo = 0;
  let hi = sections.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const s = sections[mid];
    if (addr < s.start) hi = mid - 1;
    else if (addr >= s.start + s.size) lo = mid + 1;
    else return s;
  }
  return null;
};

// 4. The functions run, first run first: the agent's process, then the launchers it started.
// A trace is one line per block of code run (gigabytes for a session): read line by line.
const lines = (file) => createInterface({ input: createReadStream(file), crlfDelay: Infinity });
const logs = [];
for (const f of readdirSync(work).filter((f) => f.startsWith("trace."))) {
  for await (const l of lines(join(work, f))) {
    if (l.startsWith("SB ")) break; // the header (valgrind's, naming the command) is over
    if (l.includes(`Command: ${binary}`)) {
      logs.push({ pid: Number(f.split(".")[1]), file: join(work, f) });
      break;
    }
  }
}
logs.sort((a, b) => a.pid - b.pid);
const order = new Set();
let bytes = 0;
for (const { file } of logs) {
  for await (const l of lines(file)) {
    if (!l.startsWith("SB ")) continue;
    const s = find(parseInt(l.slice(3), 16));
    if (s && !order.has(s.symbol)) {
      order.add(s.symbol);
      bytes += s.size;
    }
  }
}
const total = sections.reduce((n, s) => n + s.size, 0);
const head = [
  "# The functions a typical `corvid acp` session runs, first run first: server/build.rs has the",
  "# release link lay them out together. Made by scripts/symbol-order.mjs; see there.",
  `# ${order.size} functions, ${(bytes / 1e6).toFixed(2)} of ${(total / 1e6).toFixed(2)} MB of code, traced in ${logs.length} processes.`,
];
writeFileSync(join(repo, "server", "symbol-order.txt"), [...head, ...order].join("\n") + "\n");
console.log(head[2].slice(2));
// The traces are gigabytes.
rmSync(work, { recursive: true, force: true });

#!/usr/bin/env node
// The npm packages, in the napi-rs shape: `corvid-acp` is the JavaScript front (index.js, the
// napi loader native.cjs, platform.cjs, the sandbox launcher, the types) and depends, as
// optional dependencies, on one package per platform (`npm/<platform>/package.json`), each
// holding only that platform's addon. npm installs the one whose `os`/`cpu`/`libc` fit.
//
//   node scripts/npm-packages.mjs pack --out DIR [--addon PLATFORM=FILE.node ...]
//       stages and packs corvid-acp (its manifest gains the optionalDependencies, as
//       `napi prepublish` would add them, and loses scripts and devDependencies) and
//       corvid-acp-<PLATFORM> for each --addon, into DIR as .tgz files. The root
//       package.json's version is the one version of all of them.
//   node scripts/npm-packages.mjs try --out DIR --platform PLATFORM [--node COMMAND...]
//       installs the packed corvid-acp alone into a fresh project and checks that loading it
//       fails with an error naming the platform; then installs it with
//       corvid-acp-<PLATFORM> (npm told the platform's os/cpu/libc, so an arm64 install can be
//       made here) and runs a prompt turn through it (scripts/smoke-turn.mjs --package) with
//       COMMAND (default: this Node; e.g. the arm64 Node under qemu).
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const rootManifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const version = rootManifest.version;
const platforms = readdirSync(join(root, "npm")).sort();
const platformManifest = (platform) => JSON.parse(readFileSync(join(root, "npm", platform, "package.json"), "utf8"));

const [command, ...rest] = process.argv.slice(2);
const options = { addon: [], node: null, out: null, platform: null };
for (let i = 0; i < rest.length; i++) {
  const name = rest[i].replace(/^--/, "");
  if (name === "node") {
    options.node = rest.slice(i + 1);
    break;
  }
  if (!(name in options)) usage(`unknown option ${rest[i]}`);
  if (Array.isArray(options[name])) options[name].push(rest[++i]);
  else options[name] = rest[++i];
}
if (!options.out) usage("--out DIR is needed");
const out = resolve(options.out);

function usage(problem) {
  console.error(`npm-packages: ${problem}\nusage: npm-packages.mjs pack --out DIR [--addon PLATFORM=FILE ...] | try --out DIR --platform PLATFORM [--node COMMAND...]`);
  process.exit(2);
}
// On Windows npm is a .cmd script, which only a shell runs.
const run = (file, args, cwd) =>
  execFileSync(file, args, { cwd, stdio: ["ignore", "pipe", "inherit"], encoding: "utf8", shell: process.platform === "win32" && file === "npm" });
const tarball = (name) => join(out, `${name}-${version}.tgz`);

/** Every platform package is declared for its platform and named after it. */
function checkPlatformManifests() {
  for (const platform of platforms) {
    const manifest = platformManifest(platform);
    const file = `corvid.${platform}.node`;
    if (manifest.name !== `corvid-acp-${platform}` || manifest.main !== file || manifest.files?.[0] !== file) {
      throw new Error(`npm/${platform}/package.json: name, main and files must name corvid-acp-${platform} / ${file}`);
    }
  }
}

function pack() {
  checkPlatformManifests();
  mkdirSync(out, { recursive: true });
  const stage = mkdtempSync(join(tmpdir(), "corvid-npm-stage-"));
  // The front: what `files` lists, the README and LICENSE, and the published manifest.
  const front = join(stage, "corvid-acp");
  mkdirSync(front);
  for (const file of [...rootManifest.files, "README.md", "LICENSE"]) {
    try {
      mkdirSync(dirname(join(front, file)), { recursive: true });
      copyFileSync(join(root, file), join(front, file));
    } catch (error) {
      if (file !== "LICENSE") throw error;
    }
  }
  const { scripts, devDependencies, ...published } = rootManifest;
  published.optionalDependencies = Object.fromEntries(platforms.map((p) => [`corvid-acp-${p}`, version]));
  writeFileSync(join(front, "package.json"), `${JSON.stringify(published, null, 2)}\n`);
  run("npm", ["pack", "--silent", "--pack-destination", out], front);
  console.log(`packed ${tarball("corvid-acp")}`);
  for (const spec of options.addon) {
    const [platform, file] = spec.split("=");
    if (!platforms.includes(platform) || !file) usage(`--addon ${spec}: PLATFORM=FILE with PLATFORM one of ${platforms.join(", ")}`);
    const folder = join(stage, platform);
    mkdirSync(folder);
    writeFileSync(join(folder, "package.json"), `${JSON.stringify({ ...platformManifest(platform), version }, null, 2)}\n`);
    writeFileSync(join(folder, "README.md"), `# corvid-acp-${platform}\n\nThe native addon of [corvid-acp](https://www.npmjs.com/package/corvid-acp) for ${platform}. Install corvid-acp; npm picks this package when it fits.\n`);
    copyFileSync(resolve(file), join(folder, `corvid.${platform}.node`));
    run("npm", ["pack", "--silent", "--pack-destination", out], folder);
    console.log(`packed ${tarball(`corvid-acp-${platform}`)}`);
  }
  rmSync(stage, { recursive: true, force: true });
}

/**
 * A fresh npm project that depends on the front and, when `withPlatform`, has the platform
 * package's tarball as an optional dependency: npm then chooses it by its `os`/`cpu`/`libc`
 * as it chooses the front's own optional dependencies from the registry (those are not
 * published from here, and npm skips an optional dependency it cannot fetch), told the
 * platform's values so that an arm64 install can be made on this x64 machine.
 */
function install(platform, withPlatform) {
  const project = mkdtempSync(join(tmpdir(), `corvid-npm-try-${platform}-`));
  const manifest = { name: "try-corvid-acp", private: true, type: "module", dependencies: { "corvid-acp": `file:${tarball("corvid-acp")}` } };
  if (withPlatform) manifest.optionalDependencies = { [`corvid-acp-${platform}`]: `file:${tarball(`corvid-acp-${platform}`)}` };
  writeFileSync(join(project, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  const { os, cpu, libc } = platformManifest(platform);
  const target = [`--os=${os[0]}`, `--cpu=${cpu[0]}`, ...(libc ? [`--libc=${libc[0]}`] : [])];
  run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", ...target], project);
  const installed = readdirSync(join(project, "node_modules")).filter((n) => n.startsWith("corvid-acp")).sort();
  const expected = withPlatform ? ["corvid-acp", `corvid-acp-${platform}`] : ["corvid-acp"];
  if (installed.join() !== expected.join()) throw new Error(`npm installed ${installed.join(", ")}; expected ${expected.join(", ")}`);
  return project;
}

function tryPackages() {
  const platform = options.platform;
  if (!platforms.includes(platform)) usage(`--platform must be one of ${platforms.join(", ")}`);
  const node = options.node ?? [process.execPath];
  // 1. The front alone (no platform package): loading fails and says which platform.
  const bare = install(platform, false);
  const probe = `import("corvid-acp").then(() => { console.log("loaded"); process.exit(3); }, (e) => { console.log(e.message); process.exit(e.code === "CORVID_ADDON_MISSING" ? 0 : 4); })`;
  let message;
  try {
    message = run(node[0], [...node.slice(1), "--input-type=module", "-e", probe], bare).trim();
  } catch (error) {
    throw new Error(`corvid-acp without its platform package: expected a CORVID_ADDON_MISSING error, got exit ${error.status}: ${error.stdout}`);
  }
  if (!message.includes(platform) || !message.includes(`corvid-acp-${platform}`)) {
    throw new Error(`the error does not name ${platform} and its package: ${message}`);
  }
  console.log(`without corvid-acp-${platform}: ${message}`);
  rmSync(bare, { recursive: true, force: true });
  // 2. With it: a prompt turn through `import "corvid-acp"`.
  const project = install(platform, true);
  const smoke = join(root, "scripts", "smoke-turn.mjs");
  process.stdout.write(run(node[0], [...node.slice(1), smoke, "--package", project], root));
  // 3. `npx corvid-acp`: the package's bin (linked into node_modules/.bin, as npx finds it)
  // serves ACP over stdio; here it answers the ACP Registry validator's initialize.
  const linked = join(project, "node_modules", ".bin", process.platform === "win32" ? "corvid-acp.cmd" : "corvid-acp");
  if (!existsSync(linked)) throw new Error(`npm did not link the bin: no ${linked}`);
  const bin = join(project, "node_modules", "corvid-acp", "bin", "corvid-acp.mjs");
  const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: { _meta: { "terminal-auth": true } } } };
  const reply = execFileSync(node[0], [...node.slice(1), bin], { cwd: project, input: `${JSON.stringify(initialize)}\n`, encoding: "utf8", timeout: 60_000 });
  const lines = reply.trim().split("\n");
  const answer = lines.map((l) => JSON.parse(l)).find((m) => m.id === 1);
  if (!answer?.result?.authMethods?.length) throw new Error(`npx corvid-acp: no authMethods in ${reply}`);
  console.log(`npx corvid-acp: initialize answered protocolVersion ${answer.result.protocolVersion}, ${lines.length} stdout line(s), auth methods ${answer.result.authMethods.map((m) => m.id).join(", ")}`);
  rmSync(project, { recursive: true, force: true });
}

if (command === "pack") pack();
else if (command === "try") tryPackages();
else usage(`unknown command ${command ?? "(none)"}`);

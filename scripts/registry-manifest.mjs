#!/usr/bin/env node
// registry/corvid/agent.json's generated parts, from their sources, so they never drift:
// `version`, `license` and `repository` from Cargo.toml's [workspace.package], and the binary
// distribution from scripts/release-archives.sh's archive names (one per platform it knows), at
// <repository>/releases/download/v<version>/<name>, `cmd` ./corvid (./corvid.exe), `args` acp.
// The rest (id, name, description, authors) is kept as written.
//
//   node scripts/registry-manifest.mjs                 rewrite agent.json (sha256s kept only
//                                                      where the archive URL did not change)
//   node scripts/registry-manifest.mjs --check         exit 1 if agent.json differs from what
//                                                      would be written (sha256s aside)
//   node scripts/registry-manifest.mjs --sums dist-release/SHA256SUMS [--out FILE]
//       the manifest for a release: each archive's sha256 from release-archives.sh's SHA256SUMS
//       (every listed archive must be there), written to FILE (default: agent.json itself)
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const manifestPath = join(root, "registry", "corvid", "agent.json");

/** `version`, `repository` and `license` under [workspace.package] in Cargo.toml. */
export function cargoWorkspace(text = readFileSync(join(root, "Cargo.toml"), "utf8")) {
  const section = text.split(/^\[workspace\.package\]\s*$/m)[1]?.split(/^\[/m)[0] ?? "";
  const field = (name) => section.match(new RegExp(`^${name}\\s*=\\s*"([^"]*)"`, "m"))?.[1];
  return { version: field("version"), repository: field("repository"), license: field("license") };
}

/** What scripts/release-archives.sh names each platform's archive: platform → {target, name}. */
export function releaseArchiveNames() {
  const run = spawnSync("bash", [join(root, "scripts", "release-archives.sh"), "--names"], { encoding: "utf8" });
  if (run.status !== 0) throw new Error(`release-archives.sh --names failed: ${run.stderr}`);
  const names = {};
  for (const line of run.stdout.trim().split("\n")) {
    const [platform, target, name] = line.split(" ");
    names[platform] = { target, name };
  }
  return names;
}

/** sha256 by file name from a `sha256sum` listing. */
export function parseSums(text) {
  const sums = {};
  for (const line of text.split("\n")) {
    const m = line.match(/^([0-9a-fA-F]{64}) [ *](.+)$/);
    if (m) sums[m[2].trim()] = m[1].toLowerCase();
  }
  return sums;
}

/** The npm package whose bin serves ACP over stdio (this repository's package.json). */
function npmName() {
  return JSON.parse(readFileSync(join(root, "package.json"), "utf8")).name;
}

/** The manifest with its generated parts made again from `current`'s hand-written ones. */
export function generateManifest(current, { cargo = cargoWorkspace(), names = releaseArchiveNames(), sums } = {}) {
  const binary = {};
  for (const [platform, { target, name }] of Object.entries(names)) {
    const archive = `${cargo.repository}/releases/download/v${cargo.version}/${name}`;
    const entry = { archive, cmd: target.includes("-windows-") ? "./corvid.exe" : "./corvid", args: ["acp"] };
    if (sums) {
      if (!sums[name]) throw new Error(`${name} is not in the checksums`);
      entry.sha256 = sums[name];
    } else {
      // A checksum stays only with the very archive it was taken from.
      const before = current.distribution?.binary?.[platform];
      if (before?.sha256 && before.archive === archive) entry.sha256 = before.sha256;
    }
    binary[platform] = entry;
  }
  const { id, name, description, authors, website } = current;
  const manifest = { id, name, version: cargo.version, description, repository: cargo.repository, website, authors, license: cargo.license };
  for (const key of Object.keys(manifest)) if (manifest[key] === undefined) delete manifest[key];
  // `npx corvid-acp` (bin/corvid-acp.mjs) at the same version (the registry's auto-bump needs
  // every source at one version); others (uvx), if ever added by hand, are kept as they are.
  const npx = { package: `${npmName()}@${cargo.version}` };
  manifest.distribution = { ...current.distribution, binary, npx };
  return manifest;
}

const withoutSums = (m) => JSON.parse(JSON.stringify(m, (k, v) => (k === "sha256" ? undefined : v)));

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const option = (name) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const file = option("--file") ?? manifestPath;
  const current = JSON.parse(readFileSync(file, "utf8"));
  const sumsFile = option("--sums");
  const sums = sumsFile ? parseSums(readFileSync(sumsFile, "utf8")) : undefined;
  let next;
  try {
    next = generateManifest(current, { sums });
  } catch (error) {
    console.error(`registry-manifest: ${error.message}`);
    process.exit(1);
  }
  if (args.includes("--check")) {
    const a = JSON.stringify(withoutSums(current), null, 2);
    const b = JSON.stringify(withoutSums(next), null, 2);
    if (a !== b) {
      console.error(`registry-manifest: ${file} is out of date; run node scripts/registry-manifest.mjs\n--- has\n${a}\n--- would be\n${b}`);
      process.exit(1);
    }
    console.error(`registry-manifest: ${file} is up to date`);
  } else {
    const out = option("--out") ?? file;
    writeFileSync(out, `${JSON.stringify(next, null, 2)}\n`);
    console.error(`registry-manifest: wrote ${out}`);
  }
}

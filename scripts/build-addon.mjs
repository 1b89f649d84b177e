#!/usr/bin/env node
// Builds the Node addon as part of the one release build and puts it where `native.cjs` loads
// it (`corvid.<platform>.node` at the repository root).
//
// Why not `napi build`: it always passes `--target <triple>` (a second target folder) and
// `--strip` sets RUSTFLAGS, so it recompiled the whole dependency tree that
// `cargo build --release --workspace` had just built. Here the addon is the workspace member
// `corvid-node`, built by that same command (so a no-op right after scripts/test.sh's build),
// and stripped by its release profile (Cargo.toml). Not `-p corvid-node`: building the cdylib
// alone lets cargo compile every dependency as LTO bitcode only, a second full build.
// `npm run build:types` still runs `napi build` to regenerate the committed `native.cjs` /
// `native.d.ts` after the addon's exported API changes.
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { copyFileSync, renameSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { platformName } = createRequire(import.meta.url)("../platform.cjs");
// `--target <triple> --platform <napi name>`: another target's addon (the release workflow
// builds each platform's on its own runner, e.g. x86_64-apple-darwin on an arm64 Mac).
const option = (name) => {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : undefined;
};
const target = option("target");
const platform = option("platform") ?? platformName();
if (target && !option("platform")) throw new Error("build-addon: --target needs --platform (e.g. darwin-x64)");
const targetArgs = target ? ["--target", target] : [];
execFileSync("cargo", ["build", "--release", "--locked", "--workspace", ...targetArgs], { cwd: root, stdio: "inherit" });
const metadata = JSON.parse(
  execFileSync("cargo", ["metadata", "--format-version", "1", "--no-deps"], { cwd: root, encoding: "utf8" }),
);
const os = platform.split("-")[0];
const library = {
  linux: "libcorvid_node.so",
  darwin: "libcorvid_node.dylib",
  win32: "corvid_node.dll",
}[os];
if (!library) throw new Error(`build-addon: unsupported platform ${platform}`);
const from = join(metadata.target_directory, ...(target ? [target] : []), "release", library);
// napi-rs's platform name, as native.cjs looks the file up.
const to = join(root, `corvid.${platform}.node`);
// Copy, then rename into place: a Node process that has the old file loaded keeps its mapping.
copyFileSync(from, `${to}.tmp`);
renameSync(`${to}.tmp`, to);
console.error(`build-addon: ${to}`);

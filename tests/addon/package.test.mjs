// The npm packages as a user gets them (issue 21, item 3): `corvid-acp` packed as published
// (the JavaScript front, with its per-platform packages as optional dependencies) and this
// platform's `corvid-acp-<platform>` holding the addon built by `npm run build:native`, both
// installed from their tarballs into a fresh project, then a prompt turn through
// `import "corvid-acp"` (scripts/npm-packages.mjs; scripts/cross-check.sh does the same for
// linux-arm64 under qemu).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const require = createRequire(import.meta.url);
const { platformName } = require("../../platform.cjs");
const platform = platformName();
const out = mkdtempSync(join(tmpdir(), "corvid-npm-packages-"));
after(() => rmSync(out, { recursive: true, force: true }));
const packages = (...args) =>
  execFileSync(process.execPath, [join(root, "scripts/npm-packages.mjs"), ...args, "--out", out], { cwd: root, encoding: "utf8" });

test("the packed front holds the loader and lists every platform package; the platform package holds only the addon", () => {
  packages("pack", "--addon", `${platform}=${join(root, `corvid.${platform}.node`)}`);
  assert.deepEqual(readdirSync(out).sort(), ["corvid-acp-0.1.0.tgz", `corvid-acp-${platform}-0.1.0.tgz`]);
  const list = (file) => execFileSync("tar", ["tzf", join(out, file)], { encoding: "utf8" }).trim().split("\n").sort();
  const front = list("corvid-acp-0.1.0.tgz");
  for (const file of ["bin/corvid-acp.mjs", "index.js", "index.d.ts", "native.cjs", "platform.cjs", "sandbox-launcher.cjs", "package.json"]) {
    assert.ok(front.includes(`package/${file}`), `corvid-acp holds ${file}`);
  }
  assert.ok(!front.some((f) => f.endsWith(".node")), "no addon in the front");
  assert.deepEqual(list(`corvid-acp-${platform}-0.1.0.tgz`), ["package/README.md", `package/corvid.${platform}.node`, "package/package.json"]);
  const manifest = JSON.parse(execFileSync("tar", ["xzfO", join(out, "corvid-acp-0.1.0.tgz"), "package/package.json"], { encoding: "utf8" }));
  assert.deepEqual(Object.keys(manifest.optionalDependencies).sort(), [
    "corvid-acp-darwin-arm64",
    "corvid-acp-darwin-x64",
    "corvid-acp-linux-arm64-gnu",
    "corvid-acp-linux-x64-gnu",
    "corvid-acp-win32-x64-msvc",
  ]);
  assert.deepEqual(manifest.bin, { "corvid-acp": "bin/corvid-acp.mjs" });
  assert.equal(manifest.devDependencies, undefined);
  assert.equal(manifest.scripts, undefined);
});

test("installed alone the front names the platform; with its platform package it runs a prompt turn", () => {
  const output = packages("try", "--platform", platform);
  assert.match(output, new RegExp(`without corvid-acp-${platform}: corvid-acp: the native addon for ${platform} did not load`));
  // createAgent's default launcher is the installed package's sandbox-launcher.cjs, which
  // finds the addon in the platform package: the turn's command ran confined through it.
  if (process.platform === "linux") assert.match(output, /sandbox: landlock/);
  assert.match(output, /session\/prompt answered: stopReason end_turn/);
  assert.match(output, /smoke turn: ok/);
  assert.match(output, /npx corvid-acp: initialize answered protocolVersion 1, 1 stdout line\(s\), auth methods corvid-login/);
});

test("on a platform it does not ship for, the error says so and lists the platforms it ships for", () => {
  // The published front's platform.cjs reads the optionalDependencies of the manifest beside it.
  const front = mkdtempSync(join(tmpdir(), "corvid-npm-front-"));
  try {
    execFileSync("tar", ["xzf", join(out, "corvid-acp-0.1.0.tgz"), "-C", front]);
    const { missingAddonMessage } = require(join(front, "package", "platform.cjs"));
    assert.equal(
      missingAddonMessage(new Error("not found"), "freebsd-x64"),
      `corvid-acp does not support freebsd-x64 (Node ${process.version}): its native addon is built for darwin-arm64, darwin-x64, linux-arm64-gnu, linux-x64-gnu, win32-x64-msvc`,
    );
  } finally {
    rmSync(front, { recursive: true, force: true });
  }
});

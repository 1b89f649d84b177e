// Packages the extension as a VSIX for one platform (`vsce package --target`): the bundle plus
// that platform's addon only.
//   node package.mjs                                    this machine's platform, the addon at the
//                                                       repository root (npm run build:native)
//   node package.mjs --target linux-arm64 --addon F     another platform's, with its addon file
// Writes dist-vsix/corvid-vscode-<target>.vsix.
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const { platformName } = createRequire(import.meta.url)("../platform.cjs");
// VS Code's platform targets and the napi-rs platform name of the addon each one carries.
const addonPlatform = {
  "linux-x64": "linux-x64-gnu",
  "linux-arm64": "linux-arm64-gnu",
  "darwin-arm64": "darwin-arm64",
  "darwin-x64": "darwin-x64",
  "win32-x64": "win32-x64-msvc",
};
const option = (name) => {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : undefined;
};
const target = option("target") ?? `${process.platform}-${process.arch}`;
const addon = option("addon");
if (!addonPlatform[target]) {
  console.error(`package.mjs: no VSIX for ${target}; targets: ${Object.keys(addonPlatform).join(", ")}`);
  process.exit(2);
}
if (!addon && addonPlatform[target] !== platformName()) {
  console.error(`package.mjs: --target ${target} needs --addon <corvid.${addonPlatform[target]}.node>`);
  process.exit(2);
}
const env = { ...process.env };
if (addon) env.CORVID_ADDON = `${addonPlatform[target]}=${resolve(addon)}`;
execFileSync(process.execPath, [join(here, "build.mjs")], { cwd: here, env, stdio: "inherit" });
mkdirSync(join(here, "dist-vsix"), { recursive: true });
// vsce's own script through this Node (node_modules/.bin/vsce is a .cmd shim on Windows).
const vsce = join(here, "node_modules", "@vscode", "vsce", "vsce");
const out = join("dist-vsix", `corvid-vscode-${target}.vsix`);
execFileSync(process.execPath, [vsce, "package", "--target", target, "--no-dependencies", "--allow-missing-repository", "--skip-license", "-o", out], {
  cwd: here,
  stdio: "inherit",
});

// The napi-rs name of the platform this Node runs on (`linux-x64-gnu`, `darwin-arm64`,
// `win32-x64-msvc`, ...): the suffix of the addon's file name (`corvid.<name>.node`) and of
// its npm package (`corvid-acp-<name>`). One definition for the loader's error message
// (index.js), the addon build (scripts/build-addon.mjs) and the packaging
// (scripts/npm-packages.mjs).
"use strict";

function libc() {
  // glibc reports its version in the process report; musl does not.
  const report = process.report && typeof process.report.getReport === "function" ? process.report.getReport() : null;
  return report && report.header && report.header.glibcVersionRuntime ? "gnu" : "musl";
}

/** `platform` and `arch` as Node names them; `abi` only where napi-rs names one. */
function platformName(platform = process.platform, arch = process.arch) {
  const abi = platform === "linux" ? `-${libc()}` : platform === "win32" ? "-msvc" : "";
  return `${platform}-${arch}${abi}`;
}

/**
 * Why the addon could not be loaded, in words a user can act on: the platform's name, and
 * whether corvid-acp ships for it. `cause` is native.cjs's error, kept as the thrown
 * error's `cause` (it lists each file and package it tried).
 */
function missingAddonMessage(cause, name = platformName()) {
  let shipped = null;
  try {
    // The published package lists its platform packages (scripts/npm-packages.mjs adds them);
    // a source checkout has none.
    const optional = require("./package.json").optionalDependencies || {};
    shipped = Object.keys(optional).filter((p) => p.startsWith("corvid-acp-")).map((p) => p.slice("corvid-acp-".length));
  } catch {}
  const detail = cause && cause.message ? ` (${cause.message.split("\n")[0]})` : "";
  if (shipped === null || shipped.length === 0) {
    return `corvid-acp: no native addon for ${name} was found${detail}; in a source checkout, build it with \`npm run build:native\``;
  }
  if (!shipped.includes(name)) {
    return `corvid-acp does not support ${name} (Node ${process.version}): its native addon is built for ${shipped.join(", ")}`;
  }
  return (
    `corvid-acp: the native addon for ${name} did not load; it comes in the package corvid-acp-${name}, ` +
    "which npm installs as an optional dependency: install it, or remove node_modules and the lockfile and install again"
  );
}

module.exports = { platformName, missingAddonMessage };

// The ACP Registry's CI checks, written from their description in ../shared/docs/registry.md
// §1.2 (build_registry.py and verify_agents.py --auth-check), so a registry PR for Corvid does not
// first fail there. Each check returns a list of problems (empty: it passes); the tests run them
// on registry/corvid and on broken inputs, so every check is seen to fail too.
// Not replicated: URL reachability (no network to GitHub here; the registry itself skips it
// under SKIP_URL_VALIDATION=1) and the hourly auto-bump.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Ajv from "ajv";
// Where the manifest's generated parts come from (the Cargo workspace, the archive script).
export { cargoWorkspace, releaseArchiveNames } from "../../scripts/registry-manifest.mjs";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const schema = JSON.parse(readFileSync(join(root, "registry", "agent.schema.json"), "utf8"));

const ajv = new Ajv({ allErrors: true, strict: false });
// jsonschema (the registry's validator) accepts any absolute URI; so does this.
ajv.addFormat("uri", (s) => {
  try {
    return new URL(s).protocol.length > 1;
  } catch {
    return false;
  }
});
const validate = ajv.compile(schema);

/** 1. The manifest against agent.schema.json. */
export function schemaProblems(manifest) {
  if (validate(manifest)) return [];
  return validate.errors.map((e) => `schema: ${e.instancePath || "/"} ${e.message} ${JSON.stringify(e.params)}`);
}

/** 1. The id rules: the pattern, and equal to the folder's name. */
export function idProblems(manifest, folder) {
  const problems = [];
  if (!/^[a-z][a-z0-9-]*$/.test(manifest.id ?? "")) problems.push(`id ${JSON.stringify(manifest.id)} is not ^[a-z][a-z0-9-]*$`);
  if (manifest.id !== folder) problems.push(`id ${JSON.stringify(manifest.id)} differs from its folder ${JSON.stringify(folder)}`);
  return problems;
}

/** 1. Semver: exactly x.y.z, numeric parts (the schema's pattern alone allows a suffix). */
export function semverProblems(version) {
  return /^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$/.test(version ?? "")
    ? []
    : [`version ${JSON.stringify(version)} is not x.y.z`];
}

/** 2. Version matching: npx `pkg@X.Y.Z` and binary `/download/vX.Y.Z/` equal `version`; no latest. */
export function versionProblems(manifest) {
  const problems = [];
  const { version, distribution = {} } = manifest;
  for (const kind of ["npx", "uvx"]) {
    const spec = distribution[kind]?.package;
    if (spec === undefined) continue;
    // A scoped name starts with "@": the version is after the last "@" past the first character.
    const at = spec.lastIndexOf("@");
    const pinned = at > 0 ? spec.slice(at + 1) : kind === "uvx" ? spec.split("==")[1] : undefined;
    if (pinned === "latest" || /@latest$/.test(spec)) problems.push(`${kind} ${spec}: "latest" is rejected`);
    else if (pinned !== undefined && pinned !== version) problems.push(`${kind} ${spec}: version ${pinned} is not ${version}`);
  }
  for (const [platform, target] of Object.entries(distribution.binary ?? {})) {
    const url = target.archive ?? "";
    if (/\/latest\//.test(url)) problems.push(`binary ${platform}: ${url} uses /latest/`);
    const tagged = url.match(/\/download\/v?([^/]+)\//);
    if (tagged && tagged[1] !== version) problems.push(`binary ${platform}: ${url} is version ${tagged[1]}, not ${version}`);
  }
  return problems;
}

const rejectedFormats = [".dmg", ".pkg", ".deb", ".rpm", ".msi", ".appimage"];
const acceptedFormats = [".zip", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2"];

/**
 * 3. Archive formats and each platform's `archive` and `cmd`; plus what Zed then requires of
 * `cmd` (it refuses one without "./" or with ".."), and a warning per OS with no build.
 */
export function archiveProblems(manifest) {
  const problems = [];
  const warnings = [];
  const binary = manifest.distribution?.binary;
  if (!binary) return { problems, warnings };
  for (const [platform, target] of Object.entries(binary)) {
    if (!target.archive) problems.push(`binary ${platform}: no archive`);
    if (!target.cmd) problems.push(`binary ${platform}: no cmd`);
    const path = (() => {
      try {
        return new URL(target.archive ?? "").pathname.toLowerCase();
      } catch {
        return (target.archive ?? "").toLowerCase();
      }
    })();
    const file = path.split("/").pop();
    if (rejectedFormats.some((ext) => file.endsWith(ext))) problems.push(`binary ${platform}: ${file} is an installer format the registry rejects`);
    else if (file.includes(".") && !acceptedFormats.some((ext) => file.endsWith(ext)) && !file.endsWith(".exe"))
      problems.push(`binary ${platform}: ${file} is not one of ${acceptedFormats.join(" ")} (or a raw binary)`);
    if (target.cmd && !/^\.[/\\]/.test(target.cmd)) problems.push(`binary ${platform}: cmd ${target.cmd} does not start with ./ (Zed refuses it)`);
    if (target.cmd?.includes("..")) problems.push(`binary ${platform}: cmd ${target.cmd} contains .. (Zed refuses it)`);
  }
  for (const os of ["darwin", "linux", "windows"]) {
    if (!Object.keys(binary).some((p) => p.startsWith(`${os}-`))) warnings.push(`binary: no ${os} build`);
  }
  return { problems, warnings };
}

/** 6. The icon rules, by tests/registry/icon_check.py (Python's XML parser, as the registry). */
export function iconProblems(svgText) {
  return iconProblemsEach([svgText])[0];
}

/** The same for many icons in one Python run: a list of problem lists. */
export function iconProblemsEach(svgTexts) {
  const script = join(root, "tests", "registry", "icon_check.py");
  const run = spawnSync("python3", [script, "--each"], { input: JSON.stringify(svgTexts), encoding: "utf8" });
  if (run.error) throw run.error;
  if (run.status !== 0) throw new Error(`icon_check.py failed (${run.status}): ${run.stderr}`);
  return JSON.parse(run.stdout);
}

/** The validator's own initialize (registry.md §1.2 item 7), sent as one raw NDJSON line. */
export const validatorInitialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: 1,
    clientInfo: { name: "ACP Registry Validator", version: "1.0.0" },
    clientCapabilities: {
      terminal: true,
      fs: { readTextFile: true, writeTextFile: true },
      _meta: { terminal_output: true, "terminal-auth": true },
    },
  },
};

/** An auth method's kind as the validator reads it: `type`, else the _meta hints, else agent. */
export function authMethodType(method) {
  if (typeof method?.type === "string") return method.type;
  if (method?._meta?.["terminal-auth"]) return "terminal";
  if (method?._meta?.["agent-auth"]) return "agent";
  return "agent";
}

/**
 * 7. The auth check as verify_agents.py --auth-check runs it: the agent spawned with HOME a fresh
 * folder (also its cwd), only PATH and TMPDIR from this environment plus TERM=dumb, the
 * validator's initialize on stdin, up to `timeoutMs` (the registry's 120 s) for the answer.
 * Pass: the result has authMethods with at least one of type agent or terminal. Fail: timeout,
 * a JSON-RPC error, no or empty authMethods, a non-JSON line on stdout, or an exit first.
 * Resolves to { problems, response, stderr }.
 */
export function authCheck(command, args, { timeoutMs = 120_000 } = {}) {
  const home = mkdtempSync(join(tmpdir(), "corvid-registry-auth-"));
  const env = { HOME: home, TERM: "dumb" };
  for (const name of ["PATH", "TMPDIR"]) if (process.env[name] !== undefined) env[name] = process.env[name];
  const child = spawn(command, args, { cwd: home, env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  // Settles once the process is gone ("exit" may not follow a failed spawn's "error").
  const gone = new Promise((settle) => {
    child.once("exit", settle);
    child.once("error", settle);
  });
  return new Promise((resolve) => {
    let buffer = "";
    let done = false;
    const finish = (problems, response) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      child.stdin.end();
      // Give it a moment to exit on EOF (as over stdio from an editor), then make sure.
      const kill = setTimeout(() => child.kill("SIGKILL"), 2000);
      gone.then(() => {
        clearTimeout(kill);
        rmSync(home, { recursive: true, force: true });
        resolve({ problems, response, stderr });
      });
    };
    const timer = setTimeout(() => finish([`no initialize response within ${timeoutMs} ms`]), timeoutMs);
    child.on("error", (error) => finish([`could not start ${command}: ${error.message}`]));
    // "close", not "exit": stdout may still hold the answer when "exit" fires.
    child.on("close", (code, signal) => finish([`exited (${code ?? signal}) before answering initialize`]));
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => {
      buffer += chunk;
      let newline;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline).trim();
        buffer = buffer.slice(newline + 1);
        if (line === "") continue;
        let message;
        try {
          message = JSON.parse(line);
        } catch {
          return finish([`ACP spec violation: agent wrote non-JSON to stdout: ${line.slice(0, 200)}`]);
        }
        if (message?.id !== validatorInitialize.id) continue; // a notification or request: not ours
        if (message.error) return finish([`initialize answered a JSON-RPC error: ${JSON.stringify(message.error)}`], message);
        const methods = message.result?.authMethods;
        if (!Array.isArray(methods) || methods.length === 0) return finish(["No authMethods in response"], message);
        const kinds = methods.map(authMethodType);
        if (!kinds.some((k) => k === "agent" || k === "terminal"))
          return finish([`no auth method of type agent or terminal (types: ${kinds.join(", ")})`], message);
        return finish([], message);
      }
    });
    child.stdin.on("error", () => {}); // an agent that exits at once closes the pipe: reported by "exit"
    child.stdin.write(`${JSON.stringify(validatorInitialize)}\n`);
  });
}

/**
 * The manifest's versions against the ones we publish: `version` equals the Cargo workspace's,
 * and an npx distribution names our npm package at its version.
 */
export function publishedVersionProblems(manifest, cargo, npmPackage) {
  const problems = [];
  if (manifest.version !== cargo.version) problems.push(`version ${manifest.version} is not the Cargo workspace's ${cargo.version}`);
  const spec = manifest.distribution?.npx?.package;
  if (spec !== undefined && spec !== `${npmPackage.name}@${npmPackage.version}`)
    problems.push(`npx ${spec} is not ${npmPackage.name}@${npmPackage.version} (package.json)`);
  if (spec !== undefined && npmPackage.version !== manifest.version)
    problems.push(`package.json's version ${npmPackage.version} is not ${manifest.version}`);
  return problems;
}

/**
 * Each binary URL is <repository>/releases/download/v<version>/<the script's name for it>, so
 * the release workflow's uploads are exactly what the manifest points at.
 */
export function archiveNameProblems(manifest, names, repository) {
  const problems = [];
  for (const [platform, target] of Object.entries(manifest.distribution?.binary ?? {})) {
    const expected = names[platform];
    if (!expected) {
      problems.push(`binary ${platform}: scripts/release-archives.sh builds no archive for it`);
      continue;
    }
    const url = `${repository}/releases/download/v${manifest.version}/${expected.name}`;
    if (target.archive !== url) problems.push(`binary ${platform}: ${target.archive} is not ${url}`);
    const exe = expected.target.includes("-windows-") ? "./corvid.exe" : "./corvid";
    if (target.cmd !== exe) problems.push(`binary ${platform}: cmd ${target.cmd} is not ${exe} (the archive's root)`);
  }
  return problems;
}

// The ACP Registry's CI, run on our entry (registry/corvid) before a registry PR does: the
// schema, id, semver, version, archive and icon rules, the auth check against the real binary
// ($CORVID_BIN acp, as the registry's validator spawns it), and that the manifest agrees with
// what we publish (the Cargo workspace's version, scripts/release-archives.sh's archive names).
// Each rule also runs on a broken input, so a check that cannot fail is caught here.
// Run: CORVID_BIN=.../release/corvid npm run test:registry (seconds).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  archiveNameProblems,
  archiveProblems,
  authCheck,
  authMethodType,
  cargoWorkspace,
  iconProblems,
  iconProblemsEach,
  idProblems,
  publishedVersionProblems,
  releaseArchiveNames,
  root,
  schemaProblems,
  semverProblems,
  versionProblems,
} from "./checks.mjs";
import { generateManifest, parseSums } from "../../scripts/registry-manifest.mjs";

const entryDir = join(root, "registry", "corvid");
const manifest = JSON.parse(readFileSync(join(entryDir, "agent.json"), "utf8"));
const icon = readFileSync(join(entryDir, "icon.svg"), "utf8");
const cargo = cargoWorkspace();
const npmPackage = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const copy = () => structuredClone(manifest);

describe("registry/corvid passes the registry's checks", () => {
  it("has agent.json and icon.svg, and nothing else the registry would not expect", () => {
    assert.deepEqual(readdirSync(entryDir).sort(), ["agent.json", "icon.svg"]);
  });
  it("agent.json matches agent.schema.json", () => assert.deepEqual(schemaProblems(manifest), []));
  it("id is the folder's name", () => assert.deepEqual(idProblems(manifest, "corvid"), []));
  it("version is x.y.z", () => assert.deepEqual(semverProblems(manifest.version), []));
  it("versions in URLs and packages match version, no latest", () => assert.deepEqual(versionProblems(manifest), []));
  it("archives are accepted formats with a ./cmd, and every OS has a build", () => {
    assert.deepEqual(archiveProblems(manifest), { problems: [], warnings: [] });
  });
  it("icon.svg follows the icon rules", () => assert.deepEqual(iconProblems(icon), []));
  it("version, license and repository are the Cargo workspace's (and npm's, where npx is used)", () => {
    assert.deepEqual(publishedVersionProblems(manifest, cargo, npmPackage), []);
    assert.equal(manifest.license, cargo.license);
    assert.equal(manifest.repository, cargo.repository);
  });
  it("archive URLs are the GitHub release assets scripts/release-archives.sh names", () => {
    assert.deepEqual(archiveNameProblems(manifest, releaseArchiveNames(), cargo.repository), []);
  });
  it("is what scripts/registry-manifest.mjs generates (no hand edit has drifted)", () => {
    const run = spawnSync(process.execPath, [join(root, "scripts", "registry-manifest.mjs"), "--check"], { encoding: "utf8" });
    assert.equal(run.status, 0, run.stderr);
  });
});

describe("scripts/registry-manifest.mjs", () => {
  it("puts the Cargo version and the script's names back into a drifted manifest", () => {
    const drifted = copy();
    drifted.version = "0.0.9";
    drifted.distribution.binary["linux-x86_64"].archive = "https://example.invalid/corvid.tar.gz";
    delete drifted.distribution.binary["darwin-x86_64"];
    assert.deepEqual(generateManifest(drifted), manifest);
    // And --check says so.
    const dir = mkdtempSync(join(tmpdir(), "corvid-registry-manifest-"));
    try {
      writeFileSync(join(dir, "agent.json"), JSON.stringify(drifted));
      const run = spawnSync(process.execPath, [join(root, "scripts", "registry-manifest.mjs"), "--check", "--file", join(dir, "agent.json")], { encoding: "utf8" });
      assert.equal(run.status, 1, run.stderr);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it("fills each sha256 from a release's SHA256SUMS, and refuses sums that miss an archive", () => {
    const names = releaseArchiveNames();
    const sums = Object.values(names)
      .map(({ name }, i) => `${String(i).repeat(64)}  ${name}`)
      .join("\n");
    const released = generateManifest(manifest, { sums: parseSums(sums) });
    assert.deepEqual(schemaProblems(released), []);
    Object.values(released.distribution.binary).forEach((t, i) => assert.equal(t.sha256, String(i).repeat(64)));
    assert.throws(() => generateManifest(manifest, { sums: parseSums(sums.split("\n").slice(1).join("\n")) }), /not in the checksums/);
    // A kept checksum stays only with its own archive: a new version drops it.
    assert.equal(generateManifest(released).distribution.binary["linux-x86_64"].sha256, "0".repeat(64));
    const bumped = generateManifest(released, { cargo: { ...cargo, version: "9.9.9" } });
    assert.equal(bumped.distribution.binary["linux-x86_64"].sha256, undefined);
  });
});

describe("the auth check against the real binary", () => {
  const bin = process.env.CORVID_BIN;
  it("`corvid acp` in a fresh HOME offers an agent or terminal auth method", { skip: !bin && "CORVID_BIN is not set" }, async () => {
    assert.ok(existsSync(bin), `no binary at ${bin}`);
    const { problems, response, stderr } = await authCheck(bin, manifest.distribution.binary["linux-x86_64"].args);
    assert.deepEqual(problems, [], `stderr:\n${stderr}`);
    const kinds = response.result.authMethods.map(authMethodType);
    assert.ok(kinds.includes("agent") || kinds.includes("terminal"), kinds.join(","));
  });
});

// The linux-aarch64 archive's binary (e.g. from `scripts/release-archives.sh linux-aarch64`),
// when given: the same check under qemu-user, as the registry would run it on an arm64 runner.
describe("the auth check against the linux-aarch64 binary (qemu)", () => {
  const bin = process.env.CORVID_BIN_AARCH64;
  const qemu = spawnSync("qemu-aarch64-static", ["--version"]).status === 0;
  const skip = !bin ? "CORVID_BIN_AARCH64 is not set" : !qemu && "qemu-aarch64-static is not installed";
  it("`corvid acp` in a fresh HOME offers an agent or terminal auth method", { skip }, async () => {
    assert.ok(existsSync(bin), `no binary at ${bin}`);
    const sysroot = process.env.CORVID_AARCH64_SYSROOT ?? "/usr/aarch64-linux-gnu";
    const { problems, stderr } = await authCheck("qemu-aarch64-static", ["-L", sysroot, bin, ...manifest.distribution.binary["linux-aarch64"].args]);
    assert.deepEqual(problems, [], `stderr:\n${stderr}`);
  });
});

describe("each check fails on what the registry rejects", () => {
  it("schema: a missing field, an unknown platform, an extra key, a bad sha256", () => {
    const noDescription = copy();
    delete noDescription.description;
    assert.notDeepEqual(schemaProblems(noDescription), []);
    const badPlatform = copy();
    badPlatform.distribution.binary["linux-riscv64"] = badPlatform.distribution.binary["linux-x86_64"];
    assert.notDeepEqual(schemaProblems(badPlatform), []);
    const extraKey = copy();
    extraKey.distribution.binary["linux-x86_64"].checksum = "x";
    assert.notDeepEqual(schemaProblems(extraKey), []);
    const badSha = copy();
    badSha.distribution.binary["linux-x86_64"].sha256 = "abc";
    assert.notDeepEqual(schemaProblems(badSha), []);
    const npxCmd = copy(); // `cmd` on npx is documented but not in the stored schema yet
    npxCmd.distribution.npx = { package: "corvid-acp@0.1.0", cmd: "corvid" };
    assert.notDeepEqual(schemaProblems(npxCmd), []);
    const emptyDistribution = copy();
    emptyDistribution.distribution = {};
    assert.notDeepEqual(schemaProblems(emptyDistribution), []);
  });
  it("id: another folder, or capitals", () => {
    assert.notDeepEqual(idProblems(manifest, "crow"), []);
    assert.notDeepEqual(idProblems({ ...manifest, id: "Corvid" }, "Corvid"), []);
  });
  it("semver: two parts, a suffix, a leading zero", () => {
    for (const v of ["0.1", "0.1.0-beta", "01.2.3", "v0.1.0"]) assert.notDeepEqual(semverProblems(v), [], v);
  });
  it("versions: another version in a URL, /latest/, npx @latest or another version", () => {
    const other = copy();
    other.distribution.binary["linux-x86_64"].archive = other.distribution.binary["linux-x86_64"].archive.replace(
      `/v${manifest.version}/`,
      "/v9.9.9/",
    );
    assert.notDeepEqual(versionProblems(other), []);
    const latest = copy();
    latest.distribution.binary["linux-x86_64"].archive = "https://github.com/o/r/releases/latest/download/corvid.tar.gz";
    assert.notDeepEqual(versionProblems(latest), []);
    assert.notDeepEqual(versionProblems({ ...manifest, distribution: { npx: { package: "corvid-acp@latest" } } }), []);
    assert.notDeepEqual(versionProblems({ ...manifest, distribution: { npx: { package: "corvid-acp@9.9.9" } } }), []);
    assert.deepEqual(versionProblems({ ...manifest, distribution: { npx: { package: `@corvid/acp@${manifest.version}` } } }), []);
  });
  it("archives: installer formats, an unknown extension, a cmd without ./ or with .., a missing OS", () => {
    for (const [archive, cmd] of [
      ["https://x.invalid/v0.1.0/corvid.deb", "./corvid"],
      ["https://x.invalid/v0.1.0/corvid.AppImage", "./corvid"],
      ["https://x.invalid/v0.1.0/corvid.7z", "./corvid"],
      ["https://x.invalid/v0.1.0/corvid.tar.gz", "corvid"],
      ["https://x.invalid/v0.1.0/corvid.tar.gz", "./../corvid"],
    ]) {
      const m = copy();
      m.distribution.binary["linux-x86_64"] = { archive, cmd };
      assert.notDeepEqual(archiveProblems(m).problems, [], `${archive} ${cmd}`);
    }
    const noWindows = copy();
    delete noWindows.distribution.binary["windows-x86_64"];
    assert.deepEqual(archiveProblems(noWindows), { problems: [], warnings: ["binary: no windows build"] });
  });
  it("icon: size, colours, style sheets, comments, root, no currentColor", () => {
    const ok = '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16"><path fill="currentColor" d="M0 0h16v16z"/></svg>';
    assert.deepEqual(iconProblems(ok), []);
    const bad = {
      "24x24": ok.replace('width="16" height="16"', 'width="24" height="24"'),
      "not square": ok.replace('height="16"', 'height="12"'),
      "viewBox 0 0 24 24": ok.replace("0 0 16 16", "0 0 24 24"),
      "no size": '<svg xmlns="http://www.w3.org/2000/svg"><path fill="currentColor"/></svg>',
      "a colour": ok.replace('fill="currentColor"', 'fill="currentColor" stroke="#000"'),
      "inline style": ok.replace('fill="currentColor"', 'fill="currentColor" style="stroke: red"'),
      "a style sheet": ok.replace("<path", "<style>.a { fill: blue; }</style><path"),
      "a comment": ok.replace("<path", "<!-- a crow --><path"),
      "no currentColor": ok.replace('fill="currentColor"', 'fill="none"'),
      "not svg": '<html width="16" height="16" fill="currentColor"/>',
      "not XML": "<svg width=16",
    };
    const found = iconProblemsEach(Object.values(bad));
    Object.keys(bad).forEach((what, i) => assert.notDeepEqual(found[i], [], what));
  });
  it("published versions: another Cargo version, an npx package at another version or name", () => {
    assert.notDeepEqual(publishedVersionProblems(manifest, { ...cargo, version: "9.9.9" }, npmPackage), []);
    const npx = { ...manifest, distribution: { npx: { package: `${npmPackage.name}@${manifest.version}` } } };
    assert.deepEqual(publishedVersionProblems(npx, cargo, { ...npmPackage, version: manifest.version }), []);
    assert.notDeepEqual(publishedVersionProblems(npx, cargo, { ...npmPackage, version: "9.9.9" }), []);
    assert.notDeepEqual(publishedVersionProblems(npx, cargo, { ...npmPackage, name: "other" }), []);
  });
  it("archive names: a name the script would not produce, a platform it does not build, the wrong cmd", () => {
    const names = releaseArchiveNames();
    const renamed = copy();
    renamed.distribution.binary["linux-x86_64"].archive = renamed.distribution.binary["linux-x86_64"].archive.replace(".tar.gz", ".tgz");
    assert.notDeepEqual(archiveNameProblems(renamed, names, cargo.repository), []);
    const { "windows-x86_64": _, ...withoutWindows } = names;
    assert.notDeepEqual(archiveNameProblems(manifest, withoutWindows, cargo.repository), []);
    assert.notDeepEqual(archiveNameProblems(manifest, names, "https://github.com/someone/else"), []);
    const exe = copy();
    exe.distribution.binary["windows-x86_64"].cmd = "./corvid";
    assert.notDeepEqual(archiveNameProblems(exe, names, cargo.repository), []);
  });
  it("auth check: non-JSON on stdout, a JSON-RPC error, no methods, only other types, silence, an early exit", async () => {
    // Fake agents (this Node) that answer the validator's initialize in each wrong way.
    const answer = (reply) => `process.stdin.once("data", (d) => { const id = JSON.parse(d).id; ${reply} });`;
    const fakes = {
      "non-JSON": answer(`console.log("Welcome to the agent!"); console.log(JSON.stringify({ jsonrpc: "2.0", id, result: { authMethods: [{ id: "a" }] } }));`),
      "error": answer(`console.log(JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32603, message: "boom" } }));`),
      "no methods": answer(`console.log(JSON.stringify({ jsonrpc: "2.0", id, result: { protocolVersion: 1, authMethods: [] } }));`),
      "env_var only": answer(`console.log(JSON.stringify({ jsonrpc: "2.0", id, result: { authMethods: [{ id: "k", type: "env_var" }] } }));`),
      "silence": `process.stdin.resume();`,
      "exit": `process.exit(3);`,
    };
    for (const [what, code] of Object.entries(fakes)) {
      const { problems } = await authCheck(process.execPath, ["-e", code], { timeoutMs: 3000 });
      assert.notDeepEqual(problems, [], what);
    }
    // And the same fake passes when it answers right (a method with no type counts as agent;
    // a notification before the answer is fine).
    const good = answer(
      `console.log(JSON.stringify({ jsonrpc: "2.0", method: "note" })); console.log(JSON.stringify({ jsonrpc: "2.0", id, result: { authMethods: [{ id: "a", _meta: { "terminal-auth": true } }] } }));`,
    );
    assert.deepEqual((await authCheck(process.execPath, ["-e", good], { timeoutMs: 3000 })).problems, []);
    // The environment it gets: a fresh HOME, TERM=dumb, and no other variable of ours.
    const envProbe = answer(
      `const bad = Object.keys(process.env).filter((k) => !["HOME", "TERM", "PATH", "TMPDIR"].includes(k)); const ok = process.env.TERM === "dumb" && process.env.HOME === process.cwd() && require("fs").readdirSync(process.env.HOME).length === 0 && bad.length === 0; console.log(JSON.stringify({ jsonrpc: "2.0", id, result: { authMethods: ok ? [{ id: "a" }] : [] } }));`,
    );
    process.env.CORVID_REGISTRY_TEST_SECRET = "must not pass";
    try {
      assert.deepEqual((await authCheck(process.execPath, ["-e", envProbe], { timeoutMs: 3000 })).problems, []);
    } finally {
      delete process.env.CORVID_REGISTRY_TEST_SECRET;
    }
  });
});

#!/usr/bin/env bash
# One cross-built release archive, packed and checked as the release packs it (issue 44):
# scripts/cross-check.sh calls this for the Linux arm64 and the Windows builds, the platforms
# this machine cannot run natively.
#
#   bash scripts/cross-archive-check.sh OUT TARGET BINARY [RUNNER...]
#
# 1. Packs BINARY with scripts/release-archives.sh --bin into OUT (the very packing the release
#    workflow's jobs use), then packs it again into OUT/again: both archives must be
#    byte-identical (the registry pins each archive's sha256, so a rebuilt archive must not
#    change it).
# 2. The archive's name is the one release-archives.sh --names gives TARGET; for a platform the
#    registry lists (linux-aarch64), it is also the file name agent.json's URL ends with.
# 3. SHA256SUMS names the archive with its real sha256, and scripts/registry-manifest.mjs
#    --sums turns that line into the platform's `sha256` (agent.json's own entry otherwise).
# 4. The archive holds exactly the binary at its root (the name agent.json's `cmd` runs,
#    without its `./`), LICENSE and README.md; the binary is executable (tar) and is the
#    very file that was packed.
# 5. The unpacked binary runs (`--version`, through RUNNER: qemu or wine) and prints the
#    workspace's version.
# The Windows entry the registry lists is the MSVC build (from a Windows runner); this machine
# builds x86_64-pc-windows-gnu, which release-archives.sh names and packs the same way, so the
# checks of the `.zip` and of `./corvid.exe` are the same ones.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 2; }
out=$1 target=$2 binary=$3
shift 3
runner=("$@")
fail() { printf 'cross-archive-check: %s\n' "$*" >&2; exit 1; }

rm -rf "$out" && mkdir -p "$out/again"
bash scripts/release-archives.sh --out "$out" --bin "$binary" "$target"
bash scripts/release-archives.sh --out "$out/again" --bin "$binary" "$target" >/dev/null

read -r platform _ name < <(bash scripts/release-archives.sh --names "$target")
archive="$out/$name"
[ -f "$archive" ] || fail "no $name in $out (release-archives.sh named it otherwise)"
cmp -s "$archive" "$out/again/$name" || fail "packing $name twice gave different bytes"
echo "name: $name (packed twice, identical)"

version=$(node -e 'import("./scripts/registry-manifest.mjs").then(m => console.log(m.cargoWorkspace().version))')
case $name in "corvid-$version-$target."*) ;; *) fail "$name does not carry version $version and target $target" ;; esac

sum=$(sha256sum "$archive" | awk '{print $1}')
grep -qx "$sum  $name" "$out/SHA256SUMS" || fail "SHA256SUMS lacks '$sum  $name'"
echo "sha256: $sum (SHA256SUMS agrees)"

exe=corvid
[[ $target == *-windows-* ]] && exe=corvid.exe
if [ "$platform" != - ]; then
  # The registry's entry for this platform: its URL ends with this name, its cmd runs this exe,
  # and a manifest made from these sums pins this checksum.
  node --input-type=module - "$platform" "$name" "$exe" "$sum" "$out/SHA256SUMS" <<'EOF'
import { readFileSync } from "node:fs";
import { manifestPath, parseSums } from "./scripts/registry-manifest.mjs";
const [platform, name, exe, sum, sumsFile] = process.argv.slice(2);
const entry = JSON.parse(readFileSync(manifestPath, "utf8")).distribution.binary[platform];
const fail = (why) => { console.error(`cross-archive-check: agent.json ${platform}: ${why}`); process.exit(1); };
if (!entry) fail("no entry");
if (!entry.archive.endsWith(`/${name}`)) fail(`archive ${entry.archive} is not …/${name}`);
if (entry.cmd !== `./${exe}`) fail(`cmd ${entry.cmd} is not ./${exe}`);
if (parseSums(readFileSync(sumsFile, "utf8"))[name] !== sum) fail("the sums file does not give this archive's sha256");
console.log(`agent.json ${platform}: ${entry.archive.split("/").pop()}, cmd ${entry.cmd}`);
EOF
fi

unpacked="$out/unpacked"
mkdir -p "$unpacked"
if [[ $name == *.zip ]]; then
  listing=$(python3 -c 'import sys, zipfile; print("\n".join(sorted(zipfile.ZipFile(sys.argv[1]).namelist())))' "$archive")
  python3 -m zipfile -e "$archive" "$unpacked"
  # Wine loads DLLs from the exe's folder: the runtime shims cross-check.sh set up beside its
  # own copy (CORVID_ARCHIVE_DLLS=that folder) go beside this one too.
  [ -z "${CORVID_ARCHIVE_DLLS:-}" ] || cp "$CORVID_ARCHIVE_DLLS"/*.dll "$unpacked/"
else
  listing=$(tar -tzf "$archive" | sort)
  tar -xzf "$archive" -C "$unpacked"
  [ -x "$unpacked/$exe" ] || fail "$exe is not executable in the archive"
fi
expected=$(printf '%s\n' "$exe" LICENSE README.md | sort)
[ "$listing" = "$expected" ] || fail "the archive holds [$(echo $listing)], not [$(echo $expected)]"
cmp -s "$unpacked/$exe" "$binary" || fail "the archive's $exe is not the packed binary"
echo "contents: $(echo $listing)"

# stdout only: Wine writes its own diagnostics to stderr.
printed=$("${runner[@]}" "$unpacked/$exe" --version 2>/dev/null | tr -d '\r')
[[ $printed == "corvid $version" ]] || fail "$exe --version printed '$printed', not version $version"
echo "runs: $printed"

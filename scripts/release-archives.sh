#!/usr/bin/env bash
# Release archives of the `corvid` binary, named as registry/corvid/agent.json points at them
# (the ACP Registry's `binary` distribution; README → "Use it from an editor").
#
#   bash scripts/release-archives.sh [--out DIR] [--bin PATH] TARGET...
#       builds `corvid` for each target (cargo build --release -p corvid --target TARGET) and
#       packs DIR/corvid-<version>-<target>.tar.gz (.zip for Windows): the binary at the
#       archive's root as `corvid` (`corvid.exe`), with LICENSE and README.md beside it.
#       Prints each archive's sha256 and writes DIR/SHA256SUMS. DIR defaults to dist-release.
#       --bin packs an already built binary instead of building (one target only; the release
#       workflow's jobs build once for their tests and pack that binary).
#   bash scripts/release-archives.sh --names [TARGET...]
#       prints "<registry platform> <target> <archive name>" for the given (default: all
#       known) targets without building; the registry check compares agent.json with this.
#
# TARGET is a Rust target triple or the registry's platform id (linux-x86_64, ...).
# <version> is the Cargo workspace's version, so the archive names, the `vX.Y.Z` tag and
# agent.json's `version` agree (the registry's CI rejects a URL whose version differs).
# Cross builds here: aarch64-unknown-linux-gnu with Debian's gcc-aarch64-linux-gnu, and
# x86_64-pc-windows-gnu with Debian's mingw-w64 (each installed with apt when missing), with
# rustup's target std. The registry lists the MSVC Windows build and the macOS builds, which
# come from their own runners (.github/workflows/release.yml).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

# Registry platform ids and the Rust targets the release builds for them. Windows is MSVC
# (what the release workflow builds on windows-latest); the GNU target packs the same way.
platforms=(
  "linux-x86_64 x86_64-unknown-linux-gnu"
  "linux-aarch64 aarch64-unknown-linux-gnu"
  "darwin-aarch64 aarch64-apple-darwin"
  "darwin-x86_64 x86_64-apple-darwin"
  "windows-x86_64 x86_64-pc-windows-msvc"
)

die() { printf 'release-archives: %s\n' "$*" >&2; exit 1; }

# The workspace version: `version` under [workspace.package] in Cargo.toml.
version=$(awk '
  /^\[/ { in_ws = ($0 == "[workspace.package]") }
  in_ws && /^version *=/ { gsub(/^version *= *"|".*$/, ""); print; exit }' Cargo.toml)
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "no x.y.z version under [workspace.package] in Cargo.toml (got '$version')"

# resolve <target or platform> → sets platform and target; a triple not in the table is allowed
# (packed the same way) with an empty platform.
resolve() {
  local entry p t
  for entry in "${platforms[@]}"; do
    read -r p t <<<"$entry"
    if [ "$1" = "$p" ] || [ "$1" = "$t" ]; then platform=$p target=$t; return; fi
  done
  [[ $1 == *-*-* ]] || die "unknown target or platform: $1"
  platform="" target=$1
}
is_windows() { [[ $1 == *-windows-* ]]; }
archive_name() {
  if is_windows "$1"; then echo "corvid-$version-$1.zip"; else echo "corvid-$version-$1.tar.gz"; fi
}

out="$root/dist-release" bin="" names=0 args=()
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --names) names=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) args+=("$1"); shift ;;
  esac
done

if [ $names -eq 1 ]; then
  if [ ${#args[@]} -eq 0 ]; then for entry in "${platforms[@]}"; do args+=("${entry#* }"); done; fi
  for a in "${args[@]}"; do
    resolve "$a"
    echo "${platform:--} $target $(archive_name "$target")"
  done
  exit 0
fi

[ ${#args[@]} -gt 0 ] || die "name at least one target (or --names); see --help"
[ -z "$bin" ] || [ ${#args[@]} -eq 1 ] || die "--bin packs one target's binary: name one target"
[ -f LICENSE ] && [ -f README.md ] || die "LICENSE and README.md must exist at the repository root"
mkdir -p "$out"
out=$(cd "$out" && pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/corvid/target}"

# Reproducible archives: fixed owner, order and time (the last commit's), gzip without a name.
mtime=$(git log -1 --format=%ct 2>/dev/null || echo 0)

build() { # <target>: cargo build for it, with Debian's cross gcc for Linux arm64 on another host
  local t=$1 host
  # Asked here, not above: packing a built binary (--bin) needs no Rust toolchain.
  host=$(rustc -vV | awk '/^host:/ {print $2}')
  if [ "$t" = aarch64-unknown-linux-gnu ] && [ "$host" != "$t" ]; then
    if ! command -v aarch64-linux-gnu-gcc >/dev/null; then
      # shellcheck source=scripts/apt-install.sh
      source scripts/apt-install.sh
      apt_install --no-install-recommends gcc-aarch64-linux-gnu libc6-dev-arm64-cross
    fi
    export CC_aarch64_unknown_linux_gnu="${CC_aarch64_unknown_linux_gnu:-aarch64-linux-gnu-gcc}"
    export AR_aarch64_unknown_linux_gnu="${AR_aarch64_unknown_linux_gnu:-aarch64-linux-gnu-ar}"
    export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER="${CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER:-aarch64-linux-gnu-gcc}"
  fi
  if [ "$t" = x86_64-pc-windows-gnu ] && ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
    # rustup's target links with mingw-w64's gcc (its default linker name); the exe then needs
    # no mingw runtime DLL.
    # shellcheck source=scripts/apt-install.sh
    source scripts/apt-install.sh
    apt_install --no-install-recommends gcc-mingw-w64-x86-64
  fi
  if [ "$t" != "$host" ]; then
    rustup target list --installed 2>/dev/null | grep -qx "$t" || rustup target add "$t" >&2
  fi
  cargo build --release --locked -p corvid --target "$t" >&2
}

: >"$out/SHA256SUMS.new"
[ -f "$out/SHA256SUMS" ] && grep -v -F -f <(for a in "${args[@]}"; do resolve "$a"; archive_name "$target"; done) \
  "$out/SHA256SUMS" >>"$out/SHA256SUMS.new" || true
for a in "${args[@]}"; do
  resolve "$a"
  exe=corvid
  is_windows "$target" && exe=corvid.exe
  src=$bin
  if [ -z "$src" ]; then
    build "$target"
    src="$CARGO_TARGET_DIR/$target/release/$exe"
  fi
  [ -f "$src" ] || die "no binary at $src"
  name=$(archive_name "$target")
  stage=$(mktemp -d)
  install -m 0755 "$src" "$stage/$exe"
  install -m 0644 LICENSE README.md "$stage/"
  touch -d "@$mtime" "$stage"/*
  rm -f "$out/$name"
  if is_windows "$target"; then
    (cd "$stage" && TZ=UTC zip -X -q "$out/$name" "$exe" LICENSE README.md)
  else
    tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$mtime" \
      -cf - "$exe" LICENSE README.md | gzip -n -9 >"$out/$name"
  fi
  rm -rf "$stage"
  sum=$(sha256sum "$out/$name" | awk '{print $1}')
  echo "$sum  $name" | tee -a "$out/SHA256SUMS.new"
done
sort -k2 "$out/SHA256SUMS.new" >"$out/SHA256SUMS" && rm -f "$out/SHA256SUMS.new"
echo "release-archives: version $version, archives in $out" >&2

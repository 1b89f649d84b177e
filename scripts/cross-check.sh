#!/usr/bin/env bash
# Checks Corvid for the platforms this machine cannot run natively (issue 21), with the
# toolchains of scripts/cross-toolchain.sh (run first; seconds when all is installed):
#
#   bash scripts/cross-check.sh [target...]     default: all four
#
#   aarch64-apple-darwin, x86_64-apple-darwin   type-check only (no SDK to link with):
#       check    cargo check --workspace --all-targets -Zbuild-std
#       clippy   the same under clippy-driver, -D warnings
#   x86_64-pc-windows-gnu
#       check    cargo check --workspace --tests -Zbuild-std
#       clippy   the same for --all-targets under clippy-driver, -D warnings
#       build    cargo build --release -p corvid -Zbuild-std (mingw-w64 links)
#       version  wine corvid.exe --version
#       turn     a prompt turn (scripts/smoke-turn.mjs: initialize, session/new, write_file,
#                run_command through `cmd /C`, against the fake model; the SQLite store) with
#                `corvid.exe acp` under Wine
#       archive  the release archive (.zip) packed as the release packs it, its name, checksum
#                and contents checked, the unpacked corvid.exe run under Wine
#                (scripts/cross-archive-check.sh)
#   aarch64-unknown-linux-gnu
#       clippy   cargo clippy --release --workspace --all-targets, -D warnings (arm64 std from sid)
#       build    cargo build --release --workspace (the binary and the addon, as scripts/test.sh)
#       turn     the same prompt turn with `corvid acp` under qemu-aarch64-static (sandbox off:
#                qemu-user cannot run it; see the step)
#       archive  the release archive (.tar.gz) as above, checked against agent.json's
#                linux-aarch64 entry (its URL's file name, cmd ./corvid, a sha256 from the sums)
#       addon    require() of the arm64 addon in the arm64 Node under qemu, then the same turn
#                through its NativeAgent
#       npm      the npm packages packed with that addon, installed by npm for arm64 into a
#                fresh project, the same turn through `import "corvid-acp"` in the arm64 Node
#       vsix     the linux-arm64 VSIX (extension/package.mjs), holding the arm64 addon only
#
# CORVID_CROSS_SKIP="check clippy" skips the steps so named (for every target): the later steps
# run as if they had passed (a quicker run when only the built binaries are in question).
#
# Each target builds in its own folder under ~/.cache/corvid/cross-target/ (never the main
# target folder). Prints a table (target, step, result, seconds); exits non-zero when a step
# failed. A step after a failed one of the same target is skipped. Each step's full output is in
# ~/.cache/corvid/cross-target/logs/<target>.<step>.log; a failed compile step prints its
# error list (file:line and message).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/corvid"
target_root="${CORVID_CROSS_TARGET_DIR:-$cache_root/cross-target}"
logs="$target_root/logs"
mkdir -p "$logs"

all_targets=(aarch64-apple-darwin x86_64-apple-darwin x86_64-pc-windows-gnu aarch64-unknown-linux-gnu)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  case " ${all_targets[*]} " in *" $t "*) ;; *) echo "cross-check: unknown target $t (one of: ${all_targets[*]})" >&2; exit 2 ;; esac
done

echo "== toolchains (scripts/cross-toolchain.sh)"
bash scripts/cross-toolchain.sh || { echo "cross-check: the toolchain install failed" >&2; exit 1; }
# shellcheck source=/dev/null
source "${CORVID_CROSS_CACHE:-$cache_root/cross}/env"
export CARGO_TERM_COLOR=never
# The machine is shared (and CI runs other work beside this): everything below runs niced.
renice -n 10 $$ >/dev/null 2>&1 || true

# CPU seconds (user + system) of all finished children so far: a step's CPU time is the
# difference, which says more than wall time on a machine shared with other work.
child_cpu() { # sets cpu_now; `times` runs in this shell (in $(...) it would see no children)
  times >"$logs/.times"
  cpu_now=$(awk 'NR == 2 {
    n = split($0, t, " "); s = 0
    for (i = 1; i <= n; i++) { split(t[i], p, "m"); sub("s", "", p[2]); s += p[1] * 60 + p[2] }
    printf "%d", s }' "$logs/.times")
}
rows=()
failed=0
target_failed=0
# step <target> <name> <command...>: runs it niced, output to its log; records the row.
step() {
  local target=$1 name=$2 log="$logs/$1.$2.log" start=$SECONDS cpu0 status
  shift 2
  if [ $target_failed -eq 1 ]; then
    rows+=("$target|$name|skipped|0|0")
    return 1
  fi
  case " ${CORVID_CROSS_SKIP:-} " in *" $name "*)
    rows+=("$target|$name|not run|0|0")
    return 0 ;;
  esac
  printf '\n== %s: %s\n' "$target" "$name"
  echo "\$ $*" >"$log"
  child_cpu
  cpu0=$cpu_now
  "$@" >>"$log" 2>&1
  status=$?
  child_cpu
  local cpu=$((cpu_now - cpu0))
  if [ $status -eq 0 ]; then
    rows+=("$target|$name|ok|$((SECONDS - start))|$cpu")
    tail -n 3 "$log"
  else
    rows+=("$target|$name|FAILED ($status)|$((SECONDS - start))|$cpu")
    failed=1 target_failed=1
    echo "-- $target: $name failed (exit $status); full output: $log"
    report_errors "$log"
  fi
  return $status
}
# The compile errors and warnings of a log as `file:line:col: message`, then their count; for
# other failures the log's last lines.
report_errors() {
  local summary
  summary=$(awk '
    /^(error|warning)(\[[A-Z0-9]+\])?: / { msg = $0; next }
    /^ *--> / && msg != "" { sub(/^ *--> /, ""); print $0 ": " msg; msg = ""; next }
  ' "$1" | sort -u)
  if [ -n "$summary" ]; then
    echo "$summary"
    echo "($(grep -c ': error' <<<"$summary") distinct errors, $(grep -c ': warning' <<<"$summary") warnings with a location)"
    grep -E '^error: could not compile' "$1" | sort -u
  else
    tail -n 25 "$1"
  fi
}

cargo_for() { # <target> <cargo args...>: cargo with this target's folder and flags
  local target=$1
  shift
  local build_std=() extra_env=()
  case $target in *-apple-darwin | *-windows-gnu) build_std=(-Zbuild-std=std,panic_abort) ;; esac
  # macOS: no SDK. The stub compiler/archiver are in the env file (CC_<target>, AR_<target>);
  # here the stub SDK folder and xcrun (only xcrun on PATH: the host's cc stays the real one).
  case $target in *-apple-darwin)
    extra_env=(SDKROOT="$CORVID_CROSS_MACOS_SDKROOT" MACOSX_DEPLOYMENT_TARGET=11.0
      PATH="$CORVID_CROSS_MACOS_STUBS/bin:$PATH") ;;
  esac
  env CARGO_TARGET_DIR="$target_root/$target" "${extra_env[@]}" \
    cargo "$@" --locked --target "$target" "${build_std[@]}"
}
clippy_for() { # <target> <cargo check args...>: clippy-driver as cargo clippy runs it, -D warnings
  local target=$1
  shift
  RUSTC_WORKSPACE_WRAPPER="$CORVID_CROSS_CLIPPY_DRIVER" CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__" \
    cargo_for "$target" check --keep-going "$@"
}

for target in "${targets[@]}"; do
  target_failed=0
  out="$target_root/$target"
  case $target in
    *-apple-darwin)
      step "$target" check cargo_for "$target" check --keep-going --workspace --all-targets
      target_failed=0 # clippy reports the same errors and more: run it regardless
      step "$target" clippy clippy_for "$target" --workspace --all-targets
      ;;
    x86_64-pc-windows-gnu)
      step "$target" check cargo_for "$target" check --keep-going --workspace --tests
      target_failed=0
      step "$target" clippy clippy_for "$target" --workspace --all-targets
      target_failed=0
      step "$target" build cargo_for "$target" build --release -p corvid
      # Wine: its own prefix in the cache, the exe in a test folder with the ProcessPrng shim
      # (Wine 8 has no bcryptprimitives.dll) and any mingw runtime DLL the exe imports.
      export WINEPREFIX="$target_root/wine-prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
      run="$out/wine-run"
      step "$target" wine-setup bash -c '
        set -e
        mkdir -p "$1"
        cp "$2/release/corvid.exe" "$1/corvid.exe"
        x86_64-w64-mingw32-gcc-posix -O2 -shared -o "$1/bcryptprimitives.dll" scripts/cross-wine-bcryptprimitives.c -ladvapi32
        for dll in $(x86_64-w64-mingw32-objdump -p "$1/corvid.exe" | awk "/DLL Name:/ {print \$3}"); do
          found=$(find /usr/lib/gcc/x86_64-w64-mingw32 /usr/x86_64-w64-mingw32/lib -name "$dll" 2>/dev/null | grep -v win32 | head -1)
          [ -n "$found" ] && cp "$found" "$1/" && echo "runtime DLL: $found"
        done
        wineboot -i >/dev/null 2>&1 || true
        echo "imports: $(x86_64-w64-mingw32-objdump -p "$1/corvid.exe" | awk "/DLL Name:/ {print \$3}" | tr "\n" " ")"
      ' _ "$run" "$out/x86_64-pc-windows-gnu"
      step "$target" version timeout 300 wine "$run/corvid.exe" --version
      step "$target" turn node scripts/smoke-turn.mjs --wine --exec wine "$run/corvid.exe" acp
      target_failed=0
      step "$target" archive env CORVID_ARCHIVE_DLLS="$run" bash scripts/cross-archive-check.sh \
        "$out/archives" "$target" "$run/corvid.exe" timeout 300 wine
      ;;
    aarch64-unknown-linux-gnu)
      qemu=(qemu-aarch64-static -L "$CORVID_CROSS_ARM64_SYSROOT")
      step "$target" clippy clippy_for "$target" --release --workspace --all-targets
      target_failed=0
      step "$target" build cargo_for "$target" build --release --workspace
      bin="$out/$target/release"
      step "$target" version "${qemu[@]}" "$bin/corvid" --version
      # The sandbox is off for this turn: qemu-user cannot run it (the launcher re-executes the
      # arm64 binary, which needs binfmt_misc, and then PR_SET_CHILD_SUBREAPER fails with EINVAL
      # under qemu). The release workflow runs the sandboxed turn on a real arm64 runner.
      step "$target" turn env CORVID_SANDBOX=off node scripts/smoke-turn.mjs --exec "${qemu[@]}" "$bin/corvid" acp
      target_failed=0
      step "$target" archive bash scripts/cross-archive-check.sh "$out/archives" "$target" "$bin/corvid" "${qemu[@]}"
      target_failed=0
      # napi-rs's file name for this platform (as scripts/build-addon.mjs names it).
      step "$target" addon bash -c 'cp "$1/libcorvid_node.so" "$1/corvid.linux-arm64-gnu.node" &&
        exec "${@:2}"' _ "$bin" "${qemu[@]}" "$CORVID_CROSS_NODE_ARM64" scripts/smoke-turn.mjs \
        --addon "$bin/corvid.linux-arm64-gnu.node"
      target_failed=0
      # The npm packages as published (scripts/npm-packages.mjs): installed by npm for arm64
      # into a fresh project here, loaded by the arm64 Node under qemu, which runs the turn.
      npm_out="$out/npm"
      # Sandbox off, as for the binary's turn above (the addon's launcher is the arm64 Node).
      step "$target" npm env CORVID_SANDBOX=off bash -c 'rm -rf "$1" &&
        node scripts/npm-packages.mjs pack --out "$1" --addon "linux-arm64-gnu=$2" &&
        node scripts/npm-packages.mjs try --out "$1" --platform linux-arm64-gnu --node "${@:3}"' \
        _ "$npm_out" "$bin/corvid.linux-arm64-gnu.node" "${qemu[@]}" "$CORVID_CROSS_NODE_ARM64"
      target_failed=0
      # The VSIX for linux-arm64 (extension/package.mjs): the bundle with the arm64 addon only.
      step "$target" vsix bash -c 'cd extension && { [ -d node_modules ] || npm ci --no-audit --no-fund; } &&
        node package.mjs --target linux-arm64 --addon "$1" &&
        listing=$(python3 -m zipfile -l dist-vsix/corvid-vscode-linux-arm64.vsix) &&
        grep "\.node" <<<"$listing" && grep -q "extension/dist/corvid\.linux-arm64-gnu\.node" <<<"$listing" &&
        ! grep -q "linux-x64" <<<"$listing"' _ "$bin/corvid.linux-arm64-gnu.node"
      ;;
  esac
done

printf '\n== cross-check results\n%-26s %-11s %-13s %8s %8s\n' target step result seconds cpu-s
for row in "${rows[@]}"; do
  IFS='|' read -r t s r d c <<<"$row"
  printf '%-26s %-11s %-13s %8s %8s\n' "$t" "$s" "$r" "$d" "$c"
done
[ $failed -eq 0 ] || echo "cross-check: FAILED (logs in $logs)"
exit $failed

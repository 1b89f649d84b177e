#!/usr/bin/env bash
# Runs the fuzz targets in fuzz/ (cargo-fuzz, libFuzzer) for a while each, seeded with their
# committed corpora; any crash, panic or broken property fails the script.
#
#   bash scripts/fuzz.sh [seconds per target, default 20] [target ...]
#
# scripts/test.sh runs every target briefly so regressions show; README → Fuzzing explains
# longer runs. Works on stable Rust (no sanitizer; the targets are safe Rust, so libFuzzer's
# coverage guidance and the targets' own assertions do the finding). cargo-fuzz and the
# instrumented build live under ~/.cache/corvid, outside the checkout, so warm runs are quick.
# New inputs found go to a temporary folder, never into the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

secs="${1:-20}"
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(frames envelope params prompt jail)

cache="${XDG_CACHE_HOME:-$HOME/.cache}/corvid"
export PATH="$cache/cargo-fuzz/bin:$PATH"
if ! command -v cargo-fuzz >/dev/null; then
  cargo install --locked --root "$cache/cargo-fuzz" cargo-fuzz
fi
sanitizer="${FUZZ_SANITIZER:-none}"
target_dir="$cache/fuzz-target"
cargo=(cargo)
if [ "$sanitizer" != none ]; then
  # Sanitizers need nightly; their builds get their own folder so neither rebuilds the other.
  cargo=(cargo +nightly)
  target_dir="$cache/fuzz-target-$sanitizer"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The fs targets build their temp trees under TMPDIR: keep them inside $work.
export TMPDIR="$work"

dict() {
  case "$1" in
    jail) echo "$root/fuzz/dicts/paths.dict" ;;
    *) echo "$root/fuzz/dicts/json.dict" ;;
  esac
}

# One build of every target (`cargo fuzz run` below then finds them up to date).
"${cargo[@]}" fuzz build --sanitizer "$sanitizer" --target-dir "$target_dir"
for t in "${targets[@]}"; do
  mkdir -p "$work/new/$t" "$work/artifacts/$t"
  echo "fuzz $t for ${secs}s"
  # First corpus folder: where libFuzzer writes new inputs; the committed one is read-only input.
  "${cargo[@]}" fuzz run --sanitizer "$sanitizer" --target-dir "$target_dir" "$t" \
    "$work/new/$t" "fuzz/corpus/$t" -- \
    -max_total_time="$secs" -dict="$(dict "$t")" -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/$t/" 2>"$work/$t.log" || {
    tail -n 60 "$work/$t.log"
    mkdir -p fuzz/artifacts/"$t" && cp "$work/artifacts/$t"/* fuzz/artifacts/"$t"/ 2>/dev/null || true
    echo "fuzz target $t failed; crashing input copied to fuzz/artifacts/$t/ (reproduce: cargo fuzz run $t <file>)"
    exit 1
  }
  grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|#[0-9]+ +DONE)' "$work/$t.log" || true
done

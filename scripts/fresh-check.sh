#!/usr/bin/env bash
# Runs CI as a fresh machine would, before you stop: clones HEAD into a temporary folder and
# runs `.ci/run` there with HOME, XDG_CACHE_HOME, CARGO_TARGET_DIR and npm's cache pointed at
# empty temporary folders, so nothing built or installed by earlier runs (the release build,
# cargo-fuzz, code-server, node_modules) can hide a step that fails without it. Prints the time
# of each step and the total, and exits with the run's status.
#
#   bash scripts/fresh-check.sh            # HEAD, as committed (uncommitted changes are not in it)
#   FRESH_KEEP=1 bash scripts/fresh-check.sh   # keep the temporary folder for a look afterwards
#
# Shared on purpose, to save downloads only: Cargo's registry and git caches (CARGO_HOME,
# ~/.cargo by default: crate sources, not build output) and the rustup toolchain. Everything
# that is compiled or installed is done again. Debian packages that CI installs (chromium,
# postgresql, …) stay installed system-wide once a run has installed them; `apt-get` is only
# skipped when they are there.
# The log of the whole run is kept at $FRESH_LOG (default: a file in the temporary folder's
# parent, printed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

base=$(mktemp -d "${TMPDIR:-/tmp}/corvid-fresh.XXXXXX")
log="${FRESH_LOG:-$base.log}"
cleanup() {
  if [ "${FRESH_KEEP:-}" = 1 ]; then
    echo "kept $base"
  else
    rm -rf "$base"
  fi
}
trap cleanup EXIT

git clone --quiet --no-hardlinks "$repo" "$base/corvid"
git -C "$base/corvid" log -1 --format='fresh check of %h %s'
mkdir -p "$base/home" "$base/cache" "$base/target" "$base/npm-cache"

export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
# The reference copy of the schemas sits beside the checkout; the clone's `..` is $base, so
# point at it (a machine without it falls back to the pinned SDK's copy, see scripts/test.sh).
if [ -z "${ACP_SCHEMA:-}" ] && [ -f "$repo/../shared/acp-schema/npm-sdk-2.4.0/v1/schema.json" ]; then
  export ACP_SCHEMA="$repo/../shared/acp-schema/npm-sdk-2.4.0/v1/schema.json"
fi

start=$SECONDS
set +e
(
  cd "$base/corvid"
  export HOME="$base/home" XDG_CACHE_HOME="$base/cache" CARGO_TARGET_DIR="$base/target"
  export npm_config_cache="$base/npm-cache" CI=true
  unset CORVID_BIN CORVID_CODE_SERVER_DIR
  bash .ci/run
) 2>&1 | while IFS= read -r line; do
  # Stamp the step headers (scripts/test.sh and scripts/vscode-e2e.sh print `== name`) with
  # the wall time since the start, then keep every line in the log.
  case "$line" in
    "== step times"*) ;;
    "== "*) printf '[%5ss] %s\n' "$((SECONDS - start))" "$line" | tee -a "$log.steps" ;;
  esac
  printf '%s\n' "$line" >>"$log"
done
status=${PIPESTATUS[0]}
set -e
total=$((SECONDS - start))

echo
echo "== step times (wall clock, from the start of the run)"
# Each header's stamp minus the previous one is the previous step's duration.
awk -v total="$total" '
  { stamp = $0; sub(/^\[ */, "", stamp); sub(/s\].*$/, "", stamp); stamp += 0
    sub(/^\[ *[0-9]+s\] == /, ""); sub(/ \([0-9]+s\)$/, "")
    if (n) printf "%6d s  %s\n", stamp - prev, name
    prev = stamp; name = $0; n++ }
  END { if (n) printf "%6d s  %s\n", total - prev, name }
' "$log.steps"
rm -f "$log.steps"
printf '\nfresh check: exit %s after %dm%02ds (log: %s)\n' "$status" $((total / 60)) $((total % 60)) "$log"
if [ "$status" -ne 0 ]; then
  tail -n 40 "$log"
fi
exit "$status"

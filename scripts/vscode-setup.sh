#!/usr/bin/env bash
# Installs what the VS Code end-to-end test needs, idempotently, cached outside the checkout:
# Debian's chromium + ripgrep, and code-server 4.100.3 (VS Code 1.100.3) from npm.
# Recipe: /work/shared/vscode-e2e/README.md (offline: no VS Code download).
# Prints the code-server directory on its last line.
set -euo pipefail
CS="${CORVID_CODE_SERVER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/code-server-4.100.3}"
need=()
command -v chromium >/dev/null || need+=(chromium)
command -v rg >/dev/null || need+=(ripgrep)
[ -e /usr/include/krb5.h ] || [ -e /usr/include/gssapi/gssapi.h ] || need+=(libkrb5-dev)
if [ ${#need[@]} -gt 0 ]; then
  # shellcheck source=scripts/apt-install.sh
  source "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"
  apt_install "${need[@]}"
fi
if [ ! -f "$CS/out/node/entry.js" ] || [ ! -f "$CS/.corvid-installed" ]; then
  # As root, code-server's postinstall refuses to run unless npm says unsafe-perm (CI runs as
  # root; npm 7+ no longer knows the option, so it reaches the script only as
  # npm_config_unsafe_perm, which both spellings below set). Harmless for a normal user.
  # @vscode/ripgrep's postinstall downloads rg from GitHub; seed its cache with Debian's rg.
  RGC="${TMPDIR:-/tmp}/vscode-ripgrep-cache-1.15.11"
  mkdir -p "$RGC"
  if [ ! -f "$RGC/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" ]; then
    d=$(mktemp -d); cp "$(command -v rg)" "$d/rg"
    tar czf "$RGC/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$d" rg; rm -rf "$d"
  fi
  parent=$(dirname "$CS"); mkdir -p "$parent"
  tmp=$(mktemp -d "$parent/.code-server-XXXX")
  (cd "$tmp" && npm pack --silent code-server@4.100.3 >&2 && tar xzf code-server-4.100.3.tgz \
    && cd package && npm_config_nodedir=/usr npm_config_yes=true npm_config_unsafe_perm=true \
      npm install --omit=dev --no-audit --no-fund --unsafe-perm >&2)
  rm -rf "$CS"; mv "$tmp/package" "$CS"; rm -rf "$tmp"
  touch "$CS/.corvid-installed"
fi
echo "$CS"

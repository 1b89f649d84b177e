# A throwaway PostgreSQL cluster for the fleet-store tests, from Debian's packages.
#
# Source this file, then call `pg_cluster_start`: it installs postgresql if missing, creates a
# private cluster in a temporary directory (loopback only, on a free port, its socket in the
# same directory), creates the database `corvid_test`, exports CORVID_TEST_PG_URL and stops and
# removes the cluster when the calling shell exits. Durability is switched off: the data is
# thrown away, and the tests measure behaviour, not disk speed.
#
# Locally: `source scripts/pg-cluster.sh && pg_cluster_start`, then run the tests from the same
# shell.

pg_cluster_start() {
  local run_as=()
  if ! ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1; then
    # shellcheck source=scripts/apt-install.sh
    source "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"
    apt_install postgresql >/dev/null
  fi
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  PG_CLUSTER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/corvid-pg.XXXXXX")
  # The server refuses to run as root: as root (CI), the cluster belongs to `postgres`.
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres "$PG_CLUSTER_DIR"
    run_as=(runuser -u postgres --)
  fi
  PG_CLUSTER_PG_CTL=("${run_as[@]}" "$bin/pg_ctl")
  local port
  port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
  "${run_as[@]}" "$bin/initdb" -D "$PG_CLUSTER_DIR/data" -U corvid -A trust --no-sync -E UTF8 >"$PG_CLUSTER_DIR/initdb.log" 2>&1 \
    || { cat "$PG_CLUSTER_DIR/initdb.log"; return 1; }
  trap pg_cluster_stop EXIT
  "${PG_CLUSTER_PG_CTL[@]}" start -w -s -D "$PG_CLUSTER_DIR/data" -l "$PG_CLUSTER_DIR/server.log" \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $PG_CLUSTER_DIR -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
    || { cat "$PG_CLUSTER_DIR/server.log"; return 1; }
  "$bin/createdb" -h 127.0.0.1 -p "$port" -U corvid corvid_test
  export CORVID_TEST_PG_URL="postgres://corvid@127.0.0.1:$port/corvid_test"
  echo "PostgreSQL $(basename "$(dirname "$bin")") at $CORVID_TEST_PG_URL"
}

pg_cluster_stop() {
  if [ -n "${PG_CLUSTER_DIR:-}" ] && [ -d "$PG_CLUSTER_DIR" ]; then
    "${PG_CLUSTER_PG_CTL[@]}" stop -s -m immediate -D "$PG_CLUSTER_DIR/data" >/dev/null 2>&1 || true
    rm -rf "$PG_CLUSTER_DIR"
  fi
}

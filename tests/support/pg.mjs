// The PostgreSQL test cluster (scripts/pg-cluster.sh exports CORVID_TEST_PG_URL): a fresh
// database per test, and whether tests that need it run (locally they are skipped without it;
// in CI, where CI is set, a missing URL fails them).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";

export const PG = process.env.CORVID_TEST_PG_URL;
export const skipWithoutPg = !PG && !process.env.CI ? "CORVID_TEST_PG_URL is not set (source scripts/pg-cluster.sh; pg_cluster_start)" : false;

/** A new database on the test cluster, named `prefix_…`; its URL, with `password` in it if given. */
export function freshDatabase(prefix, { password } = {}) {
  assert.ok(PG, "CI runs the PostgreSQL tests: CORVID_TEST_PG_URL must be set (scripts/test.sh starts PostgreSQL)");
  const name = `${prefix}_${Math.random().toString(36).slice(2, 10)}`;
  execFileSync("psql", [PG, "-q", "-c", `CREATE DATABASE ${name}`], { stdio: ["ignore", "ignore", "pipe"] });
  const url = new URL(PG);
  url.pathname = "/" + name;
  if (password) url.password = password;
  return url.toString();
}

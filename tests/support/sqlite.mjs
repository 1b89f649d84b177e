// Python's sqlite3 as a second, independent reader of a store file: tests check what Corvid
// wrote without going through Corvid.
import { execFileSync } from "node:child_process";

/** The rows `query` returns from the SQLite file `db`, as JSON arrays. */
export function sqlRows(db, query) {
  const py = "import sqlite3,sys,json; c=sqlite3.connect(sys.argv[1]); print(json.dumps(c.execute(sys.argv[2]).fetchall()))";
  return JSON.parse(execFileSync("python3", ["-c", py, db, query], { encoding: "utf8" }));
}

import { test } from "node:test";
import assert from "node:assert/strict";
import { Checkpoints } from "../../src/checkpoints";
import { memFs } from "./memFs";

/** The in-memory editor, and what the host does for fs/write_text_file: record, then write. */
function editorFs(initial: Record<string, string>) {
  const { files, ops } = memFs(initial);
  const agentWrite = async (c: Checkpoints, p: string, t: string) => {
    await c.beforeWrite(p, ops.read);
    await ops.write(p, t);
    c.afterWrite(p, t);
  };
  return { files, ops, agentWrite };
}

test("undo restores a modified file and removes a created one", async () => {
  const { files, ops, agentWrite } = editorFs({ "/w/a.py": "old\n", "/w/keep.txt": "untouched\n" });
  const c = new Checkpoints();
  c.begin(1);
  await agentWrite(c, "/w/a.py", "new\n");
  await agentWrite(c, "/w/sub/b.py", "created\n");
  c.end();
  assert.equal(files.get("/w/a.py"), "new\n");
  assert.ok(c.canUndo(1));
  assert.deepEqual(c.files(1), ["/w/a.py", "/w/sub/b.py"]);
  const r = await c.undo(1, ops);
  assert.deepEqual(r, { restored: ["/w/a.py"], removed: ["/w/sub/b.py"], conflicts: [] });
  assert.deepEqual(Object.fromEntries(files), { "/w/a.py": "old\n", "/w/keep.txt": "untouched\n" });
  // Used up: nothing more to undo.
  assert.ok(!c.canUndo(1));
  assert.deepEqual(await c.undo(1, ops), { restored: [], removed: [], conflicts: [] });
});

test("two writes to one file in a turn: undo restores the state before the first", async () => {
  const { files, ops, agentWrite } = editorFs({ "/w/a.py": "v0\n" });
  const c = new Checkpoints();
  c.begin(1);
  await agentWrite(c, "/w/a.py", "v1\n");
  await agentWrite(c, "/w/a.py", "v2\n");
  // A file created and then edited in the same turn is still a created file.
  await agentWrite(c, "/w/n.py", "n1\n");
  await agentWrite(c, "/w/n.py", "n2\n");
  c.end();
  await c.undo(1, ops);
  assert.deepEqual(Object.fromEntries(files), { "/w/a.py": "v0\n" });
});

test("a turn with no writes offers no undo; turns are separate", async () => {
  const { files, ops, agentWrite } = editorFs({ "/w/a.py": "v0\n" });
  const c = new Checkpoints();
  c.begin(1);
  c.end();
  assert.ok(!c.canUndo(1));
  assert.deepEqual(c.files(1), []);
  c.begin(2);
  await agentWrite(c, "/w/a.py", "v1\n");
  c.end();
  c.begin(3);
  await agentWrite(c, "/w/a.py", "v2\n");
  c.end();
  // Undoing turn 3 goes back to what turn 2 left, not to before turn 2.
  await c.undo(3, ops);
  assert.equal(files.get("/w/a.py"), "v1\n");
  assert.ok(c.canUndo(2));
  assert.ok(!c.canUndo(3));
});

test("a write outside a turn is not recorded; a failed undo can be tried again", async () => {
  const { files, ops, agentWrite } = editorFs({ "/w/a.py": "v0\n" });
  const c = new Checkpoints();
  await agentWrite(c, "/w/a.py", "outside\n");
  assert.ok(!c.canUndo(0));
  c.begin(1);
  await agentWrite(c, "/w/a.py", "v1\n");
  c.end();
  await assert.rejects(c.undo(1, { ...ops, write: async () => Promise.reject(new Error("read-only")) }), /read-only/);
  assert.ok(c.canUndo(1));
  await c.undo(1, ops);
  assert.equal(files.get("/w/a.py"), "outside\n");
});

test("undo leaves a file the user changed after the agent (a conflict) and still undoes a later turn's write", async () => {
  const { files, ops, agentWrite } = editorFs({ "/w/a.py": "v0\n", "/w/b.py": "b0\n" });
  const c = new Checkpoints();
  c.begin(1);
  await agentWrite(c, "/w/a.py", "v1\n");
  await agentWrite(c, "/w/b.py", "b1\n");
  c.end();
  c.begin(2);
  await agentWrite(c, "/w/b.py", "b2\n");
  c.end();
  await ops.write("/w/a.py", "v1 and the user's line\n");
  const r = await c.undo(1, ops);
  assert.deepEqual(r, { restored: ["/w/b.py"], removed: [], conflicts: ["/w/a.py"] });
  assert.equal(files.get("/w/a.py"), "v1 and the user's line\n", "the user's edit is never overwritten");
  assert.equal(files.get("/w/b.py"), "b0\n", "turn 2's write to b.py is the agent's: undone with turn 1");
});

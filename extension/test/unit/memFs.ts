// An in-memory file system standing in for the editor, for the tests of checkpoints and rewind.
import type { FileOps } from "../../src/checkpoints";

export function memFs(initial: Record<string, string>) {
  const files = new Map(Object.entries(initial));
  const ops: FileOps = {
    read: async (p) => files.get(p) ?? null,
    write: async (p, t) => void files.set(p, t),
    remove: async (p) => void files.delete(p),
  };
  return { files, ops };
}

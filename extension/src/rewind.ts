// Rewind to an earlier prompt: the agent forks the session before that prompt (Corvid's
// `session/fork` with `_meta.corvid.beforeMessage`) and names each file its edits changed
// since, as it was then (`before`, null: it did not exist) and as the agent left it (`after`).
// Here each goes back with a three-way check: a file still as the agent left it is set back, one
// already as it was is left, and one changed since (by the user, a command) is a conflict,
// never overwritten. No `vscode` import: the host passes the file operations in.
import type { FileOps } from "./checkpoints";

export interface RewoundFile {
  path: string;
  before: string | null;
  after: string;
}

export interface RewindOutcome {
  restored: string[];
  removed: string[];
  /** Changed since the agent's edit: left as they are. */
  conflicts: string[];
}

/** The files of a fork's answer (`_meta.corvid.rewind.files`); null when the agent sent none (it did not rewind). */
export function rewoundFiles(meta: unknown): RewoundFile[] | null {
  const files = (meta as any)?.corvid?.rewind?.files;
  if (!Array.isArray(files)) return null;
  return files.filter(
    (f): f is RewoundFile => typeof f?.path === "string" && typeof f.after === "string" && (f.before === null || typeof f.before === "string"),
  );
}

/** Sets each file back where it is still as the agent left it (see the top of this file). */
export async function restoreFiles(files: RewoundFile[], ops: FileOps): Promise<RewindOutcome> {
  const outcome: RewindOutcome = { restored: [], removed: [], conflicts: [] };
  for (const f of files) {
    const now = await ops.read(f.path);
    if (now === f.before) continue;
    if (now !== f.after) {
      outcome.conflicts.push(f.path);
      continue;
    }
    if (f.before === null) {
      await ops.remove(f.path);
      outcome.removed.push(f.path);
    } else {
      await ops.write(f.path, f.before);
      outcome.restored.push(f.path);
    }
  }
  return outcome;
}

/** What the chat says after a rewind; `rel` shortens a path. */
export function rewindSummary(outcome: RewindOutcome, rel: (path: string) => string): string {
  const names = (paths: string[]) => paths.map(rel).join(", ");
  const parts: string[] = [];
  if (outcome.restored.length) parts.push(`set back ${names(outcome.restored)}`);
  if (outcome.removed.length) parts.push(`removed ${names(outcome.removed)}`);
  const done = parts.length ? `Rewound: ${parts.join("; ")}.` : "Rewound: no file needed setting back.";
  if (!outcome.conflicts.length) return done;
  const them = outcome.conflicts.length === 1 ? "it was" : "they were";
  return `${done} Conflict: ${names(outcome.conflicts)} changed after Corvid's edit, so ${them} left as ${outcome.conflicts.length === 1 ? "it is" : "they are"}.`;
}

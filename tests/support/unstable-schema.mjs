// Imported first by suites whose frames use types only the unstable schema has (the subagent
// updates: `subagent_update`, `session_message`, `session_message_chunk`; the stable
// `schema.json` of npm-sdk-2.4.0 has none of their `$defs`). It points ACP_SCHEMA at
// `schema.unstable.json` beside the stable file the run names (or the reference copy), before
// `schema.mjs` reads it.
//
// One gap is filled: that unstable schema still lacks the `session` tool-call content
// (`SessionReference`, "a display-only reference to another session, such as a subagent"),
// which the pinned schema crate (agent-client-protocol-schema 1.20.0, `v1/tool_call.rs`)
// defines and the subagent protocol uses to point a tool call at its child. The variant is
// added here exactly as the crate spells it (`type: "session"`, `sessionId` required, optional
// `_meta`), to a temporary copy; nothing else is changed, and `ADDED_DEFS` names what was added.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const stable = process.env.ACP_SCHEMA ?? join(here, "..", "..", "..", "shared", "acp-schema", "npm-sdk-2.4.0", "v1", "schema.json");
const unstable = basename(stable) === "schema.unstable.json" ? stable : join(dirname(stable), "schema.unstable.json");
if (!existsSync(unstable)) throw new Error(`no unstable ACP schema at ${unstable} (set ACP_SCHEMA to the stable schema.json beside it)`);

const schema = JSON.parse(readFileSync(unstable, "utf8"));
export const ADDED_DEFS = [];
if (!schema.$defs.SessionReference) {
  schema.$defs.SessionReference = {
    description: "A display-only reference to another session (added from agent-client-protocol-schema 1.20.0).",
    type: "object",
    properties: {
      sessionId: { allOf: [{ $ref: "#/$defs/SessionId" }] },
      _meta: { type: ["object", "null"], additionalProperties: true },
    },
    required: ["sessionId"],
  };
  schema.$defs.ToolCallContent.oneOf.push({
    type: "object",
    properties: { type: { type: "string", const: "session" } },
    required: ["type"],
    allOf: [{ $ref: "#/$defs/SessionReference" }],
  });
  ADDED_DEFS.push("SessionReference");
}
export const unstableSchemaSource = unstable;
const patched = join(mkdtempSync(join(tmpdir(), "corvid-schema-")), "schema.unstable.json");
writeFileSync(patched, JSON.stringify(schema));
process.env.ACP_SCHEMA = patched;

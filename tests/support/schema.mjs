// Validates every frame the agent emits against the specific `$defs` type of its method in
// the official ACP schema (the root schema accepts anything; see shared/acp-schema/README.md).
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";

const here = dirname(fileURLToPath(import.meta.url));
// ACP_SCHEMA, else the reference copy next to the checkout, else the identical file shipped in
// the pinned official SDK (node_modules).
const shared = join(here, "..", "..", "..", "shared", "acp-schema", "npm-sdk-2.4.0", "v1", "schema.json");
export const schemaPath =
  process.env.ACP_SCHEMA ??
  (existsSync(shared) ? shared : join(here, "..", "..", "node_modules", "@agentclientprotocol", "sdk", "schema", "v1", "schema.json"));

/**
 * The unstable schema beside it (`schema.unstable.json`): v1 plus the `unstable_*` features
 * (session fork, archive, status, title, plan operations, subagents, turn usage). Frames of
 * tests that use those are validated against it.
 */
export const unstableSchemaPath = join(dirname(schemaPath), "schema.unstable.json");

/**
 * The `$defs` added to the unstable schema before it is used. npm-sdk-2.4.0's file lacks the
 * `session` tool-call content (`SessionReference`, "a display-only reference to another
 * session, such as a subagent"), which the pinned schema crate (agent-client-protocol-schema
 * 1.20.0, `v1/tool_call.rs`) defines and the subagent protocol uses to point a tool call at
 * its child. It is added exactly as the crate spells it (`type: "session"`, `sessionId`
 * required, optional `_meta`); nothing else is changed.
 */
export const ADDED_DEFS = [];
function fillGaps(schema) {
  if (schema.$defs.SessionReference || !schema.$defs.ToolCallContent?.oneOf) return;
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

/**
 * A frame validator for one schema file: `check(def, value)` and `validateAgentFrame`.
 * `gaps`: add [`ADDED_DEFS`] (the unstable schema).
 */
export function validatorOf(path, { gaps = false } = {}) {
  const schema = JSON.parse(readFileSync(path, "utf8"));
  delete schema.anyOf;
  if (gaps) fillGaps(schema);
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  const int = (min, max) => ({ type: "number", validate: (n) => Number.isInteger(n) && n >= min && n <= max });
  ajv.addFormat("uint16", int(0, 65535));
  ajv.addFormat("uint32", int(0, 2 ** 32 - 1));
  ajv.addFormat("uint64", int(0, Number.MAX_SAFE_INTEGER));
  ajv.addFormat("int32", int(-(2 ** 31), 2 ** 31 - 1));
  ajv.addFormat("int64", int(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER));
  ajv.addFormat("double", { type: "number", validate: () => true });
  ajv.addFormat("uri", /^[a-z][a-z0-9+.-]*:/i);
  ajv.addSchema(schema, "acp");

  // method -> $defs name, from the schema's own x-method / x-side annotations.
  const responseType = {}; // client→agent request method -> agent's response type
  const agentOutgoing = {}; // agent→client request/notification method -> params type
  for (const [name, def] of Object.entries(schema.$defs)) {
    const m = def["x-method"];
    if (!m) continue;
    if (def["x-side"] === "agent" && name.endsWith("Response")) responseType[m] = name;
    if ((def["x-side"] === "client" || def["x-side"] === "protocol") && /(Request|Notification)$/.test(name)) agentOutgoing[m] = name;
  }

  const cache = new Map();
  function validatorFor(def) {
    if (!cache.has(def)) cache.set(def, ajv.getSchema(`acp#/$defs/${def}`));
    return cache.get(def);
  }

  function check(def, value) {
    const v = validatorFor(def);
    if (!v) throw new Error(`no $defs/${def} in ${path}`);
    if (!v(value)) return `${def}: ${ajv.errorsText(v.errors)} in ${JSON.stringify(value).slice(0, 400)}`;
    return null;
  }

  /**
   * Validates one frame sent by the agent. `clientRequests` maps the ids of requests the
   * client sent to their methods (to pick the response type). Returns an error string or null.
   */
  function validateAgentFrame(frame, clientRequests) {
    if (frame === null || typeof frame !== "object" || frame.jsonrpc !== "2.0") return `not a JSON-RPC 2.0 object: ${JSON.stringify(frame)}`;
    if ("method" in frame) {
      const def = agentOutgoing[frame.method];
      if (!def) return `agent sent unknown method ${frame.method}`;
      return check(def, frame.params);
    }
    if (!("id" in frame)) return `frame is neither message nor response: ${JSON.stringify(frame)}`;
    if ("error" in frame) {
      if ("result" in frame) return "response has both result and error";
      return check("Error", frame.error);
    }
    const method = clientRequests.get(JSON.stringify(frame.id));
    if (!method) return `response to unknown id ${JSON.stringify(frame.id)}`;
    const def = responseType[method];
    if (!def) return null; // extension methods have no schema type
    return check(def, frame.result);
  }

  return { path, schema, check, validateAgentFrame, responseType };
}

const stable = validatorOf(schemaPath);
export const check = stable.check;
export const validateAgentFrame = stable.validateAgentFrame;

/** ACP v2 (preview): SDK 2.4.0's `v2/schema.json`, beside the v1 file or in the pinned SDK. */
export const v2SchemaPath = (() => {
  const beside = join(dirname(schemaPath), "..", "v2", "schema.json");
  return existsSync(beside) ? beside : join(here, "..", "..", "node_modules", "@agentclientprotocol", "sdk", "schema", "v2", "schema.json");
})();

let v2;
/** The validator of the v2 schema (made on first use). */
export function v2Validator() {
  v2 ??= validatorOf(v2SchemaPath);
  return v2;
}

let unstable;
/** The validator of the unstable schema, its gaps filled (made on first use). */
export function unstableValidator() {
  unstable ??= validatorOf(unstableSchemaPath, { gaps: true });
  return unstable;
}

// A minimal line client for the benchmarks that time tool calls: requests resolved by id,
// updates counted, and one tool card's first and last frames timestamped as they are read.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { corvidBin } from "../support/agent.mjs";

/** Spawns `corvid acp` with `env`; see the module comment. */
export function startCardClient(env, args = []) {
  const child = spawn(corvidBin(), ["acp", ...args], { env, stdio: ["pipe", "pipe", "inherit"] });
  const waiting = new Map();
  let card = null;
  let updates = 0;
  // The unfinished line's pieces: a diff of a large file is one line of megabytes, and
  // rescanning it from its start at every read would time the client, not the agent.
  let pending = [];
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk) => {
    const at = performance.now();
    let from = 0;
    let nl;
    while ((nl = chunk.indexOf("\n", from)) >= 0) {
      const line = pending.join("") + chunk.slice(from, nl);
      pending = [];
      from = nl + 1;
      // Streamed text is only counted: parsing 100,000 of them would time the client.
      if (line.startsWith('{"jsonrpc":"2.0","method":"session/update"') && line.includes('"sessionUpdate":"agent_message_chunk"')) {
        updates++;
        continue;
      }
      const msg = JSON.parse(line);
      const u = msg.method === "session/update" ? msg.params.update : null;
      if (u && card && msg.params.sessionId === card.session) {
        if (u.sessionUpdate === "tool_call" && card.start === undefined) {
          card.id = u.toolCallId;
          card.start = at;
        } else if (u.sessionUpdate === "tool_call_update" && u.toolCallId === card.id && ["completed", "failed"].includes(u.status)) {
          card.end = at;
          card.last = u;
        }
      }
      if ("id" in msg && !msg.method) {
        waiting.get(msg.id)?.(msg);
        waiting.delete(msg.id);
      }
    }
    if (from < chunk.length) pending.push(chunk.slice(from));
  });
  let next = 1;
  const request = (method, params) => {
    const id = next++;
    const p = new Promise((r) => waiting.set(id, r));
    child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    return p;
  };
  return {
    child,
    request,
    get updates() {
      return updates;
    },
    /** One turn whose first tool call is timed: its milliseconds and its final update. */
    async timeCall(sessionId, marker) {
      card = { session: sessionId };
      const r = await request("session/prompt", { sessionId, prompt: [{ type: "text", text: marker }] });
      if (r.error || card.last?.status !== "completed") throw new Error(`${marker}: ${JSON.stringify(r)} card ${JSON.stringify(card.last)}`);
      return { ms: card.end - card.start, last: card.last };
    },
    /** The agent's resident set now and at its peak, in MB (from /proc). */
    rss() {
      const status = readStatus(child.pid);
      return { now: status.VmRSS / 1024, peak: status.VmHWM / 1024 };
    },
    async close() {
      child.stdin.end();
      await once(child, "exit");
    },
  };
}

/** The kB figures of /proc/<pid>/status. */
function readStatus(pid) {
  const out = {};
  for (const m of readFileSync(`/proc/${pid}/status`, "utf8").matchAll(/^(\w+):\s+(\d+) kB$/gm)) out[m[1]] = Number(m[2]);
  return out;
}

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

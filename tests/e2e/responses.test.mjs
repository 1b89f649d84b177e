// The OpenAI Responses provider (`CORVID_PROVIDER=openai-responses`) through the real binary,
// against the fake model server's `/v1/responses`: a tool loop whose reasoning items go back
// in order (in the turn, and after the session is loaded in a new process), the session's
// thought level as `reasoning.effort`, the session id as `prompt_cache_key`, cached tokens.
import assert from "node:assert/strict";
import { mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startFakeModel } from "../support/fake-model.mjs";
import { agentEnv, textOf, withInitializedAgent } from "../support/agent.mjs";

let fake;
before(async () => (fake = await startFakeModel({ models: ["gpt-5-codex"] })));
after(async () => fake.close());

const responsesEnv = () => agentEnv({ fake, model: "gpt-5-codex", extra: { CORVID_PROVIDER: "openai-responses" } });
const requestsFor = (marker) => fake.requests.filter((r) => r.api === "responses" && JSON.stringify(r.body.input).includes(marker));

test("a Responses tool loop: store false, reasoning items back in order, prompt_cache_key, effort from thought_level; a reload continues them", async () => {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), "corvid-responses-")));
  writeFileSync(join(cwd, "notes.txt"), "hello from notes\n");
  const env = responsesEnv();
  let sessionId;
  await withInitializedAgent(env, async (agent) => {
    const s = await agent.request("new", "session/new", { cwd, mcpServers: [] });
    sessionId = s.result.sessionId;
    const level = s.result.configOptions.find((o) => o.id === "thought_level");
    assert.ok(level, "a reasoning model gets the thought level picker");
    assert.match(level.options.find((o) => o.value === "off").description, /`low`/, "off is the lowest effort gpt-5-codex accepts");
    const set = await agent.request("set", "session/set_config_option", { sessionId, configId: "thought_level", value: "high" });
    assert.ok(set.result, JSON.stringify(set.error));

    fake.script("RESP-LOOP", {
      steps: [
        { chunks: [{ reasoning: "I should read the notes." }, { content: "Reading." }], toolCalls: [{ name: "read_file", id: "call_notes", arguments: { path: "notes.txt" } }] },
        { chunks: [{ reasoning: "Now answer." }, { content: "It says hello." }] },
      ],
    });
    const r = await agent.request("p1", "session/prompt", { sessionId, prompt: [{ type: "text", text: "RESP-LOOP" }] }, 15000);
    assert.equal(r.result?.stopReason, "end_turn", JSON.stringify(r.error));
    const updates = agent.updates(sessionId);
    assert.equal(textOf(updates, "agent_thought_chunk"), "I should read the notes.Now answer.", "reasoning summaries are thoughts");
    assert.equal(textOf(updates, "agent_message_chunk"), "Reading.It says hello.");
    assert.equal(updates.filter((u) => u.sessionUpdate === "tool_call_update").at(-1).status, "completed");
    const usage = updates.filter((u) => u.sessionUpdate === "usage_update").at(-1);
    assert.equal(usage._meta.corvid.cacheReadTokens, 6, "input_tokens_details.cached_tokens is read");

    const [first, second] = requestsFor("RESP-LOOP");
    for (const { body, headers } of [first, second]) {
      assert.equal(body.store, false);
      assert.equal(body.stream, true);
      assert.deepEqual(body.include, ["reasoning.encrypted_content"]);
      assert.equal(body.prompt_cache_key, sessionId);
      assert.deepEqual(body.reasoning, { effort: "high", summary: "auto" });
      assert.equal(typeof body.instructions, "string");
      assert.equal(headers.authorization, "Bearer test-key");
      assert.ok(body.tools.some((t) => t.type === "function" && t.name === "read_file" && t.parameters));
    }
    const after = second.body.input.slice(second.body.input.findIndex((i) => i.role === "user"));
    assert.deepEqual(after.map((i) => i.type), ["message", "reasoning", "message", "function_call", "function_call_output"]);
    assert.deepEqual(after[1], { type: "reasoning", summary: [{ type: "summary_text", text: "I should read the notes." }], encrypted_content: `enc-${fake.requests.indexOf(first) + 1}` }, "the reasoning item goes back without its id");
    assert.deepEqual(after[3], { type: "function_call", call_id: "call_notes", name: "read_file", arguments: JSON.stringify({ path: "notes.txt" }) });
    assert.equal(after[4].call_id, "call_notes");
    assert.match(after[4].output, /hello from notes/);
  });

  // A new process loads the session: the next request still carries both reasoning items.
  await withInitializedAgent(env, async (agent) => {
    const l = await agent.request("load", "session/load", { sessionId, cwd, mcpServers: [] });
    assert.ok(l.result, JSON.stringify(l.error));
    fake.script("RESP-AGAIN", { chunks: [{ content: "still here" }] });
    const r = await agent.request("p2", "session/prompt", { sessionId, prompt: [{ type: "text", text: "RESP-AGAIN" }] }, 15000);
    assert.equal(r.result?.stopReason, "end_turn", JSON.stringify(r.error));
    const [req] = requestsFor("RESP-AGAIN");
    const reasoning = req.body.input.filter((i) => i.type === "reasoning");
    assert.equal(reasoning.length, 2, "both answers' reasoning items survive the reload");
    assert.ok(reasoning.every((i) => /^enc-\d+$/.test(i.encrypted_content)));
    assert.deepEqual(req.body.reasoning, { effort: "high", summary: "auto" }, "the thought level persisted");
  });
});

test("a 401 from the Responses API names the key and is not retried", async () => {
  await withInitializedAgent(responsesEnv(), async (agent) => {
    const s = await agent.request("new", "session/new", { cwd: tmpdir(), mcpServers: [] });
    fake.script("RESP-401", { status: 401, body: { error: { message: "Incorrect API key provided" } } });
    const r = await agent.request("p", "session/prompt", { sessionId: s.result.sessionId, prompt: [{ type: "text", text: "RESP-401" }] }, 15000);
    assert.match(r.error.message, /401 Unauthorized.*Incorrect API key.*OPENAI_API_KEY/);
    assert.equal(fake.attemptsFor("RESP-401"), 1);
  });
});

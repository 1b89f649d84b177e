import { test } from "node:test";
import assert from "node:assert/strict";
import { addCheckpoint, addPermission, checkpointText, applyUpdate, configSelects, endTurn, filterSessions, lastPrompt, modelWithoutImages, findDiff, findProposedDiff, initialState, pendingPermissions, permissionSummary, resolvePermission, selectionLines, stopText, TAIL_LINES, withTerminalOutput } from "../../src/viewModel";

test("streamed chunks merge into one message per kind, in order", () => {
  const s = initialState();
  applyUpdate(s, { sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "hm" } });
  applyUpdate(s, { sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "m" } });
  applyUpdate(s, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Hel" } });
  applyUpdate(s, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "lo" } });
  assert.deepEqual(s.items, [
    { kind: "thought", text: "hmm" },
    { kind: "agent", text: "Hello" },
  ]);
});

test("tool call lifecycle: created, updated with status and a diff, findDiff", () => {
  const s = initialState();
  applyUpdate(s, { sessionUpdate: "tool_call", toolCallId: "t1", title: "Write a.txt", kind: "edit", status: "pending" });
  applyUpdate(s, { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "in_progress" });
  applyUpdate(s, {
    sessionUpdate: "tool_call_update",
    toolCallId: "t1",
    status: "completed",
    content: [{ type: "diff", path: "/w/a.txt", oldText: null, newText: "x" }, { type: "content", content: { type: "text", text: "ok" } }],
  });
  assert.equal(s.items.length, 1);
  const t = s.items[0] as any;
  assert.equal(t.status, "completed");
  assert.equal(t.toolKind, "edit");
  assert.deepEqual(findDiff(s, "t1"), { type: "diff", path: "/w/a.txt", oldText: null, newText: "x" });
  assert.equal(findDiff(s, "t1", 1), undefined);
});

test("terminal content gets the captured output", () => {
  const s = initialState();
  applyUpdate(s, { sessionUpdate: "tool_call", toolCallId: "t", title: "run", content: [{ type: "terminal", terminalId: "term-1" }] });
  withTerminalOutput(s, (id) => (id === "term-1" ? { output: "hi\n", exit: { exitCode: 0, signal: null } } : undefined));
  assert.deepEqual((s.items[0] as any).content[0], { type: "terminal", terminalId: "term-1", output: "hi\n", hidden: 0, exited: true, exit: { exitCode: 0, signal: null } });
});

test("a command card gets only the tail of a long output, live, and the exit status once it ended", () => {
  const s = initialState();
  applyUpdate(s, { sessionUpdate: "tool_call", toolCallId: "t", title: "run", content: [{ type: "terminal", terminalId: "term-1" }] });
  const lines = Array.from({ length: TAIL_LINES + 5 }, (_, i) => `line${i + 1}`).join("\n") + "\n";
  withTerminalOutput(s, () => ({ output: lines, exit: null }));
  const c = (s.items[0] as any).content[0];
  assert.equal(c.hidden, 5);
  assert.equal(c.output.split("\n")[0], "line6");
  assert.ok(c.output.endsWith(`line${TAIL_LINES + 5}\n`));
  assert.equal(c.exited, false);
  assert.equal(c.exit, null);
  withTerminalOutput(s, () => ({ output: lines + "done\n", exit: { exitCode: 3, signal: null } }));
  assert.equal(c.hidden, 6);
  assert.ok(c.output.endsWith("done\n"));
  assert.deepEqual(c.exit, { exitCode: 3, signal: null });
});

test("permission requests carry every option and record the answer", () => {
  const s = initialState();
  addPermission(s, 7, {
    toolCall: { toolCallId: "t1", title: "Write a.txt" },
    options: [
      { optionId: "allow_once", name: "Allow", kind: "allow_once" },
      { optionId: "allow_always", name: "Always", kind: "allow_always" },
      { optionId: "reject_once", name: "Reject", kind: "reject_once" },
    ],
  });
  assert.deepEqual(pendingPermissions(s), [7]);
  assert.equal((s.items[0] as any).options.length, 3);
  resolvePermission(s, 7, "allow_once");
  assert.deepEqual(pendingPermissions(s), []);
  assert.equal((s.items[0] as any).chosen, "allow_once");
});

test("a permission request carries the proposed change: from its tool call, else from the call's card", () => {
  const s = initialState();
  const diff = { type: "diff", path: "/w/src/pricing.py", oldText: "a\n", newText: "b\n" };
  addPermission(s, 1, { toolCall: { toolCallId: "t1", title: "Edit src/pricing.py", content: [diff] }, options: [] });
  assert.deepEqual((s.items[0] as any).diffs, [diff]);
  assert.deepEqual(findProposedDiff(s, 1, 0), diff);
  // A request whose tool call has no content: the diff of the earlier tool_call update.
  applyUpdate(s, { sessionUpdate: "tool_call", toolCallId: "t2", title: "Write tests/test_pricing.py", kind: "edit", content: [{ type: "diff", path: "/w/t.py", newText: "x\n" }] });
  addPermission(s, 2, { toolCall: { toolCallId: "t2" }, options: [] });
  assert.deepEqual(findProposedDiff(s, 2, 0), { type: "diff", path: "/w/t.py", oldText: null, newText: "x\n" });
  // A command asks with no diff.
  addPermission(s, 3, { toolCall: { toolCallId: "t3", title: "Run ls" }, options: [] });
  assert.equal((s.items.at(-1) as any).diffs, undefined);
  assert.equal(findProposedDiff(s, 3, 0), undefined);
});

test("plan, usage, commands, config options and mode updates", () => {
  const s = initialState();
  applyUpdate(s, { sessionUpdate: "plan", entries: [{ content: "a", status: "completed", priority: "high" }, { content: "b", status: "pending", priority: "low" }] });
  applyUpdate(s, { sessionUpdate: "usage_update", used: 15, size: 1000, cost: { amount: 0.01, currency: "USD" } });
  applyUpdate(s, { sessionUpdate: "available_commands_update", availableCommands: [{ name: "review", description: "Review changes" }] });
  s.config = configSelects([
    { type: "select", id: "mode", name: "Mode", category: "mode", currentValue: "ask", options: [{ value: "ask", name: "Ask" }, { value: "auto", name: "Auto" }] },
    { type: "select", id: "model", name: "Model", category: "model", currentValue: "m1", options: [{ group: "g", name: "G", options: [{ value: "m1", name: "M1" }] }] },
    { type: "boolean", id: "b", name: "B", currentValue: true },
  ]);
  applyUpdate(s, { sessionUpdate: "current_mode_update", currentModeId: "auto" });
  assert.deepEqual(s.plan.map((e) => e.status), ["completed", "pending"]);
  assert.deepEqual(s.usage, { used: 15, size: 1000, cost: { amount: 0.01, currency: "USD" } });
  assert.equal(s.commands[0].name, "review");
  assert.equal(s.config.length, 2, "boolean options are not pickers");
  assert.equal(s.config[0].currentValue, "auto");
  assert.deepEqual(s.config[1].options, [{ value: "m1", name: "M1" }]);
});

test("a selection's lines: one ending at column 0 does not cover that line", () => {
  assert.equal(selectionLines({ line: 18, character: 0 }, { line: 24, character: 0 }), "19-24");
  assert.equal(selectionLines({ line: 18, character: 4 }, { line: 24, character: 3 }), "19-25");
  assert.equal(selectionLines({ line: 18, character: 0 }, { line: 18, character: 0 }), "19-19");
});

test("a replayed command card shows the output stored with the call when its terminal is gone", () => {
  const s = initialState();
  applyUpdate(s, { sessionUpdate: "tool_call", toolCallId: "t", title: "run", content: [{ type: "terminal", terminalId: "term-old-1" }] });
  applyUpdate(s, { sessionUpdate: "tool_call_update", toolCallId: "t", status: "completed", rawOutput: { exitCode: 0, output: "stored\n" } });
  withTerminalOutput(s, () => undefined);
  assert.deepEqual((s.items[0] as any).content[0], {
    type: "terminal",
    terminalId: "term-old-1",
    output: "stored\n",
    hidden: 0,
    exited: true,
    exit: { exitCode: 0, signal: null },
    stored: "stored\n",
    storedExit: { exitCode: 0, signal: null },
  });
  // A live terminal wins over what was stored.
  withTerminalOutput(s, () => ({ output: "live\n", exit: { exitCode: 0, signal: null } }));
  assert.equal((s.items[0] as any).content[0].output, "live\n");
});

test("one plan card per turn: every plan update of a turn changes the same card; a new turn gets its own", () => {
  const s = initialState();
  const plan = (a: string, b: string) => ({ sessionUpdate: "plan", entries: [{ content: "a", status: a, priority: "high" }, { content: "b", status: b, priority: "low" }] });
  applyUpdate(s, { sessionUpdate: "user_message_chunk", content: { type: "text", text: "go" } });
  // Corvid's update_plan call is folded into the card, not drawn as a card of its own.
  applyUpdate(s, { sessionUpdate: "tool_call", toolCallId: "p1", title: "Update plan", kind: "think", status: "pending" });
  applyUpdate(s, plan("in_progress", "pending"));
  applyUpdate(s, { sessionUpdate: "tool_call_update", toolCallId: "p1", status: "completed" });
  applyUpdate(s, { sessionUpdate: "tool_call", toolCallId: "r1", title: "Read a.rs", kind: "read", status: "completed" });
  applyUpdate(s, plan("completed", "in_progress"));
  const cards = s.items.filter((i) => i.kind === "plan");
  assert.equal(cards.length, 1);
  assert.deepEqual((cards[0] as any).entries.map((e: any) => e.status), ["completed", "in_progress"]);
  assert.equal(s.items.findIndex((i) => i.kind === "plan"), 2, "the card stays where the plan first appeared");
  assert.equal((s.items[1] as any).folded, true);
  assert.equal((s.items[3] as any).folded, undefined, "other tool calls are not folded");
  applyUpdate(s, { sessionUpdate: "user_message_chunk", content: { type: "text", text: "again" } });
  applyUpdate(s, plan("pending", "pending"));
  assert.equal(s.items.filter((i) => i.kind === "plan").length, 2);
  assert.deepEqual((cards[0] as any).entries.map((e: any) => e.status), ["completed", "in_progress"], "the earlier turn's card keeps its last state");
  assert.deepEqual(s.plan.map((e) => e.status), ["pending", "pending"]);
});

test("an answered permission collapses to a one-line summary of the choice", () => {
  const s = initialState();
  const options = [
    { optionId: "allow_once", name: "Allow", kind: "allow_once" },
    { optionId: "allow_always", name: "Always allow writes", kind: "allow_always" },
    { optionId: "reject_once", name: "Reject", kind: "reject_once" },
  ];
  for (const [id, chosen] of [[1, "allow_once"], [2, "allow_always"], [3, "reject_once"], [4, "cancelled"]] as const) {
    addPermission(s, id, { toolCall: { toolCallId: `t${id}`, title: "Write a.txt" }, options });
    resolvePermission(s, id, chosen);
  }
  addPermission(s, 5, { toolCall: { toolCallId: "t5", title: "Write b.txt" }, options });
  assert.deepEqual(
    s.items.map((i) => permissionSummary(i as any)),
    ["Allowed once", "Always allowed", "Rejected", "Cancelled", ""],
  );
});

test("a normal turn end leaves no notice; cancelled, refused and limited turns do", () => {
  const s = initialState();
  endTurn(s, "end_turn");
  assert.equal(s.items.length, 0);
  assert.equal(s.lastStop, "end_turn");
  endTurn(s, "error"); // its message is already a notice of its own
  assert.equal(s.items.length, 0);
  for (const r of ["cancelled", "refusal", "max_tokens", "max_turn_requests"]) endTurn(s, r);
  assert.deepEqual(s.items, [
    { kind: "stop", reason: "cancelled" },
    { kind: "stop", reason: "refusal" },
    { kind: "stop", reason: "max_tokens" },
    { kind: "stop", reason: "max_turn_requests" },
  ]);
  assert.equal(s.lastStop, "max_turn_requests");
  assert.equal(stopText("cancelled"), "Turn cancelled.");
  assert.equal(stopText("something_new"), "Turn ended: something new.");
});

test("a turn that wrote files ends with an undo item; one that wrote none, without", () => {
  const s = initialState();
  addCheckpoint(s, 1, []);
  assert.equal(s.items.length, 0);
  addCheckpoint(s, 2, ["/w/src/pricing.py", "/w/tests/test_pricing.py"]);
  const item = s.items[0] as Extract<(typeof s.items)[number], { kind: "checkpoint" }>;
  assert.deepEqual({ ...item }, { kind: "checkpoint", turn: 2, files: ["/w/src/pricing.py", "/w/tests/test_pricing.py"] });
  assert.equal(checkpointText(item), "This turn changed 2 files: pricing.py, test_pricing.py");
  item.undone = { restored: 1, removed: 1 };
  assert.equal(checkpointText(item), "Turn undone: 1 file restored, 1 created file removed.");
});

test("lastPrompt: the newest user message (live or replayed), null before any", () => {
  const s = initialState();
  assert.equal(lastPrompt(s), null);
  applyUpdate(s, { sessionUpdate: "user_message_chunk", content: { type: "text", text: "first" } });
  applyUpdate(s, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "answer" } });
  s.items.push({ kind: "user", text: "second" });
  applyUpdate(s, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "partial" } });
  endTurn(s, "cancelled");
  s.items.push({ kind: "notice", text: "boom", severity: "error" });
  assert.equal(lastPrompt(s), "second");
});

test("filterSessions: every word of the query in the title, any case; empty keeps all, in order", () => {
  const list = [
    { sessionId: "a", title: "Fix the login bug", updatedAt: null },
    { sessionId: "b", title: "Write docs for LOGIN", updatedAt: null },
    { sessionId: "c", title: "Refactor parser", updatedAt: null },
  ];
  assert.deepEqual(filterSessions(list, "").map((s) => s.sessionId), ["a", "b", "c"]);
  assert.deepEqual(filterSessions(list, "   ").map((s) => s.sessionId), ["a", "b", "c"]);
  assert.deepEqual(filterSessions(list, "login").map((s) => s.sessionId), ["a", "b"]);
  assert.deepEqual(filterSessions(list, "LOGIN bug").map((s) => s.sessionId), ["a"]);
  assert.deepEqual(filterSessions(list, "docs  login").map((s) => s.sessionId), ["b"]);
  assert.deepEqual(filterSessions(list, "nothing").map((s) => s.sessionId), []);
});

test("a model's images flag comes from Corvid's _meta; modelWithoutImages names the session's model only when it takes none", () => {
  const config = configSelects([
    {
      type: "select",
      id: "model",
      name: "Model",
      category: "model",
      currentValue: "text-only",
      options: [
        { value: "vision", name: "vision", _meta: { corvid: { images: true } } },
        { value: "text-only", name: "text-only", _meta: { corvid: { images: false } } },
        { value: "unsaid", name: "unsaid" },
      ],
    },
  ]);
  assert.deepEqual(config[0].options, [
    { value: "vision", name: "vision", images: true },
    { value: "text-only", name: "text-only", images: false },
    { value: "unsaid", name: "unsaid" },
  ]);
  assert.equal(modelWithoutImages({ config }), "text-only");
  assert.equal(modelWithoutImages({ config: [{ ...config[0], currentValue: "vision" }] }), null);
  // An agent that says nothing gets no warning.
  assert.equal(modelWithoutImages({ config: [{ ...config[0], currentValue: "unsaid" }] }), null);
  assert.equal(modelWithoutImages({ config: [] }), null);
});

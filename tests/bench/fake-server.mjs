// Runs the fake model server in its own process (so the benchmark client and the model
// do not share one JavaScript thread) and prints its base URL on stdout.
import { startFakeModel } from "../support/fake-model.mjs";

const fake = await startFakeModel();
fake.script("BENCH-INSTANT", { chunks: [{ content: "ok" }] });
fake.script("BENCH-STREAM", { repeat: { content: "tok ", count: 10000 } });
// The soak's turn: a file write and a command (both ask permission), a read, then an answer.
fake.script("SOAK-TURN", {
  steps: [
    { toolCalls: [{ name: "write_file", arguments: { path: "soak.txt", content: "soak\n" } }] },
    { toolCalls: [{ name: "run_command", arguments: { command: "echo soak" } }] },
    { toolCalls: [{ name: "read_file", arguments: { path: "soak.txt" } }] },
    { chunks: [{ reasoning: "Done. " }, ...Array.from({ length: 20 }, (_, i) => ({ content: `s${i} ` }))] },
  ],
});
// The subagent benchmark: the same file read directly and through a subagent (whose model
// answers at once, or reads the file first).
const then = (call) => ({ steps: [{ toolCalls: [call] }, { chunks: [{ content: "ok" }] }] });
const notes = { name: "read_file", arguments: { path: "notes.txt" } };
fake.script("BENCH-TOOL-DIRECT", then(notes));
fake.script("BENCH-TOOL-DELEGATE-ANSWER", then({ name: "delegate", arguments: { description: "Answer", prompt: "BENCH-CHILD-ANSWER" } }));
fake.script("BENCH-TOOL-DELEGATE-READ", then({ name: "delegate", arguments: { description: "Read", prompt: "BENCH-CHILD-READ" } }));
fake.script("BENCH-CHILD-ANSWER", { chunks: [{ content: "the notes say hello" }] });
fake.script("BENCH-CHILD-READ", then(notes));
process.stdout.write(fake.url + "\n");
process.on("SIGTERM", async () => {
  await fake.close();
  process.exit(0);
});

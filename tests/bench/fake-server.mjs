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
process.stdout.write(fake.url + "\n");
process.on("SIGTERM", async () => {
  await fake.close();
  process.exit(0);
});

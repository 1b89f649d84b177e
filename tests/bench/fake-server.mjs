// Runs the fake model server in its own process (so the benchmark client and the model
// do not share one JavaScript thread) and prints its base URL on stdout.
import { startFakeModel } from "../support/fake-model.mjs";

const fake = await startFakeModel();
fake.script("BENCH-INSTANT", { chunks: [{ content: "ok" }] });
fake.script("BENCH-STREAM", { repeat: { content: "tok ", count: 10000 } });
process.stdout.write(fake.url + "\n");
process.on("SIGTERM", async () => {
  await fake.close();
  process.exit(0);
});

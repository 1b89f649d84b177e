// Wraps an in-process ACP Stream so every message the agent emits is schema-validated and
// recorded, like the stdio harness does for the binary.
import { validateAgentFrame } from "./schema.mjs";

/** `validate`: another schema's frame check (`v2Validator().validateAgentFrame` for ACP v2). */
export function tapStream(stream, validate = validateAgentFrame) {
  const frames = [];
  const violations = [];
  const clientRequests = new Map();
  const readable = stream.readable.pipeThrough(
    new TransformStream({
      transform(message, controller) {
        const err = validate(message, clientRequests);
        if (err) violations.push(err);
        frames.push(message);
        controller.enqueue(message);
      },
    }),
  );
  const writer = stream.writable.getWriter();
  const writable = new WritableStream({
    async write(message) {
      if (message && message.method && "id" in message) clientRequests.set(JSON.stringify(message.id), message.method);
      await writer.write(message);
    },
    async close() {
      await writer.close();
    },
  });
  return { readable, writable, frames, violations, close: () => stream.close() };
}

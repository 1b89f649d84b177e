#!/usr/bin/env node
// `npx corvid-acp`: Corvid over stdio (newline-delimited JSON-RPC, as `corvid acp`) from the
// in-process addon, for the ACP Registry's npx distribution and any Node user without the
// native binary. Each stdin line goes to the agent as it is (the core answers bad input with a
// JSON-RPC error, as `corvid acp` does); each message it sends is one stdout line. Only ACP
// frames reach stdout: logs go to stderr, or to --log-file. `--login` is the terminal sign-in.
//
//   npx corvid-acp [acp] [--store PATH|none] [--log-file PATH]
//   npx corvid-acp --login
import { createWriteStream, readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { NativeAgent, defaultSandboxLauncher, login } from "../index.js";

const USAGE = "usage: corvid-acp [acp] [--store PATH|none] [--log-file PATH] | --login | --version | --help";

/** The flags `corvid acp` has that make sense in-process; exits on anything else. */
function parseArgs(argv) {
  const options = {};
  const args = argv[0] === "acp" ? argv.slice(1) : argv;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const value = () => {
      const v = args[++i];
      if (v === undefined) fail(`${arg} needs a value`);
      return v;
    };
    if (arg === "--store") options.store = value();
    else if (arg === "--log-file") options.logFile = value();
    else if (arg === "--version" || arg === "-V") {
      const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
      process.stdout.write(`corvid-acp ${version}\n`);
      process.exit(0);
    } else if (arg === "--help" || arg === "-h") {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else if (arg === "--login") {
      // The terminal sign-in an ACP client runs (the auth method's args): `corvid login`'s own
      // flow, prompts on stderr; a running `npx corvid-acp` picks the result up (rereadConfig).
      try {
        login();
        process.exit(0);
      } catch (error) {
        process.stderr.write(`corvid-acp: ${error.message}\n`);
        process.exit(1);
      }
    } else fail(`unknown argument ${arg}`);
  }
  return options;
}

function fail(message) {
  process.stderr.write(`corvid-acp: ${message}\n${USAGE}\n`);
  process.exit(2);
}

const options = parseArgs(process.argv.slice(2));
const logs = options.logFile ? createWriteStream(options.logFile, { flags: "a" }) : process.stderr;

let ended;
const endOfStream = new Promise((resolve) => (ended = resolve));
// The native callbacks are weak: stdin (open until the client closes it) keeps Node alive,
// and after it a timer below does, until the agent's last message is out.
const agent = new NativeAgent(
  { store: options.store, rereadConfig: true, ...defaultSandboxLauncher() },
  (text) => (text === "" ? ended() : process.stdout.write(`${text}\n`)),
  (line) => logs.write(line.endsWith("\n") ? line : `${line}\n`),
);

const input = createInterface({ input: process.stdin, crlfDelay: Infinity });
input.on("line", (line) => {
  if (line.trim() === "") return;
  try {
    agent.send(line);
  } catch (error) {
    // The agent has stopped taking input (it is shutting down): nothing more can be answered.
    logs.write(`corvid-acp: ${error.message}\n`);
  }
});
input.on("close", async () => {
  // End of input: the connection answers what it was sent and winds down, as `corvid acp`'s
  // does on stdin's end (a turn still running is cancelled there); then the runtime stops.
  const hold = setTimeout(() => {}, 1 << 30);
  agent.endInput();
  await Promise.race([endOfStream, new Promise((resolve) => setTimeout(resolve, 5000))]);
  await agent.close();
  clearTimeout(hold);
  process.stdout.write("", () => process.exit(0));
});

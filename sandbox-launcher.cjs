// The sandbox launcher of the in-process agent (`corvid-acp`, the VS Code extension): what
// `corvid sandbox` is for the binary. Each command the model runs is started as
//
//   <node or electron> sandbox-launcher.cjs sandbox --policy <JSON> -- sh -c CMD
//
// (with ELECTRON_RUN_AS_NODE=1, so that Electron runs this as Node), and the addon's
// `sandboxMain` starts `sh` confined to the policy, supervises it, kills whatever it leaves
// running, and returns its exit status. CommonJS and beside native.cjs, which loads the addon
// from this same folder, in the package and in the extension's dist/ alike.
"use strict";

// Only this process needs it: a command that starts an Electron app (VS Code itself, say)
// must not turn it into plain Node.
delete process.env.ELECTRON_RUN_AS_NODE;

let sandboxMain;
try {
  ({ sandboxMain } = require("./native.cjs"));
} catch (error) {
  // As the supervisor reports a policy it cannot apply: one line, status 126.
  process.stderr.write(`corvid sandbox: cannot load the Corvid addon: ${error && error.message}\n`);
  process.exit(126);
}

// Node's own handlers for SIGTERM and SIGINT end the process at once, and the supervisor's
// handlers (tokio's) call the ones they found: the launcher would die before killing the
// command's tree. A listener puts libuv's handler in their place, which only queues the
// signal for an event loop that does not run again before the exit below. Just before the
// call, so that a signal before it still ends the launcher while no command has started.
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => {});

process.exit(sandboxMain(process.argv.slice(2)));

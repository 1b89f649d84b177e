// Builds the extension with esbuild: dist/extension.js (Node, CommonJS; the ACP SDK and the
// root package's createAgent() are bundled in), dist/webview.js (browser), and copies the
// addon loader (native.cjs, platform.cjs), the napi addon (.node) and the sandbox launcher script
// (sandbox-launcher.cjs, which the bundled createAgent() runs commands through) next to the
// bundle.
//   node build.mjs           extension + webview
//   node build.mjs --tests   also the unit tests into out/unit/
import * as esbuild from "esbuild";
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");
const dist = join(here, "dist");
const tests = process.argv.includes("--tests");

mkdirSync(dist, { recursive: true });
for (const f of readdirSync(dist)) if (f.endsWith(".node")) rmSync(join(dist, f));
// The addon: CORVID_ADDON=<platform>=<file.node> for another platform's VSIX (package.mjs),
// else what `npm run build:native` left at the repository root.
if (process.env.CORVID_ADDON) {
  const [platform, file] = process.env.CORVID_ADDON.split("=");
  copyFileSync(file, join(dist, `corvid.${platform}.node`));
} else {
  const addon = readdirSync(root).filter((f) => /^corvid\..*\.node$/.test(f));
  if (addon.length === 0) {
    console.error("build.mjs: no corvid.*.node at the repository root; run `npm run build:native` there first");
    process.exit(1);
  }
  for (const f of addon) copyFileSync(join(root, f), join(dist, f));
}
for (const f of ["native.cjs", "platform.cjs", "sandbox-launcher.cjs"]) copyFileSync(join(root, f), join(dist, f));

const common = { bundle: true, logLevel: "warning", sourcemap: false, target: "node20" };
await esbuild.build({
  ...common,
  entryPoints: [join(here, "src/extension.ts")],
  outfile: join(dist, "extension.js"),
  platform: "node",
  format: "cjs",
  external: ["vscode"],
  // The bundled index.js finds native.cjs and sandbox-launcher.cjs relative to
  // import.meta.url: this bundle's path.
  define: { "import.meta.url": "__corvidImportMetaUrl" },
  banner: { js: 'var __corvidImportMetaUrl = require("url").pathToFileURL(__filename).href;' },
});
await esbuild.build({
  ...common,
  entryPoints: [join(here, "src/webview/main.ts")],
  outfile: join(dist, "webview.js"),
  platform: "browser",
  format: "iife",
  target: "es2022",
  // markdown-it (with its entity tables) and highlight.js are most of this bundle.
  minify: true,
});

if (tests) {
  const out = join(here, "out/unit");
  rmSync(out, { recursive: true, force: true });
  const entries = readdirSync(join(here, "test/unit")).filter((f) => f.endsWith(".test.ts"));
  await esbuild.build({
    ...common,
    entryPoints: entries.map((f) => join(here, "test/unit", f)),
    outdir: out,
    outExtension: { ".js": ".cjs" },
    platform: "node",
    format: "cjs",
    external: ["vscode", "../../index.js"],
  });
  if (!existsSync(out)) process.exit(1);
}

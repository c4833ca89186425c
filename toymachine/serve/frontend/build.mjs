// Builds ../static/playground.js (CodeMirror 6 + src/*.js, one minified file, no network at run
// time) and ../static/THIRD_PARTY_LICENSES.txt (the licence of every npm package in the bundle).
//   cd toymachine/serve/frontend && npm ci && node build.mjs
import * as esbuild from "esbuild";
import { readFileSync, writeFileSync, readdirSync, existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = process.env.TOYM_BUNDLE_OUT || join(here, "..", "static"); // a test builds into a temp folder
const result = await esbuild.build({
  entryPoints: [join(here, "src", "main.js")],
  bundle: true,
  minify: true,
  format: "iife",
  target: ["es2020"],
  outfile: join(out, "playground.js"),
  metafile: true,
  legalComments: "none",
  logLevel: "warning",
});

// the packages whose code is in the bundle, each with its licence text
const packages = new Set();
for (const input of Object.keys(result.metafile.inputs)) {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
  if (m) packages.add(m[1]);
}
const parts = ["Third-party software in playground.js (bundled by toymachine/serve/frontend/build.mjs)\n"];
for (const name of [...packages].sort()) {
  const dir = join(here, "node_modules", name);
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const file = readdirSync(dir).find((f) => /^(licen[sc]e|copying)/i.test(f));
  const text = file ? readFileSync(join(dir, file), "utf8").trim() : `(no licence file; package.json says ${pkg.license})`;
  parts.push(`${"=".repeat(72)}\n${name} ${pkg.version} (${pkg.license})\n${"=".repeat(72)}\n${text}\n`);
}
writeFileSync(join(out, "THIRD_PARTY_LICENSES.txt"), parts.join("\n"));
console.log(`playground.js: ${packages.size} packages, ${(readFileSync(join(out, "playground.js")).length / 1024).toFixed(0)} KiB`);

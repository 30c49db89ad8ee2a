// Runs client.ts's lifecycle against a live dont server:
//
//   node run.mjs DIR BASEURL TOKEN
//
// DIR holds client.ts (typechecked there by tsc --strict beforehand) and a
// node_modules with openapi-fetch; TypeScript's own transpiler strips the
// types. It prints the lifecycle's lines as one JSON array. The Go test
// TestATypeScriptClientGeneratedFromTheServedDocumentTypechecks
// (internal/httpapi/openapilint_test.go) drives it.

import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import ts from "typescript";

const [dir, baseUrl, token] = process.argv.slice(2);
const source = readFileSync(join(dir, "client.ts"), "utf8");
const { outputText } = ts.transpileModule(source, {
  compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
});
const out = join(dir, "client.mjs");
writeFileSync(out, outputText);
const client = await import(pathToFileURL(out).href);
process.stdout.write(JSON.stringify(await client.lifecycle(baseUrl, token)) + "\n");

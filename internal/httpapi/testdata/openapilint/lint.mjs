// An independent validator of dont's OpenAPI document: swagger-parser
// checks it against the OpenAPI 3.1 schema and resolves every $ref.
//
//   node lint.mjs DOCUMENT.json [DOCUMENT.json …]
//
// It prints one JSON line {ok, validator, version, paths, schemas, error}
// per document on stdout and exits 1 when any is invalid. The Go test
// TestTheOpenAPIDocumentPassesAnIndependentValidator
// (internal/httpapi/openapilint_test.go) drives it; install it with
// npm ci --prefix internal/httpapi/testdata/openapilint.

import { readFileSync } from "node:fs";
import SwaggerParser from "@apidevtools/swagger-parser";

const version = JSON.parse(
  readFileSync(new URL("./node_modules/@apidevtools/swagger-parser/package.json", import.meta.url), "utf8"),
).version;
let failed = false;
for (const file of process.argv.slice(2)) {
  const summary = { ok: false, validator: "@apidevtools/swagger-parser", version, file };
  try {
    const doc = JSON.parse(readFileSync(file, "utf8"));
    const api = await SwaggerParser.validate(structuredClone(doc));
    summary.ok = true;
    summary.openapi = api.openapi;
    summary.paths = Object.keys(api.paths ?? {}).length;
    summary.schemas = Object.keys(doc.components?.schemas ?? {}).length;
  } catch (e) {
    summary.error = String(e?.message ?? e).slice(0, 4000);
  }
  failed ||= !summary.ok;
  process.stdout.write(JSON.stringify(summary) + "\n");
}
if (failed) process.exitCode = 1;

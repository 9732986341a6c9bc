import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { openApiDocumentOf } from "../../src/operations/index.ts";

/**
 * Writes the OpenAPI document the gateway serves to the file named by the first argument, built by the same
 * function from the same route table, so the SDK's generated types come from exactly what the gateway answers.
 * The origin only fills `servers`, which the generated types do not carry.
 */
const [target] = process.argv.slice(2);
if (target === undefined) throw new Error("usage: openapi-document.ts OUTPUT.json");
const document = openApiDocumentOf("http://127.0.0.1:8080");
mkdirSync(dirname(target), { recursive: true });
writeFileSync(target, `${JSON.stringify(document, null, 2)}\n`);

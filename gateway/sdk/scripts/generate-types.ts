import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import openapiTS, { astToString } from "openapi-typescript";

/**
 * The SDK's types, generated from the OpenAPI document with openapi-typescript. One normalization first: a
 * request whose required field may come under its old name says so with `anyOf: [{required: [new]},
 * {required: [old]}]`, which the generator turns into `… | unknown`, and that erases the whole body type. The
 * constraint is the gateway's to check; the SDK keeps the body's fields and types both names as optional.
 */
export async function typesOf(document: object): Promise<string> {
  const ast = await openapiTS(withoutRequiredAlternatives(structuredClone(document)) as never);
  return `${banner}${astToString(ast)}`;
}

const banner =
  "// Generated from the gateway's OpenAPI document by gateway/sdk/scripts/generate-types.ts. Do not edit.\n\n";

function withoutRequiredAlternatives(value: unknown): unknown {
  if (Array.isArray(value)) value.forEach(withoutRequiredAlternatives);
  else if (typeof value === "object" && value !== null) {
    const record = value as Record<string, unknown>;
    const { anyOf } = record;
    if (Array.isArray(anyOf) && anyOf.every(onlyRequired)) delete record.anyOf;
    Object.values(record).forEach(withoutRequiredAlternatives);
  }
  return value;
}

const onlyRequired = (branch: unknown) =>
  typeof branch === "object" && branch !== null && Object.keys(branch).every((key) => key === "required");

if (import.meta.main) {
  const [source, target] = process.argv.slice(2);
  if (source === undefined || target === undefined) throw new Error("usage: generate-types.ts OPENAPI.json OUTPUT.ts");
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, await typesOf(JSON.parse(readFileSync(source, "utf8"))));
}

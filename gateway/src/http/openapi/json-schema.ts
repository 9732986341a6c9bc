import { type Schema, uuidV4Pattern } from "../schema.ts";
import type { Json } from "./part.ts";

/** Our schema subset as JSON Schema 2020-12 (OpenAPI 3.1): `nullable` becomes a type union, `uuid-v4` a uuid with its pattern. */
export function jsonSchemaOf(schema: Schema): Json {
  const out: Json = {};
  const type = schema.nullable ? [schema.type, "null"] : schema.type;
  out.type = type;
  if (schema.description !== undefined) out.description = schema.description;
  if (schema.deprecated) out.deprecated = true;
  switch (schema.type) {
    case "string":
      if (schema.minLength !== undefined) out.minLength = schema.minLength;
      if (schema.maxLength !== undefined) out.maxLength = schema.maxLength;
      if (schema.format === "uuid-v4") Object.assign(out, { format: "uuid", pattern: uuidV4Pattern.source });
      else if (schema.format !== undefined) out.format = schema.format;
      if (schema.pattern !== undefined) out.pattern = schema.pattern;
      if (schema.enum) out.enum = schema.nullable ? [...schema.enum, null] : [...schema.enum];
      if (schema.default !== undefined) out.default = schema.default;
      break;
    case "integer":
    case "number":
      if (schema.minimum !== undefined) out.minimum = schema.minimum;
      if (schema.maximum !== undefined) out.maximum = schema.maximum;
      if (schema.default !== undefined) out.default = schema.default;
      break;
    case "boolean":
      if (schema.default !== undefined) out.default = schema.default;
      break;
    case "array":
      out.items = jsonSchemaOf(schema.items);
      if (schema.minItems !== undefined) out.minItems = schema.minItems;
      if (schema.maxItems !== undefined) out.maxItems = schema.maxItems;
      break;
    case "object":
      if (schema.properties)
        out.properties = Object.fromEntries(
          Object.entries(schema.properties).map(([name, p]) => [name, jsonSchemaOf(p)]),
        );
      if (schema.required && schema.required.length > 0) out.required = [...schema.required];
      if (schema.additionalProperties) out.additionalProperties = true;
      break;
  }
  return out;
}

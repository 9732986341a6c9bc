import type { Json, OpenApiPart } from "../http/openapi/part.ts";
import { ref } from "../http/openapi/part.ts";
import type { AliasRow } from "./aliases.ts";

/** The rename window in the OpenAPI document: old names as deprecated, and the deprecation signals. */

const until = (sunset: Date) => sunset.toISOString().slice(0, 10);

/** Adds the old names of a request's fields, deprecated; a required field may come under either name. */
function withRequestAliases(schema: Json, rows: readonly AliasRow[], sunset: Date): Json {
  const properties = { ...(schema.properties as Record<string, Json> | undefined) };
  let required = [...((schema.required as string[] | undefined) ?? [])];
  const anyOf: Json[] = [];
  for (const row of rows) {
    const current = properties[row.new];
    if (!current) continue;
    if (row.values) {
      const oldValues = row.values.filter((v) => v.old !== v.new);
      const accepted = Array.isArray(current.enum)
        ? { enum: [...(current.enum as unknown[]), ...new Set(oldValues.map((v) => v.old))] }
        : {};
      properties[row.new] = {
        ...current,
        ...accepted,
        description:
          `${current.description ?? ""} Old values are read as new ones until ${until(sunset)}: ${oldValues.map((v) => `${v.old} → ${v.new}`).join(", ")}.`.trim(),
      };
    }
    if (row.old !== row.new) {
      properties[row.old] = {
        ...current,
        deprecated: true,
        description: `Old name of \`${row.new}\`, accepted until ${until(sunset)}; \`${row.new}\` wins when both are sent.`,
      };
      if (required.includes(row.new)) {
        required = required.filter((name) => name !== row.new);
        anyOf.push({ required: [row.new] }, { required: [row.old] });
      }
    }
  }
  const out: Json = { ...schema, properties };
  if (required.length > 0) out.required = required;
  else delete out.required;
  if (anyOf.length > 0) out.anyOf = anyOf;
  return out;
}

/** Adds the old names a result carries during the window, deprecated. */
function withResultAliases(schema: Json, rows: readonly AliasRow[], sunset: Date): Json {
  if (rows.length === 0) return schema;
  const properties = { ...(schema.properties as Record<string, Json> | undefined) };
  for (const row of rows) {
    const description = row.values
      ? `The old value of \`${row.new}\` (${row.values.map((v) => `${v.new} → ${v.old}`).join(", ")}), until ${until(sunset)}.`
      : `Same value as \`${row.new}\`, under its old name, until ${until(sunset)}.`;
    properties[row.old] = { type: "string", deprecated: true, description };
  }
  return { ...schema, properties };
}

export function renameWindowPart(aliases: readonly AliasRow[], sunset: Date): OpenApiPart {
  return {
    overview: `Old names (\`scope\`, \`enroll\`, old gate status values) keep working until ${until(sunset)}; such a request gets \`Deprecation\`, \`Sunset\` and \`Link\` headers and \`_deprecation\`. From then on an old name alone is refused with \`alias_retired\`.`,
    components: {
      schemas: {
        Deprecation: {
          type: "object",
          description: `Beside the result when the request used an old name alone (until ${until(sunset)}).`,
          required: ["used", "sunset", "link"],
          properties: {
            used: {
              type: "array",
              items: {
                type: "object",
                required: ["old", "new"],
                properties: { old: { type: "string" }, new: { type: "string" } },
              },
            },
            sunset: { type: "string", format: "date-time" },
            link: { type: "string", format: "uri" },
          },
        },
      },
      headers: {
        Deprecation: {
          description: "`true` when the request used an old name alone.",
          schema: { type: "string", enum: ["true"] },
        },
        Sunset: { description: "When old names stop working (HTTP-date).", schema: { type: "string" } },
        Link: { description: 'Where the rename is described, `rel="deprecation"`.', schema: { type: "string" } },
      },
    },
    extras: { _deprecation: ref("schemas", "Deprecation") },
    operation: (route) => {
      const rows = aliases.filter((row) => row.operationId === route.operationId);
      if (rows.length === 0) return {};
      return {
        input: (schema) =>
          withRequestAliases(
            schema,
            rows.filter((row) => row.in !== "result"),
            sunset,
          ),
        result: (schema) =>
          withResultAliases(
            schema,
            rows.filter((row) => row.in === "result"),
            sunset,
          ),
        headers: {
          Deprecation: ref("headers", "Deprecation"),
          Sunset: ref("headers", "Sunset"),
          Link: ref("headers", "Link"),
        },
        extras: { _deprecation: ref("schemas", "Deprecation") },
      };
    },
  };
}

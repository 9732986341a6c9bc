import type { CredentialKindName } from "../credential.ts";
import type { Route } from "../route.ts";
import type { ObjectSchema } from "../schema.ts";
import { jsonSchemaOf } from "./json-schema.ts";
import { type Json, type OpenApiPart, ref } from "./part.ts";

/** The name of a credential kind's security scheme in the document, and the scheme. */
export type SecuritySchemes = Record<CredentialKindName, { name: string; scheme: Json }>;

/** The refusals of a missing required field (`gate_required`), which come as `data.error` rather than a 400. */
const missingRefusals = (route: Route): string =>
  Object.entries(route.refuseMissing ?? {})
    .map(
      ([field, refusal]) =>
        ` Without \`${field}\` (under any of its names): \`data.error\` \`{statusCode: 400, code: "${refusal.code}"}\`, message "${refusal.message}".`,
    )
    .join("");

/** One operation: its input, its answers in the envelope, and what each part adds. */
export function operationOf(route: Route, parts: readonly OpenApiPart[], securitySchemes: SecuritySchemes): Json {
  const additions = parts.map((part) => part.operation?.(route) ?? {});
  const input = additions.reduce(
    (schema, added) => added.input?.(schema) ?? schema,
    jsonSchemaOf(route.input as ObjectSchema),
  );
  const result = additions.reduce(
    (schema, added) => added.result?.(schema) ?? schema,
    route.output ? jsonSchemaOf(route.output) : { type: "object", description: "not described" },
  );
  const answered =
    route.envelope === "nested" ? { type: "object", required: ["data"], properties: { data: result } } : result;
  const parameters = additions.flatMap((added) => added.parameters ?? []);
  const operation: Json = {
    operationId: route.operationId,
    summary: route.summary,
    security: route.auth.accepts.map((kind) => ({ [securitySchemes[kind].name]: [] })),
    responses: {
      "200": {
        description: `Answered: the result in ${route.envelope === "nested" ? "`data.data`" : "`data`"}, or a refusal in \`data.error\`; check \`data.error\` first.${missingRefusals(route)}`,
        headers: Object.assign({}, ...additions.map((added) => added.headers)),
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["data"],
              properties: {
                data: {
                  oneOf: [
                    answered,
                    { type: "object", required: ["error"], properties: { error: ref("schemas", "EnvelopeError") } },
                  ],
                },
                ...Object.assign({}, ...additions.map((added) => added.extras)),
              },
            },
          },
          ...(route.produces === "text/event-stream" && {
            "text/event-stream": {
              schema: {
                type: "string",
                description: `Server-Sent Events once authenticated: each \`data:\` line is one JSON object shaped as this schema's \`x-event-data\`; a refusal comes as application/json instead.`,
                "x-event-data": result,
              },
            },
          }),
        },
      },
      "400": ref("responses", "InputValidationError"),
      ...Object.assign({}, ...additions.map((added) => added.responses)),
      "500": ref("responses", "Unhandled"),
    },
  };
  if (route.method === "POST") {
    operation.parameters = parameters;
    operation.requestBody = {
      required: false,
      description: "A JSON object; an empty body is `{}`. Unknown fields are ignored.",
      content: { "application/json": { schema: input } },
    };
  } else {
    const properties = (input.properties ?? {}) as Record<string, Json>;
    const required = (input.required ?? []) as string[];
    operation.parameters = [
      ...parameters,
      ...Object.entries(properties).map(([name, schema]) => {
        const { description, deprecated, ...rest } = schema;
        return {
          name,
          in: route.method === "DELETE" ? "path" : "query",
          required: route.method === "DELETE" || required.includes(name),
          schema: rest,
          ...(description !== undefined && { description }),
          ...(deprecated === true && { deprecated: true }),
        };
      }),
    ];
  }
  return operation;
}

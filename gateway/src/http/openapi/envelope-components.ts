import type { Components, Json, OpenApiPart } from "./part.ts";
import { ref } from "./part.ts";

/** The document's first words: the envelope every operation answers in. */
export const envelopeOverview = [
  "Every operation answers HTTP 200 with `data`: the result in `data.data` (flat `data` for the operations so marked), a refusal in `data.error`.",
  "Only input validation (400), a rate limit (403 `RATE_LIMITED`) and an unhandled failure (500) use another status.",
].join(" ");

/**
 * What the server answers, on any path, to a request it cannot read, before any route runs
 * (`public-server.ts`); in the 400's shape.
 */
export const requestNotReadResponses: Record<string, Json> = Object.fromEntries(
  ["400", "408", "417", "431"].map((status) => [status, ref("responses", "RequestNotRead")]),
);

/** The envelope's refusal, the 400, the 500 and a request not read, with what the parts add to them. */
export function envelopeComponents(parts: readonly OpenApiPart[]): Components {
  const extras: Record<string, Json> = Object.assign({}, ...parts.map((part) => part.extras));
  return {
    schemas: {
      EnvelopeError: {
        type: "object",
        description: [
          "An operation that ran and refused (HTTP 200). Branch on `statusCode`. Authentication refusals carry only `statusCode` and `message`, except where an operation's error table names a code (secured-accounts list: `api_key_required`, `invalid_api_key`).",
          ...parts.flatMap((part) => part.refusals ?? []),
        ].join(" "),
        required: ["statusCode", "message"],
        properties: {
          statusCode: { type: "integer", enum: [400, 401, 403, 404, 409, 410, 422, 429, 500, 502] },
          message: { type: "string" },
          code: { type: "string" },
        },
        additionalProperties: true,
      },
      InputValidationError: {
        type: "object",
        required: ["code", "message", "input", "errors"],
        properties: {
          code: { const: "InputValidationError" },
          message: { type: "string" },
          input: { type: "object", description: "the input as received" },
          errors: {
            type: "array",
            items: {
              type: "object",
              required: ["propertyPath", "invalidValue", "message"],
              properties: { propertyPath: { type: "string" }, invalidValue: {}, message: { type: "string" } },
            },
          },
          ...extras,
        },
      },
    },
    responses: {
      InputValidationError: {
        description: "The input failed validation before the operation ran.",
        content: { "application/json": { schema: ref("schemas", "InputValidationError") } },
      },
      RequestNotRead: {
        description:
          "The request was not read, so nothing ran: 400 for one that is not valid HTTP/1.1, has no `Host` or a target that is not a URL, 408 for one that did not arrive in time, 417 for an `Expect` other than 100-continue, 431 for headers over the limit. The body has the InputValidationError shape, with `input` empty.",
        content: { "application/json": { schema: ref("schemas", "InputValidationError") } },
      },
      Unhandled: {
        description: "Unhandled failure; retry with backoff.",
        content: { "application/json": { schema: { type: "object", properties: { message: { type: "string" } } } } },
      },
    },
  };
}

import type { components, operations } from "./gen/openapi.ts";

/**
 * Types of each operation, read off the types generated from the OpenAPI document, so a field the gateway
 * adds, renames or retires shows up here at the next build.
 */
export type OperationId = keyof operations;

type Answer<Op extends OperationId> = operations[Op]["responses"] extends {
  200: { content: { "application/json": infer A } };
}
  ? A
  : never;

/** `data` of an answer without its refusal branch. */
type Answered<Op extends OperationId> = Exclude<Answer<Op> extends { data: infer D } ? D : never, { error: unknown }>;

/** What the operation returns: `data.data`, or the flat `data` of the operations the spec so marks. */
export type Result<Op extends OperationId> = Answered<Op> extends { data: infer R } ? R : Answered<Op>;

/** The JSON body of a POST operation. */
export type Body<Op extends OperationId> =
  NonNullable<operations[Op]["requestBody"]> extends {
    content: { "application/json": infer B };
  }
    ? B
    : never;

/** The query parameters of a GET operation. */
export type Query<Op extends OperationId> = operations[Op]["parameters"] extends { query?: infer Q }
  ? NonNullable<Q>
  : never;

export type EnvelopeError = components["schemas"]["EnvelopeError"];
export type InputValidationAnswer = components["schemas"]["InputValidationError"];
export type RateLimitedAnswer = components["schemas"]["RateLimited"];
export type RateLimitReport = components["schemas"]["RateLimit"];

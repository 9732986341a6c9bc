import type { Route } from "../route.ts";

/** A JSON object of the document: a schema, a response, a path item. */
export type Json = Record<string, unknown>;

/** The reusable pieces of the document, by kind, each by name. */
export interface Components {
  schemas?: Record<string, Json>;
  headers?: Record<string, Json>;
  parameters?: Record<string, Json>;
  responses?: Record<string, Json>;
  securitySchemes?: Record<string, Json>;
}

export const ref = (kind: keyof Components, name: string): Json => ({ $ref: `#/components/${kind}/${name}` });

/**
 * What one feature of the gateway adds to the document (the rate limits, the rename window,
 * `Idempotency-Key`, CORS), so that the assembly (`document.ts`) knows none of them: the feature writes
 * its part beside its own code and the document's caller lists it.
 */
export interface OpenApiPart {
  /** Sentences of the document's description, after the envelope's, in the order the parts are listed. */
  overview?: string;
  /** Sentences of `EnvelopeError`'s description: refusals the feature may give on any operation. */
  refusals?: string;
  components?: Components;
  /** Members it may add beside the body of any answer, so also beside a 400's (`_rateLimit`). */
  extras?: Record<string, Json>;
  /** Path items of its own, made from the operations (a CORS preflight per path). */
  paths?(routes: readonly Route[]): Record<string, Json>;
  /** What it adds to one operation. */
  operation?(route: Route): OperationAdditions;
}

/** A part's additions to one operation; each member absent adds nothing. */
interface OperationAdditions {
  /** The input's JSON Schema (a POST's body, a GET's query parameters) as the feature accepts it. */
  input?(schema: Json): Json;
  /** The result's JSON Schema as the feature answers it. */
  result?(schema: Json): Json;
  /** Headers of the answered (HTTP 200) response. */
  headers?: Record<string, Json>;
  /** Members beside `data` in the answered response. */
  extras?: Record<string, Json>;
  /** Request parameters outside the input (headers). */
  parameters?: Json[];
  /** Responses beside the answered one, the 400 and the 500. */
  responses?: Record<string, Json>;
}

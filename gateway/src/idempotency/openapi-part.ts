import type { OpenApiPart } from "../http/openapi/part.ts";
import { ref } from "../http/openapi/part.ts";
import { idempotencyHeader } from "./idempotency-key.ts";
import { replayedHeader } from "./idempotency-stage.ts";

/** `Idempotency-Key` in the OpenAPI document: the header every POST takes, a replay's header, the 409s. */

const description = [
  "Makes a retry safe: the same key with the same request (method, path and the input as validated) answers the first final answer again, result or `data.error`, for 24 hours, without running the operation (the request still counts against rate limits).",
  "The same key with another request is `data.error` 409 `idempotency_key_reused`; while the first request runs, 409 `idempotency_key_in_use`.",
  'A `data.error` 500 or 502 ("retry"), a 400 and an HTTP 500 are not stored: the retry runs the operation again, and create-verification-link then answers the request its lost first call created.',
  "Keys are scoped to the credential (API key, agent key, user session, grant token); verify-token's to the token, the web flow's to its flow secret.",
].join(" ");

export const idempotencyPart: OpenApiPart = {
  overview: `Every POST takes an \`${idempotencyHeader}\` header for safe retries (see the IdempotencyKey parameter).`,
  refusals:
    "Every POST may answer 409 `idempotency_key_reused` (the key was first used with another request) or 409 `idempotency_key_in_use` (its first request is still running; retry later).",
  components: {
    headers: {
      IdempotentReplayed: {
        description: `\`true\` when the answer is the stored first answer of the request's \`${idempotencyHeader}\`, not a new run.`,
        schema: { type: "string", enum: ["true"] },
      },
    },
    parameters: {
      IdempotencyKey: {
        name: idempotencyHeader,
        in: "header",
        required: false,
        description,
        schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x20-\\x7e]+$" },
      },
    },
  },
  operation: (route) =>
    route.method === "POST"
      ? {
          parameters: [ref("parameters", "IdempotencyKey")],
          headers: { [replayedHeader]: ref("headers", "IdempotentReplayed") },
        }
      : {},
};

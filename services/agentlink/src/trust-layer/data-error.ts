import type { Rejected, Unavailable } from "./screen.ts";
import type { Violation } from "./violation.ts";

/** The `data.error` of an inquire the trust layer did not accept (interface spec, `data.error` fields). */
export type TrustLayerError =
  | {
      statusCode: 422;
      code: "trust_layer_rejected";
      message: string;
      retryable: false;
      next_step: string;
      violations: Violation[];
    }
  | { statusCode: 502; code: "trust_layer_unavailable"; message: string; retryable: true; next_step: string };

export function trustLayerError(result: Rejected | Unavailable): TrustLayerError {
  if (result.kind === "rejected") {
    const errors = result.violations.filter((violation) => violation.severity === "error").length;
    return {
      statusCode: 422,
      code: "trust_layer_rejected",
      message: `The card was rejected by the trust layer (${errors} error${errors === 1 ? "" : "s"}).`,
      retryable: false,
      next_step: "Fix the violations and send the inquire again; nothing was stored.",
      violations: result.violations,
    };
  }
  return {
    statusCode: 502,
    code: "trust_layer_unavailable",
    message: "The trust layer could not screen the card.",
    retryable: true,
    next_step: result.nextStep,
  };
}

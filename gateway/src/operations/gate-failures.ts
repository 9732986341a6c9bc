import { Code, ConnectError } from "@connectrpc/connect";
import { OperationError } from "../http/errors.ts";

/** The gate service's deliberate refusals; they keep their mapped status (401, 400, 403, 404, 409). */
const refusals = new Set([
  Code.Unauthenticated,
  Code.InvalidArgument,
  Code.PermissionDenied,
  Code.NotFound,
  Code.FailedPrecondition,
]);

/**
 * The gate operations' error tables name 500 for "could not be created / revoke failed; retry": any
 * failure of the gate service that is not a deliberate refusal becomes that `data.error` 500.
 */
export async function failingAs500<T>(message: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ConnectError && !refusals.has(error.code)) throw new OperationError(500, message);
    throw error;
  }
}

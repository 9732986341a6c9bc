import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

/** A call as an interceptor sees it: what `next` takes and gives. */
export type AnyFn = Parameters<Interceptor>[0];

/** `call` behind `interceptors`, the first outermost, as Connect applies them. */
export const behindInterceptors = (interceptors: Interceptor[], call: AnyFn): AnyFn =>
  interceptors.reduceRight<AnyFn>((inner, interceptor) => interceptor(inner), call);

/** Aborts `controller` as deadline_exceeded after `timeoutMs`; clear the timer it returns once the call ended. */
export const abortAtDeadline = (controller: AbortController, timeoutMs: number | undefined) =>
  timeoutMs === undefined
    ? undefined
    : setTimeout(() => controller.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded)), timeoutMs);

import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { counter, durationHistogram } from "./metrics.ts";
import { connectCodeName } from "./rpc-tracing.ts";

const calls = counter("rpc_server_requests_total", "Connect RPCs served, by method and Connect status code", [
  "rpc_service",
  "rpc_method",
  "code",
]);
const durations = durationHistogram("rpc_server_duration_seconds", "Time to answer a Connect RPC, in seconds", [
  "rpc_service",
  "rpc_method",
]);

/** Counts and times every RPC this server answers. */
export const rpcServerMetrics: Interceptor = (next) => async (req) => {
  const labels = { rpc_service: req.service.typeName, rpc_method: req.method.name };
  const started = performance.now();
  let code = "ok";
  try {
    return await next(req);
  } catch (error) {
    code = connectCodeName(ConnectError.from(error).code);
    throw error;
  } finally {
    calls.inc({ ...labels, code });
    durations.observe(labels, (performance.now() - started) / 1000);
  }
};

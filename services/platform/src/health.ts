import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import {
  Health,
  type HealthCheckRequest,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "@svc/proto/grpc/health/v1/health_pb.js";

/** Path prefix of the health service's calls, which no caller check stands in front of (they are probes). */
export const healthPathPrefix = `/${Health.typeName}/`;

/** How often a Watch reads readiness again; a stop is sent at once. */
const watchEveryMs = 5000;

/**
 * The standard grpc.health.v1.Health beside /healthz and /readyz, for Kubernetes' `grpc` probes and mesh
 * tooling: the server as a whole ("") and each service it serves are SERVING while `ready` passes and
 * the server is not stopping, NOT_SERVING otherwise, so a Check answers what /readyz answers.
 */
export function healthRoutes(options: {
  served: ReadonlySet<string>;
  ready: () => Promise<void>;
  stopping: AbortSignal;
}): (router: ConnectRouter) => void {
  const status = async (service: string): Promise<ServingStatus> => {
    if (service !== "" && !options.served.has(service)) return ServingStatus.SERVICE_UNKNOWN;
    if (options.stopping.aborted) return ServingStatus.NOT_SERVING;
    return options.ready().then(
      () => (options.stopping.aborted ? ServingStatus.NOT_SERVING : ServingStatus.SERVING),
      () => ServingStatus.NOT_SERVING,
    );
  };
  return (router) =>
    router.service(Health, {
      async check(request: HealthCheckRequest) {
        const now = await status(request.service);
        if (now === ServingStatus.SERVICE_UNKNOWN)
          throw new ConnectError(`unknown service ${JSON.stringify(request.service)}`, Code.NotFound);
        return { status: now };
      },
      async *watch(request: HealthCheckRequest, context: HandlerContext) {
        const until = AbortSignal.any([context.signal, options.stopping]);
        let sent: ServingStatus | undefined;
        for (;;) {
          const now = await status(request.service);
          if (now !== sent) yield { status: now };
          sent = now;
          if (until.aborted) return;
          await sleep(watchEveryMs, undefined, { signal: until }).catch(() => {});
        }
      },
    });
}

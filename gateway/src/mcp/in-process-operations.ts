import type { IncomingMessage } from "node:http";
import { type AgentOperations, type Answer, rateLimitRefusal } from "@svc/mcp-tools";
import type { Clock, Logger } from "@svc/platform";
import { Verifier } from "@svc/sdk";
import type { AuthenticatedCredential } from "../http/credential.ts";
import { unhandledBody } from "../http/errors.ts";
import { type RequestContext, runPipeline, type Stage } from "../http/pipeline.ts";
import type { Route } from "../http/route.ts";
import { bindSessionRoute, checkBindingRoute } from "../operations/agent-binding.ts";
import { cancelRoute, checkStatusRoute, inquireRoute } from "../operations/agent-proposals.ts";
import type { KeySetCache } from "../operations/jwks.ts";
import type { GatewayServices } from "../services.ts";

/** What every tool call of one MCP request shares: the stages a call runs and what they reach. */
export interface InProcessSetting {
  /** After authenticate (done once for the HTTP request): the rate limit, validate and handle stages. */
  stages: readonly Stage[];
  services: GatewayServices;
  clock: Clock;
  logger: Logger;
  verifier: Pick<Verifier, "verifyProof">;
}

/**
 * verify_proof's verifier, the SDK's: the key set it fetches is read from this process's cache (as served at
 * `/.well-known/jwks.json`) rather than over the network.
 */
export function proofVerifier(publicOrigin: string, keySet: KeySetCache): Verifier {
  const ownKeySet = async () => {
    const keys = await keySet.keys();
    return keys ? Response.json({ keys }) : new Response(null, { status: 503 });
  };
  return new Verifier({ issuer: publicOrigin, fetch: ownKeySet as typeof fetch });
}

/**
 * The agent operations run in this process as their JSON routes run them, stage for stage after
 * authentication (the rate limit counts each call as one request of its route), without HTTP: a tool call
 * costs what the route costs, plus MCP's framing.
 */
export function inProcessOperations(
  setting: InProcessSetting,
  request: { incoming: IncomingMessage; url: URL; credential: AuthenticatedCredential },
): AgentOperations {
  const run = async (route: Route, rawInput: Record<string, unknown>, signal?: AbortSignal): Promise<Answer> => {
    const ctx: RequestContext = {
      route,
      request: request.incoming,
      url: request.url,
      headers: request.incoming.headers,
      remoteAddress: request.incoming.socket.remoteAddress,
      rawInput,
      input: undefined,
      credential: request.credential,
      extras: {},
      responseHeaders: {},
      services: setting.services,
      clock: setting.clock,
      logger: setting.logger,
      signal: signal ?? new AbortController().signal,
    };
    const outcome = await runPipeline(setting.stages, ctx);
    const log = { operation: route.operationId, via: "mcp", credential_id: request.credential.caller.credentialId };
    switch (outcome.kind) {
      case "ok":
        return { ok: true, data: outcome.data as Record<string, unknown> };
      case "error":
        if (outcome.cause !== undefined)
          setting.logger.warn("a service behind the gateway failed", { ...log, error: outcome.cause });
        return { ok: false, error: outcome.error };
      case "invalid":
        return { ok: false, error: { statusCode: 400, ...outcome.body } };
      case "http":
        return { ok: false, error: rateLimitRefusal(outcome.body) };
      default:
        setting.logger.error("unhandled failure", {
          ...log,
          error: outcome.kind === "unhandled" ? outcome.error : outcome,
        });
        return { ok: false, error: { statusCode: 500, message: unhandledBody.message } };
    }
  };
  return {
    bindSession: (input) => run(bindSessionRoute, input),
    checkBinding: (input) => run(checkBindingRoute, input),
    inquire: (input) => run(inquireRoute, input),
    checkStatus: (input, signal) => run(checkStatusRoute, input, signal),
    cancel: (input) => run(cancelRoute, input),
    verifier: setting.verifier,
  };
}

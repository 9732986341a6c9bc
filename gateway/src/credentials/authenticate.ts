import { create } from "@bufbuild/protobuf";
import { type Clock, environmentProto } from "@svc/platform";
import { type Caller, CallerSchema, CredentialKind } from "@svc/proto/common/v1/caller_pb.js";
import { type AuthFailure, bearerCredential, type CredentialKindName } from "../http/credential.ts";
import { unauthenticated } from "../http/edge-metrics.ts";
import { OperationError } from "../http/errors.ts";
import type { Stage } from "../http/pipeline.ts";
import type { AuthPolicy } from "../http/route.ts";
import { readIdempotencyKey } from "../idempotency/idempotency-key.ts";
import { agentKeyCause, agentKeyRefusalMessage } from "./agent-key.ts";
import type { CredentialDirectory } from "./directory.ts";
import type { ApiKey } from "./entities.ts";
import { apiKeyTypeOf, type KeyType } from "./key-format.ts";
import type { CredentialRequest, CredentialResolver, Presented, Resolution } from "./resolver.ts";

const defaultStatus: Record<AuthFailure, 401 | 403> = {
  missing_bearer: 401,
  unrecognized_credential: 401,
  credential_not_accepted: 401,
  invalid_key: 401,
  revoked_key: 401,
  expired_key: 401,
  invalid_site_key: 401,
  revoked_site_key: 401,
  expired_site_key: 401,
  origin_required: 403,
  origin_not_allowed: 403,
  wrong_key_form: 401,
  unknown_agent_name: 401,
  other_environment: 401,
  revoked_agent: 401,
  wrong_secret: 401,
};

const kindNames: Record<CredentialKindName, string> = {
  secret_key: "a secret API key",
  site_key: "a site key",
  grant_token: "a grant token",
  agent_key: "an agent key",
  user_session: "a user session",
};

/**
 * Per route: no credential needed, or exactly one of the kinds it accepts, resolved and checked.
 * A refusal is `data.error` with `statusCode` and `message` only (spec "Machine codes"), plus `code`
 * where the route's `auth.codeFor` names one.
 */
export function authenticateStage(resolvers: readonly CredentialResolver[]): Stage {
  return {
    name: "authenticate",
    async run(ctx, next) {
      const policy = ctx.route.auth;
      if (policy.accepts.length === 0) return next();
      const idempotency = ctx.route.method === "POST" ? readIdempotencyKey(ctx.headers) : undefined;
      const resolution = await authenticate(resolvers, policy, {
        authorization: ctx.headers.authorization,
        origin: typeof ctx.headers.origin === "string" ? ctx.headers.origin : undefined,
        ...(idempotency?.kind === "key" ? { idempotencyKey: idempotency.key } : {}),
      });
      if (!resolution.ok && policy.accepts.includes("agent_key")) {
        // One log line with the cause; the partner reads the same 401 for all six (rule 4).
        const cause = agentKeyCause(resolution.failure);
        ctx.logger.warn("agent key refused", { cause, operation: ctx.route.operationId });
        unauthenticated.inc({ cause });
        throw new OperationError(401, agentKeyRefusalMessage);
      }
      if (!resolution.ok) {
        const code = policy.codeFor?.[resolution.failure];
        const status = policy.statusFor?.[resolution.failure] ?? defaultStatus[resolution.failure];
        if (status === 401) unauthenticated.inc({ cause: resolution.failure });
        throw new OperationError(status, resolution.message, code === undefined ? {} : { code });
      }
      if ("presented" in resolution) ctx.grant = resolution.presented;
      else ctx.credential = resolution.credential;
      return next();
    },
  };
}

export async function authenticate<Answer extends Presented>(
  resolvers: readonly CredentialResolver<Answer>[],
  policy: AuthPolicy,
  request: { authorization: string | undefined } & CredentialRequest,
): Promise<Answer | Resolution> {
  const credential = bearerCredential(request.authorization);
  if (credential === undefined)
    return {
      ok: false,
      failure: "missing_bearer",
      message: "send the credential as Authorization: Bearer <credential>",
    };
  const resolver = resolvers.find((r) => r.recognizes(credential));
  if (!resolver)
    return {
      ok: false,
      failure: "unrecognized_credential",
      message: "the credential is not in a form this service issues",
    };
  if (!policy.accepts.includes(resolver.kind)) {
    const accepted = policy.accepts.map((k) => kindNames[k]).join(" or ");
    return {
      ok: false,
      failure: "credential_not_accepted",
      message: `this operation takes ${accepted}, not ${kindNames[resolver.kind]}`,
    };
  }
  const { authorization: _, ...rest } = request;
  return resolver.resolve(credential, rest);
}

function callerOf(key: ApiKey): Caller {
  return create(CallerSchema, {
    organizationId: key.organizationId,
    environment: environmentProto(key.environment),
    credentialId: key.id,
    credentialKind: key.type === "secret" ? CredentialKind.SECRET_KEY : CredentialKind.SITE_KEY,
  });
}

/** Secret keys (`svc_dev_`, `svc_production_`/`svc_prod_`) and site keys (`pk_test_`, `pk_live_`) from the directory. */
export function apiKeyResolvers(
  directory: Pick<CredentialDirectory, "findKey">,
  clock: Clock,
): CredentialResolver<Resolution>[] {
  const resolverFor = (type: KeyType): CredentialResolver<Resolution> => {
    const kind: CredentialKindName = type === "secret" ? "secret_key" : "site_key";
    const failures =
      type === "secret"
        ? (["invalid_key", "revoked_key", "expired_key"] as const)
        : (["invalid_site_key", "revoked_site_key", "expired_site_key"] as const);
    const noun = type === "secret" ? "API key" : "site key";
    return {
      kind,
      recognizes: (credential) => apiKeyTypeOf(credential) === type,
      async resolve(credential, request) {
        const key = await directory.findKey(credential);
        if (!key) return { ok: false, failure: failures[0], message: `the ${noun} is not valid` };
        if (key.revokedAt) return { ok: false, failure: failures[1], message: `the ${noun} has been revoked` };
        if (key.expiresAt && key.expiresAt.getTime() <= clock.now().getTime())
          return { ok: false, failure: failures[2], message: `the ${noun} has expired` };
        const base = { kind, caller: callerOf(key), allowedGates: key.allowedGates };
        if (type === "secret") return { ok: true, credential: base };
        if (request.origin === undefined)
          return {
            ok: false,
            failure: "origin_required",
            message: "a site key is accepted only from a browser sending an allowed Origin",
          };
        if (!key.allowedOrigins.includes(request.origin))
          return {
            ok: false,
            failure: "origin_not_allowed",
            message: `origin ${request.origin} is not allowed for this site key`,
          };
        return { ok: true, credential: { ...base, origin: request.origin } };
      },
    };
  };
  return [resolverFor("secret"), resolverFor("site")];
}

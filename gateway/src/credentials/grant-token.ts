import type { KeyObject } from "node:crypto";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import type { GateService } from "@svc/proto/gate/v1/gate_pb.js";
import { OperationError } from "../http/errors.ts";
import { grantTokenScope, scopedKeyHash } from "../idempotency/idempotency-key.ts";
import type { CredentialResolver } from "./resolver.ts";

/** The grant-token prefix (spec "Authentication"); what follows is the gate service's business. */
const grantTokenPrefix = "svcs_";

/**
 * Grant tokens belong to the gate service: the gateway recognises them by prefix and asks gate which
 * session one stands for. Asking does not consume the token; create-verification-link does, in gate.
 * With an `Idempotency-Key`, gate also accepts a token already consumed by a create with that same key
 * (scoped to the token, as the idempotency stage names it): the retry of a create whose answer was lost
 * then reaches gate, which answers the request it created.
 */
export function grantTokenResolver(
  gate: Pick<Client<typeof GateService>, "authenticateGrant">,
  pepper: KeyObject,
): CredentialResolver {
  return {
    kind: "grant_token",
    recognizes: (credential) => credential.startsWith(grantTokenPrefix),
    async resolve(credential, request) {
      const idempotencyToken =
        request.idempotencyKey === undefined
          ? ""
          : scopedKeyHash(pepper, grantTokenScope(credential), request.idempotencyKey).toString("base64url");
      try {
        const session = await gate.authenticateGrant({ anchorGrantToken: credential, idempotencyToken });
        if (!session.caller) throw new Error("gate answered a grant token without its caller");
        return {
          ok: true,
          credential: { kind: "grant_token", caller: session.caller, allowedGates: session.allowedGates },
        };
      } catch (error) {
        if (!(error instanceof ConnectError)) throw error;
        if (error.code === Code.Unauthenticated)
          return { ok: false, failure: "invalid_key", message: error.rawMessage };
        // The only operation taking a grant token is create-verification-link, whose table says 500.
        throw new OperationError(500, "the request could not be created; retry");
      }
    },
  };
}

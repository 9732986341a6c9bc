import type { KeyObject } from "node:crypto";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import type { Caller } from "@svc/proto/common/v1/caller_pb.js";
import type { GateService } from "@svc/proto/gate/v1/gate_pb.js";
import type { AuthenticatedCredential } from "../http/credential.ts";
import { OperationError } from "../http/errors.ts";
import { grantTokenScope, scopedKeyHash } from "../idempotency/idempotency-key.ts";
import type { CredentialResolver, PresentedGrant, Resolution } from "./resolver.ts";

/** The grant-token prefix (spec "Authentication"); what follows is the gate service's business. */
const grantTokenPrefix = "svcs_";

/**
 * A grant token as presented, before gate has authenticated it. The only operation taking one,
 * create-verification-link, hands the token to gate, which authenticates and consumes it in the same
 * call and answers its caller (`accepted`): one call to gate instead of two. Every other ending (the
 * rate limiter's refusal, a 400, one of gate's refusals, a replayed `Idempotency-Key`) asks gate who
 * the token stands for (`confirm`, which consumes nothing), so an invalid token still reads 401 first.
 */
class PresentedGrantToken implements PresentedGrant {
  readonly token: string;
  readonly idempotencyToken: string;
  readonly #gate: Pick<Client<typeof GateService>, "authenticateGrant">;
  #credential: AuthenticatedCredential | undefined;

  constructor(token: string, idempotencyToken: string, gate: Pick<Client<typeof GateService>, "authenticateGrant">) {
    this.token = token;
    this.idempotencyToken = idempotencyToken;
    this.#gate = gate;
  }

  get credential(): AuthenticatedCredential | undefined {
    return this.#credential;
  }

  /** Gate also applied the session's allowed gates. */
  accepted(caller: Caller | undefined): void {
    if (!caller) throw new Error("gate accepted a grant token without naming its caller");
    this.#credential = { kind: "grant_token", caller, allowedGates: [] };
  }

  async confirm(): Promise<Resolution> {
    if (this.#credential) return { ok: true, credential: this.#credential };
    try {
      const session = await this.#gate.authenticateGrant({
        anchorGrantToken: this.token,
        idempotencyToken: this.idempotencyToken,
      });
      if (!session.caller) throw new Error("gate answered a grant token without its caller");
      this.#credential = { kind: "grant_token", caller: session.caller, allowedGates: session.allowedGates };
      return { ok: true, credential: this.#credential };
    } catch (error) {
      if (!(error instanceof ConnectError)) throw error;
      if (error.code === Code.Unauthenticated) return { ok: false, failure: "invalid_key", message: error.rawMessage };
      // The only operation taking a grant token is create-verification-link, whose table says 500.
      throw new OperationError(500, "the request could not be created; retry");
    }
  }
}

/**
 * Grant tokens belong to the gate service: the gateway recognises them by prefix and leaves asking
 * gate to the operation ({@link PresentedGrantToken}). With an `Idempotency-Key`, gate also accepts a token
 * already consumed by a create with that same key (scoped to the token, as the idempotency stage names
 * it): the retry of a create whose answer was lost then reaches gate, which answers the request it created.
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
      return { ok: true, presented: new PresentedGrantToken(credential, idempotencyToken, gate) };
    },
  };
}

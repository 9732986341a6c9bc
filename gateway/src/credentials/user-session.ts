import { createHash } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { type Clock, loadConfig, parse } from "@svc/platform";
import type { AccountService } from "@svc/proto/account/v1/account_pb.js";
import { CallerSchema, CredentialKind } from "@svc/proto/common/v1/caller_pb.js";
import { createRemoteJWKSet, decodeJwt, type JWTPayload, jwtVerify } from "jose";
import { AnswerCache } from "./answer-cache.ts";
import type { CredentialResolver, Resolution } from "./resolver.ts";

/** The OpenID Connect issuer whose ID tokens sign users in to the app API (GATEWAY_OIDC_*). */
const oidcSettings = {
  oidcIssuer: {
    parse: parse.string,
    default: "",
    description: "issuer (iss) of user-session JWTs from the configured OpenID Connect provider",
  },
  oidcJwksUrl: { parse: parse.url, default: "", description: "key set URL of that provider" },
  oidcAudience: {
    parse: parse.string,
    default: "",
    description: "audience (aud) the provider's tokens must carry; empty skips the check (unless a client id is set)",
  },
  oidcClientId: {
    parse: parse.string,
    default: "",
    description:
      "the web app's client id at that provider (public client, authorization code with PKCE); its ID tokens carry it as aud and are accepted beside GATEWAY_OIDC_AUDIENCE",
  },
};

export const loadOidcConfig = (env: NodeJS.ProcessEnv) => loadConfig("GATEWAY", oidcSettings, env);

/** A compact JWS: three base64url segments, the first a JSON header (`eyJ`). */
const jwtForm = /^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** The user-session resolver, which remembers for a while whom each session names, and forgets a deleted person. */
export interface UserSessionResolver extends CredentialResolver<Resolution> {
  /** The person deleted their account: the sessions resolved to them are resolved afresh. */
  forgetHuman(svcUserId: string): void;
  /** A change may have been missed (the credential stream was away): every session is resolved afresh. */
  forgetAll(): void;
}

/**
 * A signed-in user session: a JWT from the configured OpenID Connect issuer, verified with jose against
 * its key set (in development, the development identity provider of deploy/dev-idp). The (issuer,
 * subject) pair names a human in the account service, which also keeps what the token's `email` and
 * `email_verified` claims say (inquire's `user_email`); the caller carries that human's `svc_user_id`
 * as its credential id.
 *
 * An app makes many requests with one token (its inbox, a card, a long-poll after each answer), so an
 * accepted token's answer is kept for `cacheTtlMs` and never past the token's `exp`, keyed by the token's
 * SHA-256 (never the token itself): the same token carries the same claims, so only the person's deletion
 * changes whom it names, and account says so (`forgetHuman`). Refusals are not kept: a token signed with a
 * key the cached key set does not hold yet is accepted once jose has fetched it.
 */
export function userSessionResolver(options: {
  oidc: ReturnType<typeof loadOidcConfig>;
  account: Pick<Client<typeof AccountService>, "resolveSignedInHuman">;
  clock: Clock;
  cacheTtlMs: number;
  cacheCapacity?: number;
}): UserSessionResolver {
  const { oidc, account, clock } = options;
  const remote =
    oidc.oidcIssuer !== "" && oidc.oidcJwksUrl !== "" ? createRemoteJWKSet(new URL(oidc.oidcJwksUrl)) : undefined;
  // The phone app's tokens carry the configured audience, the web app's ID tokens its client id.
  const audiences = [oidc.oidcAudience, oidc.oidcClientId].filter((audience) => audience !== "");
  const refused = { ok: false as const, failure: "invalid_key" as const, message: "the user session is not valid" };
  const cache = new AnswerCache<Resolution & { ok: true }>({
    clock,
    ttlMs: options.cacheTtlMs,
    capacity: options.cacheCapacity ?? 10_000,
  });
  // An answer asked for before a deletion was heard may name the deleted person: it is used once, never kept.
  let changesHeard = 0;

  const verify = async (token: string): Promise<JWTPayload | undefined> => {
    const issuer = decodeJwt(token).iss;
    if (remote && issuer === oidc.oidcIssuer) {
      const { payload } = await jwtVerify(token, remote, {
        issuer: oidc.oidcIssuer,
        ...(audiences.length > 0 ? { audience: audiences } : {}),
        currentDate: clock.now(),
      });
      return payload;
    }
    return undefined;
  };

  const resolveAfresh = async (credential: string): Promise<{ resolution: Resolution; until?: Date }> => {
    let payload: JWTPayload | undefined;
    try {
      payload = await verify(credential);
    } catch {
      return { resolution: refused };
    }
    if (!payload?.iss || !payload.sub) return { resolution: refused };
    // Account keeps the address only when the provider vouches for it, and only as a keyed hash.
    const human = await account.resolveSignedInHuman({
      issuer: payload.iss,
      subject: payload.sub,
      ...(typeof payload.email === "string" ? { email: payload.email } : {}),
      emailVerified: payload.email_verified === true,
    });
    return {
      resolution: {
        ok: true,
        credential: {
          kind: "user_session",
          caller: create(CallerSchema, { credentialId: human.svcUserId, credentialKind: CredentialKind.USER_SESSION }),
          allowedGates: [],
        },
      },
      ...(payload.exp !== undefined && { until: new Date(payload.exp * 1000) }),
    };
  };

  return {
    kind: "user_session",
    recognizes: (credential) => jwtForm.test(credential),
    async resolve(credential) {
      const digest = createHash("sha256").update(credential).digest("base64url");
      const remembered = cache.get(digest);
      if (remembered) return remembered;
      const heardBefore = changesHeard;
      const { resolution, until } = await resolveAfresh(credential);
      if (resolution.ok && changesHeard === heardBefore) cache.set(digest, resolution, until);
      return resolution;
    },
    forgetHuman(svcUserId) {
      changesHeard++;
      cache.forget((resolution) => resolution.credential.caller.credentialId === svcUserId);
    },
    forgetAll() {
      changesHeard++;
      cache.forget();
    },
  };
}

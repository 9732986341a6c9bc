import { Agents } from "./agents.ts";
import { type Environment, environmentOf } from "./environment.ts";
import type { Body, Query, Result } from "./operations.ts";
import { SecuredAccountList, type SecuredAccountsQuery } from "./secured-accounts.ts";
import { abortableSleep, type Call, type CallOptions, Transport } from "./transport.ts";
import { Verifier } from "./verifier.ts";
import { verifyWebhook, type WebhookHeaders } from "./webhooks.ts";

export interface SvcOptions {
  /** A secret API key (`svc_dev_…`, `svc_production_…`), a site key, or an agent key (`svc_agent_…`). */
  apiKey: string;
  /** `{base_url}`, the operations root; `{api_origin}` (the tokens' issuer) is its origin. */
  baseUrl?: string;
  /** Another `fetch` (a proxy, a test double of the network, a runtime's own). */
  fetch?: typeof fetch;
  /** The longest a call may take, its retries included. Default 30 s; a long-poll adds its own wait. */
  timeoutMs?: number;
  /** Retries of a failed connection, HTTP 502/503 and a retryable refusal. Default 2. */
  maxRetries?: number;
  /** The `iss` of tokens and proofs, `{api_origin}`, when it is not the origin of `baseUrl` (a proxy in between). */
  issuer?: string;
  /** Another address of the key set than `/.well-known/jwks.json` at the origin of `baseUrl`. */
  jwksUrl?: string;
}

export const defaultBaseUrl = "http://127.0.0.1:8080/v1";

export type CreateLinkInput = Body<"createVerificationLink"> & {
  /** The single-use grant token from `sessions.create()`: create-verification-link takes only it. */
  grantToken: string;
};

/** The client of the public API. Every method returns the result with its `response` (replay, rate limit). */
export class Svc {
  /** The environment the key selects (from its prefix); undefined for an agent key. */
  readonly environment: Environment | undefined;
  readonly sessions;
  readonly verifications;
  readonly tokens;
  readonly securedAccounts;
  readonly partnerConfig;
  readonly agents: Agents;
  readonly webhooks = {
    /** Checks a delivery's signature and timestamp (5 minutes either side) and returns its event, typed by `type`. */
    verify: (rawBody: string | Uint8Array, headers: WebhookHeaders, secret: string) =>
      verifyWebhook(rawBody, headers, secret),
  };
  /** Checks an attestation token offline against the cached key set (see `Verifier`). */
  readonly verifyAttestation: Verifier["verifyAttestation"];
  /** Checks a Proof of Resolution offline, `card_digest` included (see `Verifier`). */
  readonly verifyProof: Verifier["verifyProof"];

  constructor(options: SvcOptions) {
    if (typeof options?.apiKey !== "string" || options.apiKey === "")
      throw new TypeError("new Svc: apiKey is required");
    const baseUrl = (options.baseUrl ?? defaultBaseUrl).replace(/\/+$/, "");
    const fetchFn = options.fetch ?? globalThis.fetch.bind(globalThis);
    const transport = new Transport({
      credential: options.apiKey,
      baseUrl,
      fetch: fetchFn,
      timeoutMs: options.timeoutMs ?? 30_000,
      maxRetries: options.maxRetries ?? 2,
      now: Date.now,
      random: Math.random,
      sleep: abortableSleep,
    });
    const origin = new URL(baseUrl).origin;
    const verifier = new Verifier({
      issuer: options.issuer ?? origin,
      jwksUrl: options.jwksUrl ?? `${origin}/.well-known/jwks.json`,
      fetch: fetchFn,
    });
    this.environment = environmentOf(options.apiKey);
    this.verifyAttestation = verifier.verifyAttestation;
    this.verifyProof = verifier.verifyProof;
    const post = <R>(path: string, input: object, options: CallOptions | undefined, extra: Partial<Call> = {}) =>
      transport.call<R>({
        method: "POST",
        path,
        input: input as Record<string, unknown>,
        flat: false,
        options,
        ...extra,
      });
    const get = <R>(path: string, input: object, options: CallOptions | undefined, extra: Partial<Call> = {}) =>
      transport.call<R>({
        method: "GET",
        path,
        input: input as Record<string, unknown>,
        flat: false,
        options,
        ...extra,
      });

    this.sessions = {
      /** A single-use grant token (`anchor_grant_token`, 5 minutes) for one create-verification-link. */
      create: (body: Body<"createSession"> = {}, options?: CallOptions) =>
        post<Result<"createSession">>("/sdk/create-session", body, options),
      /** Revokes an unused grant token of your organization. */
      logout: (body: Body<"logout">, options?: CallOptions) =>
        post<Result<"logout">>("/sdk/logout", body, options, { flat: true }),
    };
    this.verifications = {
      /** Creates a verification request with a grant token; the token is consumed by an accepted call. */
      createLink: ({ grantToken, ...body }: CreateLinkInput, options?: CallOptions) =>
        post<Result<"createVerificationLink">>("/sdk/create-verification-link", body, options, {
          credential: grantToken,
        }),
      /** The request's status record (flat); `completed` and `pass` both mean verified. */
      status: (query: Query<"getVerificationStatus">, options?: CallOptions) =>
        get<Result<"getVerificationStatus">>("/verification/status", query, withWait(query.wait_seconds, options), {
          flat: true,
        }),
      /** Ends the pending requests of a user on a gate that would block a new one. */
      revoke: (body: Body<"revokeVerification">, options?: CallOptions) =>
        post<Result<"revokeVerification">>("/sdk/revoke-verification", body, options),
    };
    this.tokens = {
      /** verify-token: the service's check, recorded in its ledger (a second check is `replayed`). */
      verify: (body: Body<"verifyToken">, options?: CallOptions) =>
        post<Result<"verifyToken">>("/sdk/verify-token", body, options, { credential: null }),
      /** The same checks offline: see `verifyAttestation`. */
      verifyOffline: verifier.verifyAttestation,
    };
    this.securedAccounts = {
      /** `for await` over every account, or `.page()` for one page with `total`. */
      list: (query: SecuredAccountsQuery = {}, options?: CallOptions) =>
        new SecuredAccountList(transport, query, options),
      /**
       * A sign-in detail of your user changed: the active link of `platform_user_ref` ends (`account.unlinked`,
       * reason `credential_changed`) and the person is offered re-linking. `{ unlinked: false }` when there was
       * none, so a retry is harmless.
       */
      reportCredentialChange: (body: Body<"reportCredentialChange">, options?: CallOptions) =>
        post<Result<"reportCredentialChange">>("/secured-accounts/report-credential-change", body, options),
    };
    this.partnerConfig = {
      get: (query: Query<"getPartnerConfig">, options?: CallOptions) =>
        get<Result<"getPartnerConfig">>("/sdk/partner-config", query, options),
    };
    this.agents = new Agents(transport, verifier, Date.now);
  }
}

/** A held status read gets its wait on top of the timeout. */
const withWait = (waitSeconds: number | undefined, options: CallOptions | undefined): CallOptions | undefined =>
  waitSeconds === undefined || options?.timeoutMs !== undefined
    ? options
    : { ...options, timeoutMs: waitSeconds * 1000 + 30_000 };

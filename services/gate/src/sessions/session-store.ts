import type { JsonObject } from "@bufbuild/protobuf";
import { type Clock, NaturalBatcher, uuid } from "@svc/platform";
import type pg from "pg";
import type { PartnerCaller } from "../caller.ts";
import type { PartnerRefs } from "../partner-refs.ts";
import { refuse } from "../refusal.ts";
import { tokenHash as idempotencyTokenHash } from "../requests/idempotent-creates.ts";
import { grantTokenLifetimeMs } from "../requests/lifetimes.ts";
import { secretHash } from "../requests/request-ids.ts";
import { grantTokenForm, newGrantToken } from "./grant-token.ts";
import type { SessionFactsLookup, SessionRow } from "./session-facts.ts";

/**
 * Sessions and their grant tokens (spec "Grant token" state table): issued by create-session, unused
 * for five minutes, then consumed by one accepted create-verification-link or revoked by logout.
 */
export class SessionStore {
  readonly #db: pg.Pool;
  readonly #clock: Clock;
  readonly #refs: PartnerRefs;
  readonly #facts: SessionFactsLookup;
  /** Grant checks arrive one per request from the gateway; under load many share one statement. */
  readonly #unusedSessions: NaturalBatcher<{ tokenHash: Buffer; now: Date }, SessionRow | undefined>;

  constructor(options: { db: pg.Pool; clock: Clock; refs: PartnerRefs; facts: SessionFactsLookup }) {
    this.#db = options.db;
    this.#clock = options.clock;
    this.#refs = options.refs;
    this.#facts = options.facts;
    this.#unusedSessions = new NaturalBatcher({
      maxBatch: 64,
      gatherTurn: true,
      run: (checks) => this.#unusedSessionsOf(checks),
    });
  }

  async create(
    caller: PartnerCaller,
    input: { partnerUserId: string; metadata: JsonObject | undefined; allowedGates: readonly string[] },
  ) {
    if (caller.kind === "grant_token")
      throw refuse("unauthenticated", "a session is created with an API key or a site key");
    const token = newGrantToken();
    const tokenHash = secretHash(token);
    const now = this.#clock.now();
    const row: SessionRow = {
      id: uuid(),
      organization_id: caller.organizationId,
      environment: caller.environment,
      credential_id: caller.credentialId,
      credential_kind: caller.kind,
      partner_user_hash:
        input.partnerUserId === "" ? null : this.#refs.hash(caller.organizationId, input.partnerUserId),
      metadata: input.metadata && Object.keys(input.metadata).length > 0 ? input.metadata : null,
      allowed_gates: [...input.allowedGates],
      expires_at: new Date(now.getTime() + grantTokenLifetimeMs),
    };
    await this.#db.query({
      name: "create_session",
      text: `insert into sessions (id, token_hash, organization_id, environment, credential_id, credential_kind, partner_user_hash, metadata, allowed_gates, created_at, expires_at)
             values ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::text[], $10, $11)`,
      values: [
        row.id,
        tokenHash,
        row.organization_id,
        row.environment,
        row.credential_id,
        row.credential_kind,
        row.partner_user_hash,
        row.metadata === null ? null : JSON.stringify(row.metadata),
        row.allowed_gates,
        now,
        row.expires_at,
      ],
    });
    this.#facts.remember(row, tokenHash);
    return { token, organizationId: caller.organizationId, expiresAt: row.expires_at };
  }

  /**
   * The unused session a grant token names, without consuming it. With an idempotency token, also the
   * session a create with that same token consumed, expired since or not: its retry reads the request
   * it made (requests/idempotent-creates.ts). A revoked session is never accepted.
   */
  async authenticate(token: string, idempotencyToken = ""): Promise<SessionRow> {
    const refused = () => refuse("unauthenticated", "the grant token is invalid, expired or already used");
    if (!grantTokenForm.test(token)) throw refused();
    const tokenHash = secretHash(token);
    const row =
      (await this.#unusedSessions.submit({ tokenHash, now: this.#clock.now() })) ??
      (idempotencyToken === "" ? undefined : await this.#consumedWith(tokenHash, idempotencyToken));
    if (!row) throw refused();
    this.#facts.remember(row, tokenHash);
    return row;
  }

  /**
   * The session a grant token names, for the create that consumes it: from what this replica remembers
   * of the token when it can, unchecked, since that create's own statement checks the session is unused,
   * unrevoked and unexpired before it writes anything (create-verification-requests.sql) and answers
   * 401 otherwise. A token this replica has not seen is authenticated as above.
   */
  async forCreate(token: string, idempotencyToken: string): Promise<SessionRow> {
    const known = grantTokenForm.test(token) ? this.#facts.knownByToken(secretHash(token)) : undefined;
    return known ?? this.authenticate(token, idempotencyToken);
  }

  async #consumedWith(tokenHash: Buffer, idempotencyToken: string): Promise<SessionRow | undefined> {
    const { rows } = await this.#db.query<SessionRow>({
      name: "authenticate_consumed_grant",
      text: `select id, organization_id, environment, credential_id, credential_kind, partner_user_hash, metadata, allowed_gates, expires_at
               from sessions where token_hash = $1 and consumed_at is not null and revoked_at is null and idempotency_token_hash = $2`,
      values: [tokenHash, idempotencyTokenHash(idempotencyToken)],
    });
    return rows[0];
  }

  async #unusedSessionsOf(checks: { tokenHash: Buffer; now: Date }[]): Promise<(SessionRow | undefined)[]> {
    // One instant for the batch, the latest of its checks': no check accepts a token past its expiry.
    const now = new Date(Math.max(...checks.map((c) => c.now.getTime())));
    const { rows } = await this.#db.query<SessionRow & { token_hash: Buffer }>({
      name: "authenticate_grants",
      text: `select token_hash, id, organization_id, environment, credential_id, credential_kind, partner_user_hash, metadata, allowed_gates, expires_at
               from sessions where token_hash = any($1::bytea[]) and consumed_at is null and revoked_at is null and expires_at > $2`,
      values: [checks.map((c) => c.tokenHash), now],
    });
    const found = new Map(rows.map(({ token_hash, ...row }) => [token_hash.toString("hex"), row]));
    return checks.map((c) => found.get(c.tokenHash.toString("hex")));
  }

  /** Logout: revokes an unused grant token of the caller's organization; false when there was nothing to revoke. */
  async revoke(caller: PartnerCaller, token: string): Promise<boolean> {
    if (!grantTokenForm.test(token)) return false;
    const owner = await this.#db.query<{ organization_id: string }>(
      `select organization_id from sessions where token_hash = $1`,
      [secretHash(token)],
    );
    if (!owner.rows[0]) return false;
    if (owner.rows[0].organization_id !== caller.organizationId)
      throw refuse("forbidden", "the grant token belongs to another organization");
    const now = this.#clock.now();
    const revoked = await this.#db.query(
      `update sessions set revoked_at = $1 where token_hash = $2 and consumed_at is null and revoked_at is null and expires_at > $1 returning id`,
      [now, secretHash(token)],
    );
    return revoked.rows.length > 0;
  }
}

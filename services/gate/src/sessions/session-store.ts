import type { JsonObject } from "@bufbuild/protobuf";
import type { MikroORM } from "@mikro-orm/postgresql";
import { uuid, type Clock, type EnvironmentName } from "@svc/platform";
import type { PartnerCaller } from "../caller.ts";
import type { PartnerRefs } from "../partner-refs.ts";
import { Refusal } from "../refusal.ts";
import { grantTokenLifetimeMs } from "../requests/lifetimes.ts";
import { secretHash } from "../requests/request-ids.ts";
import { grantTokenForm, newGrantToken } from "./grant-token.ts";

export interface SessionRow {
  id: string;
  organization_id: string;
  environment: EnvironmentName;
  credential_id: string;
  credential_kind: "secret_key" | "site_key";
  partner_user_hash: Buffer | null;
  metadata: JsonObject | null;
  allowed_gates: string[];
  expires_at: Date;
}

/**
 * Sessions and their grant tokens (spec "Grant token" state table): issued by create-session, unused
 * for five minutes, then consumed by one accepted create-verification-link or revoked by logout.
 */
export class SessionStore {
  readonly #orm: MikroORM;
  readonly #clock: Clock;
  readonly #refs: PartnerRefs;

  constructor(options: { orm: MikroORM; clock: Clock; refs: PartnerRefs }) {
    this.#orm = options.orm;
    this.#clock = options.clock;
    this.#refs = options.refs;
  }

  async create(caller: PartnerCaller, input: { partnerUserId: string; metadata: JsonObject | undefined; allowedGates: readonly string[] }) {
    if (caller.kind === "grant_token") throw new Refusal("unauthenticated", "a session is created with an API key or a site key");
    const token = newGrantToken();
    const now = this.#clock.now();
    const expiresAt = new Date(now.getTime() + grantTokenLifetimeMs);
    await this.#orm.em.fork().execute(
      `insert into sessions (id, token_hash, organization_id, environment, credential_id, credential_kind, partner_user_hash, metadata, allowed_gates, created_at, expires_at)
       values (?, ?, ?, ?, ?, ?, ?, ?::jsonb, array(select jsonb_array_elements_text(?::jsonb)), ?, ?)`,
      [
        uuid(),
        secretHash(token),
        caller.organizationId,
        caller.environment,
        caller.credentialId,
        caller.kind,
        input.partnerUserId === "" ? null : this.#refs.hash(caller.organizationId, input.partnerUserId),
        input.metadata && Object.keys(input.metadata).length > 0 ? JSON.stringify(input.metadata) : null,
        // The driver spreads array parameters, so the list travels as one JSON value.
        JSON.stringify(input.allowedGates),
        now,
        expiresAt,
      ],
    );
    return { token, organizationId: caller.organizationId, expiresAt };
  }

  /** The unused session a grant token names, without consuming it. */
  async authenticate(token: string): Promise<SessionRow> {
    const refused = new Refusal("unauthenticated", "the grant token is invalid, expired or already used");
    if (!grantTokenForm.test(token)) throw refused;
    const rows = await this.#orm.em.fork().execute<SessionRow[]>(
      `select * from sessions where token_hash = ? and consumed_at is null and revoked_at is null and expires_at > ?`,
      [secretHash(token), this.#clock.now()],
    );
    if (!rows[0]) throw refused;
    return rows[0];
  }

  /** Logout: revokes an unused grant token of the caller's organization; false when there was nothing to revoke. */
  async revoke(caller: PartnerCaller, token: string): Promise<boolean> {
    if (!grantTokenForm.test(token)) return false;
    const em = this.#orm.em.fork();
    const owner = await em.execute<{ organization_id: string }[]>(`select organization_id from sessions where token_hash = ?`, [secretHash(token)]);
    if (!owner[0]) return false;
    if (owner[0].organization_id !== caller.organizationId) throw new Refusal("forbidden", "the grant token belongs to another organization");
    const revoked = await em.execute<{ id: string }[]>(
      `update sessions set revoked_at = ? where token_hash = ? and consumed_at is null and revoked_at is null and expires_at > ? returning id`,
      [this.#clock.now(), secretHash(token), this.#clock.now()],
    );
    return revoked.length > 0;
  }
}

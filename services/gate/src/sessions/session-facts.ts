import type { JsonObject } from "@bufbuild/protobuf";
import type { EnvironmentName } from "@svc/platform";
import type pg from "pg";
import { RecentFacts } from "../recent-facts.ts";

/** A session as stored: what it was created with. */
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
 * What a session was created with (owner, environment, credential kind, partner-user hash, metadata,
 * allowed gates), which never changes. create-session and the gateway's grant check remember it, by
 * id and by its grant token's hash, so the create-verification-link that follows usually finds it
 * here; another replica reads it once.
 */
export class SessionFactsLookup {
  readonly #db: pg.Pool;
  readonly #recent = new RecentFacts<SessionRow>(20_000);
  readonly #byToken = new RecentFacts<SessionRow>(20_000);

  constructor(db: pg.Pool) {
    this.#db = db;
  }

  remember(row: SessionRow, tokenHash?: Buffer): void {
    this.#recent.remember(row.id, row);
    if (tokenHash) this.#byToken.remember(tokenHash.toString("hex"), row);
  }

  /** The facts of the session whose grant token has this hash, when this replica has seen it; nothing about its use. */
  knownByToken(tokenHash: Buffer): SessionRow | undefined {
    return this.#byToken.get(tokenHash.toString("hex"));
  }

  /** The session's facts whether or not its token is still usable; undefined for an unknown id. */
  async of(sessionId: string): Promise<SessionRow | undefined> {
    const known = this.#recent.get(sessionId);
    if (known) return known;
    const { rows } = await this.#db.query<SessionRow>({
      name: "session_facts",
      text: `select id, organization_id, environment, credential_id, credential_kind, partner_user_hash, metadata, allowed_gates, expires_at from sessions where id = $1`,
      values: [sessionId],
    });
    if (rows[0]) this.remember(rows[0]);
    return rows[0];
  }
}

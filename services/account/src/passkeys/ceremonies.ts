import type { EntityManager } from "@mikro-orm/postgresql";
import type { RetentionRule } from "@svc/platform";
import { refuse } from "../refusal.ts";
import { PasskeyCeremony } from "./passkey.entity.ts";

/** How long a registration or assertion may take, from its begin to its finish. */
export const ceremonyLifetimeMs = 5 * 60_000;

export type CeremonyKind = "registration" | "assertion";

export interface Ceremony {
  id: string;
  kind: CeremonyKind;
  challenge: string;
  svcUserId: string | null;
  createsHuman: boolean;
  rpId: string;
  origin: string;
  binding: string | null;
  expiresAt: Date;
}

export async function startCeremony(em: EntityManager, ceremony: Ceremony & { createdAt: Date }): Promise<void> {
  em.create(PasskeyCeremony, { ...ceremony, consumedAt: null });
  await em.flush();
}

interface CeremonyRow {
  id: string;
  kind: CeremonyKind;
  challenge: string;
  svc_user_id: string | null;
  creates_human: boolean;
  rp_id: string;
  origin: string;
  binding: string | null;
  expires_at: Date;
  consumed_at: Date | null;
}

const columns = "id, kind, challenge, svc_user_id, creates_human, rp_id, origin, binding, expires_at, consumed_at";

/**
 * Uses up a ceremony: one statement marks it consumed only if it is unused, unexpired, of this kind
 * and (for an assertion) begun for this binding, so of any number of concurrent finishes exactly one
 * gets it. A finish whose verification then fails has still used it up. A ceremony begun for another
 * binding stays unused: a request must never finish with the challenge of another.
 */
export async function consumeCeremony(
  em: EntityManager,
  now: Date,
  wanted: { id: string; kind: CeremonyKind; binding: string | null },
): Promise<Ceremony> {
  const rows = await em.execute<CeremonyRow[]>(
    `update passkey_ceremony set consumed_at = ?
     where id = ? and kind = ? and consumed_at is null and expires_at > ? and binding is not distinct from ?
     returning ${columns}`,
    [now, wanted.id, wanted.kind, now, wanted.binding],
  );
  const row = rows[0];
  if (row !== undefined) return ceremonyOf(row);
  const [found] = await em.execute<CeremonyRow[]>(`select ${columns} from passkey_ceremony where id = ? and kind = ?`, [
    wanted.id,
    wanted.kind,
  ]);
  if (found === undefined) throw refuse("failed_precondition", `no ${wanted.kind} ceremony ${wanted.id}`);
  if (found.consumed_at !== null)
    throw refuse("failed_precondition", `${wanted.kind} ceremony ${wanted.id} was already used`);
  if (new Date(found.expires_at) <= now)
    throw refuse(
      "failed_precondition",
      `${wanted.kind} ceremony ${wanted.id} expired at ${new Date(found.expires_at).toISOString()}`,
    );
  throw refuse(
    "permission_denied",
    `${wanted.kind} ceremony ${wanted.id} was begun for another binding than ${JSON.stringify(wanted.binding)}`,
  );
}

/**
 * Ceremonies that expired `retentionMs` (ACCOUNT_CEREMONY_RETENTION) before `now`, on
 * `passkey_ceremony_expires_at`: by then they say nothing useful any more ("already used" turns into
 * "no such ceremony").
 */
export const ceremonyRetentionRule = (now: Date, retentionMs: number): RetentionRule => ({
  table: "passkey_ceremony",
  column: "expires_at",
  before: new Date(now.getTime() - retentionMs),
});

function ceremonyOf(row: CeremonyRow): Ceremony {
  return {
    id: row.id,
    kind: row.kind,
    challenge: row.challenge,
    svcUserId: row.svc_user_id,
    createsHuman: row.creates_human,
    rpId: row.rp_id,
    origin: row.origin,
    binding: row.binding,
    expiresAt: new Date(row.expires_at),
  };
}

import type { EntityManager, MikroORM } from "@mikro-orm/postgresql";
import type { Clock } from "@svc/platform";
import { kekId, sealPrivateKey } from "./key-encryption.ts";
import { generateSigningKey } from "./key-generation.ts";
import { type KeyWindow, newestKey, planRotation, type RotationPolicy } from "./rotation-schedule.ts";
import { SigningKey } from "./signing-key.entity.ts";

export interface AddedKey {
  kid: string;
  window: KeyWindow;
}

/**
 * Adds a key when `due` says so, deciding and writing under one transaction-scoped advisory lock:
 * replicas that rotate at the same moment then add one key, not one each.
 */
export async function addKeyWhen(
  orm: MikroORM,
  options: {
    clock: Clock;
    kek: Buffer;
    policy: RotationPolicy;
    due: (newest: KeyWindow | undefined, now: Date) => boolean;
  },
): Promise<AddedKey | undefined> {
  return orm.em.fork().transactional(async (em) => {
    await em.execute("select pg_advisory_xact_lock(hashtext('signing.key_ring'))");
    const rows = await em.find(SigningKey, {});
    const newest = newestKey(rows.map((row) => ({ row, window: windowOf(row) })));
    // Read after the lock: a replica that waited must not plan with the instant it started waiting.
    const now = options.clock.now();
    if (!options.due(newest?.window, now)) return undefined;
    const plan = planRotation(newest?.window, now, options.policy);
    if (newest !== undefined && plan.retirePrevious !== undefined) {
      newest.row.retiredAt = plan.retirePrevious.retiredAt;
      newest.row.unpublishAt = plan.retirePrevious.unpublishAt;
    }
    const kid = insertKey(em, options.kek, plan.window);
    return { kid, window: plan.window };
  });
}

function insertKey(em: EntityManager, kek: Buffer, window: KeyWindow): string {
  const key = generateSigningKey();
  try {
    em.create(SigningKey, {
      kid: key.kid,
      x: key.x,
      y: key.y,
      sealedPrivateKey: sealPrivateKey(kek, key.kid, key.pkcs8),
      kekId: kekId(kek),
      ...window,
    });
  } finally {
    key.pkcs8.fill(0);
  }
  return key.kid;
}

export const windowOf = (row: {
  publishedAt: Date;
  signsFrom: Date;
  retiredAt?: Date | null;
  unpublishAt?: Date | null;
}): KeyWindow => ({
  publishedAt: row.publishedAt,
  signsFrom: row.signsFrom,
  retiredAt: row.retiredAt ?? null,
  unpublishAt: row.unpublishAt ?? null,
});

/** Keys nobody needs any more go with their sealed private halves. */
export async function deleteUnpublishedKeys(orm: MikroORM, now: Date): Promise<number> {
  return orm.em.fork().nativeDelete(SigningKey, { unpublishAt: { $lte: now } });
}

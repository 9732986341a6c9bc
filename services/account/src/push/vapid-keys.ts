import { createECDH } from "node:crypto";
import type { MikroORM } from "@mikro-orm/postgresql";
import { type Clock, ConfigError } from "@svc/platform";
import type { PushSealing } from "./subscription-sealing.ts";

/** The VAPID (RFC 8292) pair the pushes are signed with: base64url, as browsers and web-push take them. */
export interface VapidKeys {
  /** The uncompressed P-256 point (65 bytes): the app's `applicationServerKey`. */
  publicKey: string;
  /** The private scalar (32 bytes). */
  privateKey: string;
  subject: string;
}

const sealedId = "vapid";

const pairOf = (privateKey: Buffer, subject: string): VapidKeys => {
  const ecdh = createECDH("prime256v1");
  ecdh.setPrivateKey(privateKey);
  return {
    publicKey: ecdh.getPublicKey().toString("base64url"),
    privateKey: privateKey.toString("base64url"),
    subject,
  };
};

/**
 * ACCOUNT_VAPID_PRIVATE_KEY when set (production must set it: see config.ts); production also refuses the
 * pair this database made for development. Without it, development makes a pair once and keeps it in
 * `vapid_key`, its private key sealed, so every start and replica signs with the same key and the
 * browsers' subscriptions, made for that public key, stay valid.
 */
export async function loadVapidKeys(
  orm: MikroORM,
  sealing: PushSealing,
  clock: Clock,
  config: { deployment: "development" | "production"; vapidPrivateKey: Buffer | null; vapidSubject: string },
): Promise<VapidKeys> {
  const em = orm.em.fork();
  const stored = async () =>
    (
      await em.execute<{ public_key: string; sealed_private_key: Buffer }[]>(
        `select public_key, sealed_private_key from vapid_key where id = 1`,
      )
    )[0];
  if (config.vapidPrivateKey !== null) {
    const keys = pairOf(config.vapidPrivateKey, config.vapidSubject);
    if (config.deployment === "production" && (await stored())?.public_key === keys.publicKey)
      throw new ConfigError("ACCOUNT_VAPID_PRIVATE_KEY is the development pair, which production refuses");
    return keys;
  }
  let row = await stored();
  if (!row) {
    const ecdh = createECDH("prime256v1");
    ecdh.generateKeys();
    // Replicas starting together: the first insert wins and every one reads it back.
    await em.execute(
      `insert into vapid_key (id, public_key, sealed_private_key, created_at) values (1, ?, ?, ?) on conflict (id) do nothing`,
      [ecdh.getPublicKey().toString("base64url"), sealing.seal(sealedId, ecdh.getPrivateKey()), clock.now()],
    );
    row = await stored();
    if (!row) throw new Error("the development VAPID key was not stored");
  }
  return pairOf(sealing.open(sealedId, row.sealed_private_key), config.vapidSubject);
}

import type { EntityManager } from "@mikro-orm/postgresql";
import { requireHuman } from "../humans/humans.ts";
import { requireText, requireUuid } from "../input.ts";
import { refuse } from "../refusal.ts";
import { Passkey } from "./passkey.entity.ts";

/** The person's passkeys, newest first (the app's passkey list). */
export async function listPasskeys(em: EntityManager, svcUserId: string): Promise<Passkey[]> {
  const human = await requireHuman(em, svcUserId);
  return em.find(Passkey, { svcUserId: human.id }, { orderBy: { createdAt: "desc", credentialId: "asc" } });
}

/**
 * The person removes one of their passkeys (a sandbox passkey's sealed key goes with it, by foreign key).
 * NotFound when the person has none with that id, whoever else may hold it.
 */
export async function removePasskey(em: EntityManager, input: { svcUserId: string; passkeyId: string }): Promise<void> {
  const svcUserId = requireUuid(input.svcUserId, "svc_user_id");
  const passkeyId = requireText(input.passkeyId, "passkey_id", 1024);
  const deleted = await em.execute(
    `delete from passkey where credential_id = ? and svc_user_id = ? returning credential_id`,
    [passkeyId, svcUserId],
  );
  if (deleted.length === 0) throw refuse("not_found", "you have no passkey with this id");
}

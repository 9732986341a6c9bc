import type { MikroORM } from "@mikro-orm/postgresql";
import { type Clock, isUuid } from "@svc/platform";
import { refuse } from "../refusal.ts";
import type { RequestRow } from "./request-row.ts";

export type PendingRequest = Pick<
  RequestRow,
  "id" | "organization_id" | "gate_type" | "age_threshold" | "notarize_offered" | "expires_at" | "created_at"
>;

/**
 * The person's side of their requests: the pending ones that name their `svc_user_id` and are still
 * inside their window by the injected clock (one past it reads as expired even before the sweep ends it),
 * oldest first. A private-mode request names nobody, so it is in no inbox.
 */
export async function pendingRequestsOf(orm: MikroORM, clock: Clock, svcUserId: string): Promise<PendingRequest[]> {
  if (!isUuid(svcUserId)) throw refuse("invalid", "svc_user_id must be a uuid");
  return orm.em.fork().execute<PendingRequest[]>(
    `select id, organization_id, gate_type, age_threshold, notarize_offered, expires_at, created_at from requests
      where svc_user_id = ? and status = 'pending' and expires_at > ? order by created_at, id limit 100`,
    [svcUserId, clock.now()],
  );
}

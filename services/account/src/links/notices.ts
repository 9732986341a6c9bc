import type { EntityManager } from "@mikro-orm/postgresql";
import { currentTraceContext, type EnvironmentName, uuid } from "@svc/platform";
import { requireHuman } from "../humans/humans.ts";
import { requireUuid } from "../input.ts";
import { enqueuePush } from "../push/push-jobs.ts";
import { refuse } from "../refusal.ts";
import type { AccountLink } from "./account-link.entity.ts";

/**
 * What the person is told about their links, in table `notice` (migration 0007): a partner's revoke
 * (`account_revoked`), or a revoke reporting a changed sign-in detail (`relink_offer`: the app offers
 * re-linking). Written in the transaction that ends the link; a relink withdraws the offer in the
 * transaction that secures the account again.
 */
export type NoticeKind = "account_revoked" | "relink_offer";

export interface NoticeRow {
  id: string;
  kind: NoticeKind;
  organization_id: string;
  environment: EnvironmentName;
  handle: string;
  at: Date;
}

const kindFor = (reason: NonNullable<AccountLink["unlinkReason"]>): NoticeKind =>
  reason === "credential_changed" ? "relink_offer" : "account_revoked";

const pushTitles: Record<NoticeKind, string> = {
  account_revoked: "A platform removed your linked account",
  relink_offer: "A platform asks you to link your account again",
};

/** How long the web push of a notice may wait at the push service for the person's browser. */
const noticePushLifeMs = 24 * 60 * 60_000;

/** The notice, and in the same transaction its web push to each of the person's subscriptions. */
export async function addNotice(
  tx: EntityManager,
  notice: { svcUserId: string; linkId: string; reason: NonNullable<AccountLink["unlinkReason"]>; at: Date },
): Promise<void> {
  const id = uuid();
  const kind = kindFor(notice.reason);
  await tx.execute(`insert into notice (id, svc_user_id, kind, link_id, at) values (?, ?, ?, ?, ?)`, [
    id,
    notice.svcUserId,
    kind,
    notice.linkId,
    notice.at,
  ]);
  await enqueuePush(
    tx,
    notice.svcUserId,
    { kind: "notice", id, title: pushTitles[kind], expiresAt: new Date(notice.at.getTime() + noticePushLifeMs) },
    notice.at,
    currentTraceContext(),
  );
}

/** The person secured the account again: an offer to re-link it is answered. */
export async function withdrawRelinkOffers(
  tx: EntityManager,
  account: { organizationId: string; environment: EnvironmentName; refHash: Buffer; svcUserId: string },
): Promise<void> {
  await tx.execute(
    `delete from notice where kind = 'relink_offer' and svc_user_id = ? and link_id in
       (select id from account_link where organization_id = ? and environment = ? and ref_hash = ?)`,
    [account.svcUserId, account.organizationId, account.environment, account.refHash],
  );
}

/** The person's notices, newest first, with the link they are about. */
export async function listNotices(em: EntityManager, svcUserId: string): Promise<NoticeRow[]> {
  const human = await requireHuman(em, svcUserId);
  const rows = await em.execute<NoticeRow[]>(
    `select notice.id, notice.kind, link.organization_id, link.environment, link.handle, notice.at
       from notice join account_link link on link.id = notice.link_id
      where notice.svc_user_id = ? order by notice.at desc, notice.id desc`,
    [human.id],
  );
  return rows.map((row) => ({ ...row, at: new Date(row.at) }));
}

/** NotFound when the person has no such notice (another person's included). */
export async function dismissNotice(em: EntityManager, input: { svcUserId: string; noticeId: string }): Promise<void> {
  const svcUserId = requireUuid(input.svcUserId, "svc_user_id");
  const noticeId = requireUuid(input.noticeId, "notice_id");
  const deleted = await em.execute(`delete from notice where id = ? and svc_user_id = ? returning id`, [
    noticeId,
    svcUserId,
  ]);
  if (deleted.length === 0) throw refuse("not_found", `you have no notice ${noticeId}`);
}

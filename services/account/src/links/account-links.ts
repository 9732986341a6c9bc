import type { KeyObject } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import { type Clock, type EnvironmentName, type EventBus, type OutboxRelay, uuid } from "@svc/platform";
import { requireHuman } from "../humans/humans.ts";
import { optionalUuid, requireInstant, requireText, requireUuid } from "../input.ts";
import { invalidArgument, refuse } from "../refusal.ts";
import { AccountLink } from "./account-link.entity.ts";
import { newHandle } from "./handle.ts";
import { enqueueAccountSecured, enqueueAccountUnlinked } from "./link-events.ts";
import { partnerReferenceHash } from "./partner-reference.ts";

export interface LinkContext {
  em: EntityManager;
  clock: Clock;
  pepper: KeyObject;
  bus: Pick<EventBus, "subject">;
  outbox: Pick<OutboxRelay, "wake">;
}

/** A partner's account as a caller names it: organization, environment and the partner's reference. */
export interface PartnerAccountInput {
  organizationId: string;
  environment: EnvironmentName | undefined;
  partnerUserRef: string;
}

export type LinkConflict = "already_trusted" | "rebind_requires_prior_id";

export type SecureOutcome =
  | { kind: "secured"; handle: string; trustedSince: Date; firstTime: boolean }
  | { kind: "conflict"; conflict: LinkConflict };

/** The spec caps platform_user_ref at 512 characters. */
const maxReferenceLength = 512;

function partnerAccount(pepper: KeyObject, input: PartnerAccountInput) {
  const organizationId = requireText(input.organizationId, "organization_id", 128);
  if (input.environment === undefined) throw invalidArgument("environment is required");
  const partnerUserRef = requireText(input.partnerUserRef, "partner_user_ref", maxReferenceLength);
  const environment = input.environment;
  return {
    organizationId,
    environment,
    refHash: partnerReferenceHash(pepper, { organizationId, environment, partnerUserRef }),
  };
}

type Account = ReturnType<typeof partnerAccount>;

const activeByReference = (em: EntityManager, account: Account): Promise<AccountLink | null> =>
  em.findOne(AccountLink, {
    organizationId: account.organizationId,
    environment: account.environment,
    refHash: account.refHash,
    status: "active",
  });

/**
 * The link rules, in the order they are checked:
 * 1. the account is already secured by this human: secured, not first time (a later pass);
 * 2. the account is secured by another human: rebind_requires_prior_id (that link must end first);
 * 3. this human already secures another account of the platform: already_trusted (one each);
 * 4. otherwise a new active link with a new handle: first time, and account.secured is sent.
 */
async function decide(em: EntityManager, account: Account, svcUserId: string): Promise<SecureOutcome | undefined> {
  // One query, so both rules read the same snapshot even while concurrent calls commit.
  const active = await em.find(AccountLink, {
    organizationId: account.organizationId,
    environment: account.environment,
    status: "active",
    $or: [{ refHash: account.refHash }, { svcUserId }],
  });
  const byReference = active.find((link) => Buffer.from(link.refHash).equals(account.refHash));
  if (byReference !== undefined) {
    if (byReference.svcUserId === svcUserId)
      return { kind: "secured", handle: byReference.handle, trustedSince: byReference.securedAt, firstTime: false };
    return { kind: "conflict", conflict: "rebind_requires_prior_id" };
  }
  if (active.length > 0) return { kind: "conflict", conflict: "already_trusted" };
  return undefined;
}

/** Rule 4 loses only to a concurrent call (or a handle collision); a new round then decides again. */
const maxRounds = 5;

export async function secureAccount(
  ctx: LinkContext,
  input: PartnerAccountInput & { svcUserId: string; surfaceId: string; at: Date | undefined },
): Promise<SecureOutcome> {
  const account = partnerAccount(ctx.pepper, input);
  const surfaceId = optionalUuid(input.surfaceId, "surface_id");
  const securedAt = requireInstant(input.at, "at");
  const human = await requireHuman(ctx.em, input.svcUserId);
  for (let round = 0; round < maxRounds; round++) {
    const outcome = await ctx.em.transactional(async (tx): Promise<SecureOutcome | undefined> => {
      const decided = await decide(tx, account, human.id);
      if (decided !== undefined) return decided;
      const handle = newHandle();
      // The unique keys (one active link per account, one per human and platform, unique handles)
      // decide between concurrent calls: the loser inserts nothing and decides again.
      const inserted = await tx.execute(
        `insert into account_link (id, organization_id, environment, ref_hash, svc_user_id, handle, surface_id, secured_at, status)
         values (?, ?, ?, ?, ?, ?, ?, ?, 'active') on conflict do nothing returning id`,
        [uuid(), account.organizationId, account.environment, account.refHash, human.id, handle, surfaceId, securedAt],
      );
      if (inserted.length === 0) return undefined;
      enqueueAccountSecured(tx, ctx.clock, ctx.bus, {
        organizationId: account.organizationId,
        environment: account.environment,
        handle,
        surfaceId,
        securedAt,
      });
      return { kind: "secured", handle, trustedSince: securedAt, firstTime: true };
    });
    if (outcome === undefined) continue;
    if (outcome.kind === "secured" && outcome.firstTime) ctx.outbox.wake();
    return outcome;
  }
  throw new Error(`securing an account lost ${maxRounds} rounds to concurrent changes in a row`);
}

export type LinkState = { trusted: false } | { trusted: true; handle: string; trustedSince: Date };

/** Whether the account is secured now (by this human, when one is named). */
export async function accountLinkState(
  ctx: Pick<LinkContext, "em" | "pepper">,
  input: PartnerAccountInput & { svcUserId: string },
): Promise<LinkState> {
  const account = partnerAccount(ctx.pepper, input);
  const svcUserId = input.svcUserId === "" ? null : requireUuid(input.svcUserId, "svc_user_id");
  const link = await activeByReference(ctx.em, account);
  if (link === null || (svcUserId !== null && link.svcUserId !== svcUserId)) return { trusted: false };
  return { trusted: true, handle: link.handle, trustedSince: link.securedAt };
}

/**
 * Ends the active link of an account and sends account.unlinked in the same transaction. The
 * partner's revoke (`AccountConsoleService.UnlinkAccount`, by platform) calls it; the person's own
 * unlink (by human) has no operation yet.
 */
export async function unlinkAccount(
  ctx: LinkContext,
  input: PartnerAccountInput & {
    by: "human" | "platform";
    reason: "human" | "platform" | "credential_changed";
    at: Date;
  },
): Promise<{ handle: string }> {
  const account = partnerAccount(ctx.pepper, input);
  const handle = await ctx.em.transactional(async (tx) => {
    const [ended] = await tx.execute<{ handle: string; surface_id: string | null }[]>(
      `update account_link set status = 'unlinked', unlinked_at = ?, unlinked_by = ?, unlink_reason = ?
       where organization_id = ? and environment = ? and ref_hash = ? and status = 'active' returning handle, surface_id`,
      [input.at, input.by, input.reason, account.organizationId, account.environment, account.refHash],
    );
    if (ended === undefined) throw refuse("not_found", "no active link for this account");
    enqueueAccountUnlinked(tx, ctx.clock, ctx.bus, {
      ...account,
      handle: ended.handle,
      surfaceId: ended.surface_id,
      unlinkedAt: input.at,
      by: input.by,
      reason: input.reason,
    });
    return ended.handle;
  });
  ctx.outbox.wake();
  return { handle };
}

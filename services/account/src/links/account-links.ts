import type { KeyObject } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  announceCredentialChange,
  type Clock,
  committedEvent,
  type EnvironmentName,
  type EventBus,
  type Logger,
  type OutboxEvent,
  type OutboxRelay,
  uuid,
} from "@svc/platform";
import { humanDeleted } from "../humans/human-deleted.ts";
import { requireHuman } from "../humans/humans.ts";
import { optionalUuid, requireInstant, requireText, requireUuid } from "../input.ts";
import { invalidArgument, refuse } from "../refusal.ts";
import { AccountLink } from "./account-link.entity.ts";
import { handleFor } from "./handle.ts";
import { enqueueAccountSecured, enqueueAccountUnlinked } from "./link-events.ts";
import { addNotice, withdrawRelinkOffers } from "./notices.ts";
import { partnerReferenceHash } from "./partner-reference.ts";

export interface LinkContext {
  em: EntityManager;
  clock: Clock;
  pepper: KeyObject;
  bus: Pick<EventBus, "subject">;
  outbox: Pick<OutboxRelay, "publishCommitted">;
  /** After a commit that changed these people's links or notices: their open inboxes read again (`InboxChanged`). */
  inboxes: { changed(svcUserIds: Iterable<string | null>): void };
}

/** Deleting a person also tells the gateways (credential_watch.proto), and logs when that word is lost. */
export type DeletionContext = LinkContext & { bus: Pick<EventBus, "nc" | "subjectPrefix">; logger: Logger };

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
 * 4. otherwise a new active link with the person's handle at the platform: first time, and
 *    account.secured is sent. A relink after any unlink is this rule again (same handle).
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
    let secured: OutboxEvent | undefined;
    const outcome = await ctx.em.transactional(async (tx): Promise<SecureOutcome | undefined> => {
      const decided = await decide(tx, account, human.id);
      if (decided !== undefined) return decided;
      const handle = handleFor(ctx.pepper, { ...account, svcUserId: human.id });
      // The unique keys (one active link per account, one per human and platform, unique active
      // handles) decide between concurrent calls: the loser inserts nothing and decides again.
      const inserted = await tx.execute(
        `insert into account_link (id, organization_id, environment, ref_hash, svc_user_id, handle, surface_id, secured_at, status)
         values (?, ?, ?, ?, ?, ?, ?, ?, 'active') on conflict do nothing returning id`,
        [uuid(), account.organizationId, account.environment, account.refHash, human.id, handle, surfaceId, securedAt],
      );
      if (inserted.length === 0) return undefined;
      await withdrawRelinkOffers(tx, { ...account, svcUserId: human.id });
      secured = enqueueAccountSecured(tx, ctx.clock, ctx.bus, {
        organizationId: account.organizationId,
        environment: account.environment,
        handle,
        surfaceId,
        securedAt,
      });
      return { kind: "secured", handle, trustedSince: securedAt, firstTime: true };
    });
    if (outcome === undefined) continue;
    if (secured !== undefined) {
      void ctx.outbox.publishCommitted([committedEvent(secured)]);
      // A new link, which may have withdrawn an offer to re-link.
      ctx.inboxes.changed([human.id]);
    }
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

type UnlinkBy = NonNullable<AccountLink["unlinkedBy"]>;
type UnlinkReason = NonNullable<AccountLink["unlinkReason"]>;

interface LinkEnd {
  by: UnlinkBy;
  reason: UnlinkReason;
  at: Date;
}

interface EndedLink {
  id: string;
  organization_id: string;
  environment: EnvironmentName;
  handle: string;
  surface_id: string | null;
  svc_user_id: string;
  /** Its account.unlinked, written with it. */
  event: OutboxEvent;
}

/**
 * The one place a link ends (the state table's three unlink rows): the active links the condition
 * selects become unlinked, each sends account.unlinked, and a partner's revoke leaves the person a
 * notice, all in the caller's transaction. Links already ended are not selected, so a repeat sends
 * nothing. The caller announces them (`announceEnded`) after the commit.
 */
async function endLinks(
  tx: EntityManager,
  ctx: Pick<LinkContext, "clock" | "bus">,
  which: { condition: string; params: unknown[] },
  end: LinkEnd,
): Promise<EndedLink[]> {
  const rows = await tx.execute<Omit<EndedLink, "event">[]>(
    `update account_link set status = 'unlinked', unlinked_at = ?, unlinked_by = ?, unlink_reason = ?
      where status = 'active' and ${which.condition}
      returning id, organization_id, environment, handle, surface_id, svc_user_id`,
    [end.at, end.by, end.reason, ...which.params],
  );
  const ended: EndedLink[] = [];
  for (const link of rows) {
    const event = enqueueAccountUnlinked(tx, ctx.clock, ctx.bus, {
      organizationId: link.organization_id,
      environment: link.environment,
      handle: link.handle,
      surfaceId: link.surface_id,
      unlinkedAt: end.at,
      by: end.by,
      reason: end.reason,
    });
    ended.push({ ...link, event });
    if (end.by === "platform")
      await addNotice(tx, { svcUserId: link.svc_user_id, linkId: link.id, reason: end.reason, at: end.at });
  }
  return ended;
}

/** After the commit that ended links: their events leave at once, and their people's inboxes read again. */
function announceEnded(ctx: LinkContext, ended: readonly EndedLink[]): void {
  if (ended.length === 0) return;
  void ctx.outbox.publishCommitted(ended.map((link) => committedEvent(link.event)));
  ctx.inboxes.changed(ended.map((link) => link.svc_user_id));
}

/** The active link of a partner's account ends; undefined (and nothing sent) when it has none. */
async function endAccountLink(ctx: LinkContext, input: PartnerAccountInput & LinkEnd): Promise<string | undefined> {
  const account = partnerAccount(ctx.pepper, input);
  const [ended] = await ctx.em.transactional((tx) =>
    endLinks(
      tx,
      ctx,
      {
        condition: "organization_id = ? and environment = ? and ref_hash = ?",
        params: [account.organizationId, account.environment, account.refHash],
      },
      input,
    ),
  );
  if (ended === undefined) return undefined;
  announceEnded(ctx, [ended]);
  return ended.handle;
}

/**
 * The partner revokes a secured account (`AccountConsoleService.UnlinkAccount`, by platform): its
 * active link ends. NotFound without one.
 */
export async function unlinkAccount(
  ctx: LinkContext,
  input: PartnerAccountInput & { by: UnlinkBy; reason: UnlinkReason; at: Date },
): Promise<{ handle: string }> {
  const handle = await endAccountLink(ctx, input);
  if (handle === undefined) throw refuse("not_found", "no active link for this account");
  return { handle };
}

/**
 * The partner's server reports a changed sign-in detail of its user (decisions.md "Reporting a changed
 * sign-in detail"): the active link of the reference ends by platform, reason credential_changed, which
 * leaves the person a relink_offer. An account without an active link (never secured, unlinked, or
 * ended by an earlier report) is an answer, not a refusal: a retry changes nothing. Only the secret
 * API key of the account's own organization and environment reaches it.
 */
export async function reportCredentialChange(
  ctx: LinkContext,
  input: PartnerAccountInput & { secretKey: boolean },
): Promise<{ handle: string } | undefined> {
  if (input.organizationId === "" || input.environment === undefined)
    throw refuse("permission_denied", "the call names no partner (organization and environment)");
  if (!input.secretKey) throw refuse("unauthenticated", "a changed sign-in detail is reported with a secret API key");
  const handle = await endAccountLink(ctx, {
    ...input,
    by: "platform",
    reason: "credential_changed",
    at: ctx.clock.now(),
  });
  return handle === undefined ? undefined : { handle };
}

/**
 * The person ends one of their links in the app: by human, reason human. A link of theirs that has
 * already ended answers `alreadyUnlinked` with its end, and sends nothing. NotFound when none of the
 * person's links has the handle (another person's handle included).
 */
export async function unlinkOwnAccount(
  ctx: LinkContext,
  input: { svcUserId: string; handle: string },
): Promise<{ handle: string; unlinkedAt: Date; alreadyUnlinked: boolean }> {
  const svcUserId = requireUuid(input.svcUserId, "svc_user_id");
  const handle = requireText(input.handle, "handle", 64);
  const at = ctx.clock.now();
  let ended: EndedLink[] = [];
  const outcome = await ctx.em.transactional(async (tx) => {
    ended = await endLinks(
      tx,
      ctx,
      { condition: "svc_user_id = ? and handle = ?", params: [svcUserId, handle] },
      { by: "human", reason: "human", at },
    );
    if (ended.length > 0) return { handle, unlinkedAt: at, alreadyUnlinked: false };
    const earlier = await tx.findOne(AccountLink, { svcUserId, handle }, { orderBy: { unlinkedAt: "desc" } });
    if (earlier?.unlinkedAt == null) throw refuse("not_found", "none of your secured accounts has this handle");
    return { handle, unlinkedAt: earlier.unlinkedAt, alreadyUnlinked: true };
  });
  announceEnded(ctx, ended);
  return outcome;
}

/**
 * The person's own links, active and unlinked, newest first. Unlike the partner's list they name the
 * partner (organization and environment), since the person needs to know where each one is.
 */
export async function listOwnAccounts(em: EntityManager, svcUserId: string): Promise<AccountLink[]> {
  const human = await requireHuman(em, svcUserId);
  return em.find(AccountLink, { svcUserId: human.id }, { orderBy: { securedAt: "desc", id: "desc" } });
}

/**
 * Deletes the person (the app's "delete my account"), in one transaction: every active link ends by
 * human, reason human; the link rows stay, since the partner's list must still show them unlinked, but
 * their svc_user_id is erased; then the human row goes, and with it (foreign keys, on delete cascade)
 * sign-in identities, passkeys and sandbox passkeys, devices, age evidence and notices. Ceremonies
 * (no foreign key: a private-mode registration names a human not yet created) are deleted by id.
 *
 * Kept on the link rows: the handle (derived from the erased id, so nothing recomputes it, and the
 * partner already holds it) and ref_hash (the keyed hash of the partner's own user reference: it names
 * the partner's user, not the person, and lets the partner's platform_user_ref filter find its row).
 *
 * The gateways forget the sign-in sessions they resolved to the person before this answers (`humanDeleted`).
 * That word is published after the commit, not kept in the outbox: an outbox row would keep the erased id.
 * Should NATS not take it, the other gateway replicas forget when their cache entries expire
 * (GATEWAY_USER_SESSION_CACHE_TTL), and the replica that asked forgets at once itself.
 *
 * A repeat, or an unknown id, changes nothing and answers `alreadyDeleted`.
 */
export async function deleteHuman(
  ctx: DeletionContext,
  svcUserId: string,
): Promise<{ linksUnlinked: number; alreadyDeleted: boolean }> {
  const id = requireUuid(svcUserId, "svc_user_id");
  const at = ctx.clock.now();
  let ended: EndedLink[] = [];
  const outcome = await ctx.em.transactional(async (tx) => {
    // Locking the human first makes a concurrent SecureAccount (whose insert refers to it) wait, then fail.
    const found = await tx.execute(`select id from human where id = ? for update`, [id]);
    if (found.length === 0) return { linksUnlinked: 0, alreadyDeleted: true };
    ended = await endLinks(
      tx,
      ctx,
      { condition: "svc_user_id = ?", params: [id] },
      { by: "human", reason: "human", at },
    );
    await tx.execute(`update account_link set svc_user_id = null where svc_user_id = ?`, [id]);
    await tx.execute(`delete from passkey_ceremony where svc_user_id = ?`, [id]);
    await tx.execute(`delete from human where id = ?`, [id]);
    return { linksUnlinked: ended.length, alreadyDeleted: false };
  });
  announceEnded(ctx, ended);
  if (!outcome.alreadyDeleted)
    await announceCredentialChange(ctx.bus.nc, ctx.bus.subjectPrefix, humanDeleted(id)).catch((error: unknown) =>
      ctx.logger.warn("person's deletion not announced; other gateway replicas forget them when their cache expires", {
        error,
      }),
    );
  return outcome;
}

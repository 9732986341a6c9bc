import type { EntityManager } from "@mikro-orm/postgresql";
import { type Clock, constantTimeEqual, type Queryable, uuid } from "@svc/platform";
import type pg from "pg";
import { requireText, requireUuid } from "../input.ts";
import { refuse } from "../refusal.ts";
import { Human, SignInIdentity } from "./human.entity.ts";

export interface HumanSummary {
  svcUserId: string;
  passkeyCount: number;
  deviceCount: number;
  webPushSubscriptions: number;
  sandboxBehavior: NonNullable<Human["sandboxBehavior"]> | null;
  sandboxEnvironment: NonNullable<Human["sandboxEnvironment"]> | null;
  createdAt: Date;
}

/** The human with this id, or NotFound. Every operation naming a human goes through here. */
export async function requireHuman(em: EntityManager, svcUserId: string, field = "svc_user_id"): Promise<Human> {
  const id = requireUuid(svcUserId, field);
  const human = await em.findOne(Human, { id });
  if (human === null) throw refuse("not_found", `no human with svc_user_id ${id}`);
  return human;
}

/**
 * A prepared statement about one human, `$1` being its id (checked to be a uuid first): the statement's row, or
 * NotFound when no human has that id. Hot reads that name a person answer from one such statement.
 */
export async function queryHuman<Row extends pg.QueryResultRow>(
  db: Queryable,
  svcUserId: string,
  statement: { name: string; text: string },
): Promise<Row & { id: string }> {
  const id = requireUuid(svcUserId, "svc_user_id");
  const { rows } = await db.query<Row>({ ...statement, values: [id] });
  const row = rows[0];
  if (row === undefined) throw refuse("not_found", `no human with svc_user_id ${id}`);
  return { ...row, id };
}

/**
 * A human and its counts in one prepared statement: gate asks for it with every request that names a person
 * (its devices and sandbox answer), and through the ORM its three queries took 2.5 ms of the request's time.
 */
export async function describeHuman(db: Queryable, svcUserId: string): Promise<HumanSummary> {
  const human = await queryHuman<{
    created_at: Date;
    sandbox_behavior: HumanSummary["sandboxBehavior"];
    sandbox_environment: HumanSummary["sandboxEnvironment"];
    passkeys: number;
    devices: number;
    subscriptions: number;
  }>(db, svcUserId, {
    name: "describe_human",
    text: `select h.created_at, h.sandbox_behavior, h.sandbox_environment,
        (select count(*)::int from passkey where svc_user_id = h.id) as passkeys,
        (select count(*)::int from device where svc_user_id = h.id) as devices,
        (select count(*)::int from push_subscription where svc_user_id = h.id) as subscriptions
      from human h where h.id = $1`,
  });
  return {
    svcUserId: human.id,
    passkeyCount: human.passkeys,
    deviceCount: human.devices,
    webPushSubscriptions: human.subscriptions,
    sandboxBehavior: human.sandbox_behavior,
    sandboxEnvironment: human.sandbox_environment,
    createdAt: human.created_at,
  };
}

/** Inserts a human row now, so rows that refer to it can follow in the same transaction. */
export async function insertHuman(
  em: EntityManager,
  human: Pick<Human, "id" | "createdAt"> & Partial<Pick<Human, "sandboxBehavior" | "sandboxEnvironment">>,
): Promise<void> {
  await em.execute(`insert into human (id, created_at, sandbox_behavior, sandbox_environment) values (?, ?, ?, ?)`, [
    human.id,
    human.createdAt,
    human.sandboxBehavior ?? null,
    human.sandboxEnvironment ?? null,
  ]);
}

/** Another call created the identity first; this transaction's human must not stay behind. */
class IdentityTaken extends Error {}

/**
 * The human behind an OpenID Connect identity, created on first sight. Concurrent first sign-ins
 * create one human: the identity's primary key decides, and the loser's transaction (with the human
 * it inserted) rolls back before it reads the winner's. `emailHash` is what the identity keeps of the
 * token's address (see `claimedEmailHash`): written when it differs from what is kept, so a session's
 * every request reads and only a changed address writes.
 */
export async function resolveSignedInHuman(
  em: EntityManager,
  clock: Clock,
  input: { issuer: string; subject: string; emailHash: Buffer | null | undefined },
): Promise<{ svcUserId: string; created: boolean }> {
  const issuer = requireText(input.issuer, "issuer");
  const subject = requireText(input.subject, "subject", 255);
  const { emailHash } = input;
  const existing = await findIdentity(em, issuer, subject);
  if (existing !== undefined) {
    await keepEmail(em, clock, existing, emailHash);
    return { svcUserId: existing.svcUserId, created: false };
  }
  try {
    const svcUserId = await em.transactional(async (tx) => {
      const now = clock.now();
      const id = uuid();
      await insertHuman(tx, { id, createdAt: now });
      const inserted = await tx.execute<{ svc_user_id: string }[]>(
        `insert into sign_in_identity (issuer, subject, svc_user_id, created_at, email_hash, email_verified_at) values (?, ?, ?, ?, ?, ?) on conflict (issuer, subject) do nothing returning svc_user_id`,
        [issuer, subject, id, now, emailHash ?? null, emailHash ? now : null],
      );
      if (inserted.length === 0) throw new IdentityTaken();
      return id;
    });
    return { svcUserId, created: true };
  } catch (error) {
    if (!(error instanceof IdentityTaken)) throw error;
  }
  const winner = await findIdentity(em, issuer, subject);
  if (winner === undefined) throw new Error(`sign-in identity ${issuer} ${subject} conflicted but cannot be read`);
  await keepEmail(em, clock, winner, emailHash);
  return { svcUserId: winner.svcUserId, created: false };
}

async function keepEmail(
  em: EntityManager,
  clock: Clock,
  identity: SignInIdentity,
  emailHash: Buffer | null | undefined,
): Promise<void> {
  if (emailHash === undefined) return;
  const kept = identity.emailHash ?? null;
  const same =
    kept === null || emailHash === null ? kept === emailHash : constantTimeEqual(Buffer.from(kept), emailHash);
  if (same) return;
  await em.execute(
    `update sign_in_identity set email_hash = ?, email_verified_at = ? where issuer = ? and subject = ?`,
    [emailHash, emailHash ? clock.now() : null, identity.issuer, identity.subject],
  );
}

/**
 * The subject of a human's sign-in identity at the development identity provider, or NotFound: a
 * human who never signed in there (one created by a passkey registration in private mode) has none.
 */
export async function devSignInSubject(em: EntityManager, svcUserId: string, devIssuer: string): Promise<string> {
  const human = await requireHuman(em, svcUserId);
  const identity = await em.findOne(SignInIdentity, { issuer: devIssuer, svcUserId: human.id });
  if (identity === null) throw refuse("not_found", `human ${human.id} has no sign-in identity at ${devIssuer}`);
  return identity.subject;
}

async function findIdentity(em: EntityManager, issuer: string, subject: string): Promise<SignInIdentity | undefined> {
  return (await em.findOne(SignInIdentity, { issuer, subject })) ?? undefined;
}

import type { KeyObject } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { EnvironmentName } from "@svc/platform";
import { requireText } from "../input.ts";
import { invalidArgument, refuse } from "../refusal.ts";
import type { AccountLink } from "./account-link.entity.ts";
import { partnerReferenceHash } from "./partner-reference.ts";

/** The spec's list page: 1-100 rows, 25 when the caller names no size. */
const defaultPageSize = 25;
const maxPageSize = 100;

/** Whose accounts: the partner the gateway authenticated (a secret API key's organization and environment). */
export interface ListingPartner {
  organizationId: string;
  environment: EnvironmentName | undefined;
  secretKey: boolean;
}

export interface SecuredAccountQuery {
  /** Exact reference to look for; undefined lists every account. */
  partnerUserRef: string | undefined;
  status: AccountLink["status"] | undefined;
  /** 0 is the default page size. */
  limit: number;
  offset: number;
  /** A page's `nextCursor`: this page starts after that row (keyset paging, beyond the spec). */
  cursor: string | undefined;
}

export interface SecuredAccountRow {
  handle: string;
  status: AccountLink["status"];
  securedAt: Date;
  unlinkedAt: Date | null;
  unlinkedBy: AccountLink["unlinkedBy"];
  unlinkReason: AccountLink["unlinkReason"];
  surfaceId: string | null;
}

export interface SecuredAccountPage {
  rows: SecuredAccountRow[];
  total: number;
  limit: number;
  /** Where the next page starts; undefined when this page holds the last matching row. */
  nextCursor: string | undefined;
}

/**
 * A position in the list's order (`secured_at` desc, then id desc): the row a page ended at. Sent
 * as 32 base64url characters, 8 bytes of `secured_at` in microseconds since the epoch (big-endian; the
 * column's own precision, which a JavaScript Date would cut to milliseconds) and the row's 16-byte id.
 * It names a place, not a query, so it stays valid while rows are added or unlinked: rows secured
 * after the first page was read sort before it and are never read twice.
 */
interface ListPosition {
  securedAtMicros: bigint;
  id: string;
}

const cursorBytes = 24;
/** Year 10000: PostgreSQL's timestamptz goes further, but no link is secured then. */
const lastMicros = 253_402_300_800_000_000n;

function encodeCursor(position: ListPosition): string {
  const bytes = Buffer.alloc(cursorBytes);
  bytes.writeBigInt64BE(position.securedAtMicros, 0);
  Buffer.from(position.id.replaceAll("-", ""), "hex").copy(bytes, 8);
  return bytes.toString("base64url");
}

function decodeCursor(cursor: string): ListPosition {
  const bytes = /^[A-Za-z0-9_-]{32}$/.test(cursor) ? Buffer.from(cursor, "base64url") : Buffer.alloc(0);
  if (bytes.length !== cursorBytes) throw invalidArgument("cursor is not a cursor this list gave out");
  const securedAtMicros = bytes.readBigInt64BE(0);
  if (securedAtMicros < 0n || securedAtMicros >= lastMicros)
    throw invalidArgument("cursor is not a cursor this list gave out");
  const hex = bytes.subarray(8).toString("hex");
  const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return { securedAtMicros, id };
}

/** The exact instant as PostgreSQL reads it: ISO 8601 with six fractional digits. */
function timestampText(micros: bigint): string {
  const iso = new Date(Number(micros / 1000n)).toISOString();
  return `${iso.slice(0, -1)}${String(micros % 1000n).padStart(3, "0")}Z`;
}

interface PageRow {
  total: string;
  id: string | null;
  secured_micros: string | null;
  handle: string | null;
  status: AccountLink["status"];
  secured_at: Date;
  unlinked_at: Date | null;
  unlinked_by: AccountLink["unlinkedBy"];
  unlink_reason: AccountLink["unlinkReason"];
  surface_id: string | null;
}

/**
 * One page of a partner's secured accounts, newest first (`secured_at`, then the row id so equal
 * times keep one order across pages), with the number of all matching rows. Only the partner's own
 * organization and environment are ever read; a reference is matched by its keyed hash.
 */
export async function listSecuredAccounts(
  ctx: { em: EntityManager; pepper: KeyObject },
  partner: ListingPartner,
  query: SecuredAccountQuery,
): Promise<SecuredAccountPage> {
  if (partner.organizationId === "" || partner.environment === undefined)
    throw refuse("permission_denied", "the call names no partner (organization and environment)");
  if (!partner.secretKey) throw refuse("unauthenticated", "secured accounts are listed with a secret API key only");
  const limit = query.limit === 0 ? defaultPageSize : query.limit;
  if (!Number.isInteger(limit) || limit < 1 || limit > maxPageSize)
    throw invalidArgument(`limit must be 1-${maxPageSize}`);
  if (!Number.isInteger(query.offset) || query.offset < 0) throw invalidArgument("offset must be 0 or more");
  if (query.cursor !== undefined && query.offset !== 0)
    throw invalidArgument("cursor and offset are alternatives: send one of them");
  const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);

  const { organizationId, environment } = partner;
  const conditions = ["organization_id = ?", "environment = ?"];
  const params: unknown[] = [organizationId, environment];
  if (query.partnerUserRef !== undefined) {
    const partnerUserRef = requireText(query.partnerUserRef, "platform_user_ref");
    conditions.push("ref_hash = ?");
    params.push(partnerReferenceHash(ctx.pepper, { organizationId, environment, partnerUserRef }));
  }
  if (query.status !== undefined) {
    conditions.push("status = ?");
    params.push(query.status);
  }
  const where = conditions.join(" and ");
  // `total`: with a reference, a count over its index (a handful of rows: one account's links); without,
  // the sum of the counts migration 0009 keeps per platform and status, whatever the partner's size.
  const counted =
    query.partnerUserRef === undefined
      ? `select coalesce(sum(n), 0) as total from account_link_count where ${where}`
      : `select count(*) as total from account_link where ${where}`;
  // After a cursor: the rows below it in (secured_at desc, id desc). The first condition bounds the
  // index range; the second only drops the cursor's own instant's rows up to and including its row.
  const keyset =
    after === undefined ? "" : " and secured_at <= ?::timestamptz and (secured_at < ?::timestamptz or id < ?::uuid)";
  const keysetParams =
    after === undefined ? [] : [timestampText(after.securedAtMicros), timestampText(after.securedAtMicros), after.id];
  // One statement, so the total and the page read the same snapshot; the count row comes back even
  // when the page is past the end. One row more than the page tells whether there is a next page.
  // Indexes: migrations 0006 and 0009.
  const rows = await ctx.em.execute<PageRow[]>(
    `select matching.total, page.*
       from (${counted}) as matching
       left join lateral (
         select id, (extract(epoch from secured_at) * 1000000)::bigint as secured_micros,
                handle, status, secured_at, unlinked_at, unlinked_by, unlink_reason, surface_id
           from account_link where ${where}${keyset}
          order by secured_at desc, id desc
          limit ? offset ?) as page on true`,
    [...params, ...params, ...keysetParams, limit + 1, query.offset],
  );
  const found = rows.filter(
    (row): row is PageRow & { id: string; secured_micros: string; handle: string } => row.handle !== null,
  );
  const last = found.length > limit ? found[limit - 1] : undefined;
  return {
    total: Number(rows[0]?.total ?? 0),
    limit,
    nextCursor: last && encodeCursor({ securedAtMicros: BigInt(last.secured_micros), id: last.id }),
    rows: found.slice(0, limit).map((row) => ({
      handle: row.handle,
      status: row.status,
      securedAt: new Date(row.secured_at),
      unlinkedAt: row.unlinked_at === null ? null : new Date(row.unlinked_at),
      unlinkedBy: row.unlinked_by,
      unlinkReason: row.unlink_reason,
      surfaceId: row.surface_id,
    })),
  };
}

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
}

interface PageRow {
  total: string;
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
  // One statement, so the total and the page read the same snapshot; the count row comes back even
  // when the page is past the end. Indexes: migration 0006.
  const rows = await ctx.em.execute<PageRow[]>(
    `select matching.total, page.*
       from (select count(*) as total from account_link where ${where}) as matching
       left join lateral (
         select handle, status, secured_at, unlinked_at, unlinked_by, unlink_reason, surface_id
           from account_link where ${where}
          order by secured_at desc, id desc
          limit ? offset ?) as page on true`,
    [...params, ...params, limit, query.offset],
  );
  return {
    total: Number(rows[0]?.total ?? 0),
    limit,
    rows: rows
      .filter((row): row is PageRow & { handle: string } => row.handle !== null)
      .map((row) => ({
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

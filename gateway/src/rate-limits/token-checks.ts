import type { AttestationLedgerCheck } from "@svc/contracts/attestation";

/**
 * The ledger of first token checks (table `token_checks`, migration 0010): verify-token records the
 * check of a token that passed every other rule, in the statement that decides the request's rate limits
 * (rate-limiter.ts), and the primary key makes exactly one check of a token the first across every
 * replica. A refused request records nothing.
 */

/**
 * How long past its token's expiry a ledger row is kept. Replicas' clocks differ a little; a row
 * dropped while another replica still sees the token unexpired would let a replay pass as a first check.
 */
export const ledgerRetentionMarginMs = 10 * 60_000;

/** The ledger alone, for a batch that no rate limit counts: rows in hash order, as in the joined statement. */
export const recordChecksStatement = {
  name: "record_token_checks",
  text: `insert into token_checks (payload_hash, checked_at, expires_at)
           select c.hash, to_timestamp($3::bigint / 1000.0), to_timestamp(c.expires_at / 1000.0)
             from unnest($1::bytea[], $2::bigint[]) as c(hash, expires_at)
            order by c.hash
           on conflict do nothing
           returning payload_hash`,
};

/** A batch's checks as the statements' arrays; `requests` is each check's request, from 1. */
export function ledgerArrays(checks: readonly (AttestationLedgerCheck | undefined)[]): {
  hashes: Buffer[];
  expiries: number[];
  requests: number[];
} {
  const hashes: Buffer[] = [];
  const expiries: number[] = [];
  const requests: number[] = [];
  checks.forEach((check, r) => {
    if (!check) return;
    hashes.push(check.payloadHash);
    expiries.push(check.expiresAt.getTime());
    requests.push(r + 1);
  });
  return { hashes, expiries, requests };
}

/**
 * Each request's answer from the hashes the statement inserted: true for the first allowed copy of an
 * inserted token in the batch's order, false for every other allowed check, undefined without a check
 * or when refused.
 */
export function firstChecks(
  checks: readonly (AttestationLedgerCheck | undefined)[],
  inserted: readonly Buffer[],
  allowed: (request: number) => boolean,
): (boolean | undefined)[] {
  const firsts = new Set(inserted.map((hash) => hash.toString("hex")));
  return checks.map((check, r) => (check && allowed(r) ? firsts.delete(check.payloadHash.toString("hex")) : undefined));
}

import type { EntityManager } from "@mikro-orm/postgresql";
import { invalidArgument } from "../refusal.ts";
import { type AgeVerdict, ageVerdictAt, parseCalendarDate } from "./age-evaluation.ts";
import { AgeEvidence } from "./age-evidence.entity.ts";

export interface AgeEvidenceInput {
  svcUserId: string;
  /** `YYYY-MM-DD` */
  birthDate: string;
  /** Where it came from: "sandbox". */
  source: string;
  recordedAt: Date;
}

/** Records a birth date for a sandbox human; real people's evidence comes from a wallet (`recordWalletVerdicts`). */
export async function recordAgeEvidence(em: EntityManager, evidence: AgeEvidenceInput): Promise<void> {
  parseCalendarDate(evidence.birthDate);
  if (evidence.source === "") throw invalidArgument("an age evidence source is required");
  em.create(AgeEvidence, evidence);
  await em.flush();
}

/** Oldest thresholds anyone asks for stay far below this; a larger one is a caller's mistake. */
const maxThreshold = 150;

/** A wallet credential's verdict at one threshold: all that is kept of a presentation. */
export interface WalletVerdict {
  source: "sd-jwt-vc" | "mdoc";
  issuer: string;
  threshold: number;
  result: "over" | "under";
  verifiedAt: Date;
  validUntil: Date;
}

export function recordWalletVerdicts(em: EntityManager, svcUserId: string, verdicts: readonly WalletVerdict[]): void {
  for (const verdict of verdicts)
    em.create(AgeEvidence, {
      svcUserId,
      source: verdict.source,
      issuer: verdict.issuer,
      threshold: verdict.threshold,
      result: verdict.result,
      validUntil: verdict.validUntil,
      recordedAt: verdict.verifiedAt,
    });
}

/**
 * Whether evidence answers a threshold at an instant: a birth date always does; "over" at a threshold
 * holds for every threshold at or below it (an age only grows); "under" at a threshold holds for every
 * threshold at or above it, and only until its `valid_until`.
 */
function answers(evidence: AgeEvidence, threshold: number, at: Date): AgeVerdict | undefined {
  if (evidence.birthDate) return ageVerdictAt(evidence.birthDate, threshold, at);
  if (evidence.threshold === null || evidence.threshold === undefined) return undefined;
  if (evidence.result === "over" && evidence.threshold >= threshold) return "over";
  if (evidence.result === "under" && evidence.threshold <= threshold && evidence.validUntil && evidence.validUntil > at)
    return "under";
  return undefined;
}

/** The verdict of the newest evidence that answers the threshold; `unavailable` without any. */
export async function coveringVerdict(
  em: EntityManager,
  svcUserId: string,
  threshold: number,
  at: Date,
): Promise<{ verdict: AgeVerdict; source: string }> {
  const evidence = await em.find(AgeEvidence, { svcUserId }, { orderBy: [{ recordedAt: "desc" }, { id: "desc" }] });
  for (const row of evidence) {
    const verdict = answers(row, threshold, at);
    if (verdict) return { verdict, source: row.source };
  }
  return { verdict: "unavailable", source: "" };
}

export function requireThreshold(threshold: number): number {
  if (!Number.isInteger(threshold) || threshold < 1 || threshold > maxThreshold)
    throw invalidArgument(`threshold must be a whole number of years from 1 to ${maxThreshold}: ${threshold}`);
  return threshold;
}

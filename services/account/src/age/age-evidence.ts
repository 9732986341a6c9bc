import type { EntityManager } from "@mikro-orm/postgresql";
import { requireHuman } from "../humans/humans.ts";
import { requireInstant } from "../input.ts";
import { invalidArgument } from "../refusal.ts";
import { type AgeVerdict, ageVerdictAt, parseCalendarDate } from "./age-evaluation.ts";
import { AgeEvidence } from "./age-evidence.entity.ts";

export interface AgeEvidenceInput {
  svcUserId: string;
  /** `YYYY-MM-DD` */
  birthDate: string;
  /** Where it came from, for example "document" or "sandbox". */
  source: string;
  recordedAt: Date;
}

/**
 * Records a birth date for a human. Only sandbox creation calls it today: the contract has no public
 * way for real humans to present evidence yet (see the README).
 */
export async function recordAgeEvidence(em: EntityManager, evidence: AgeEvidenceInput): Promise<void> {
  parseCalendarDate(evidence.birthDate);
  if (evidence.source === "") throw invalidArgument("an age evidence source is required");
  em.create(AgeEvidence, evidence);
  await em.flush();
}

/** Oldest thresholds anyone asks for stay far below this; a larger one is a caller's mistake. */
const maxThreshold = 150;

/** The human's age against a threshold at an instant, from the newest evidence; `unavailable` without any. */
export async function evaluateAge(
  em: EntityManager,
  input: { svcUserId: string; threshold: number; at: Date | undefined },
): Promise<{ verdict: AgeVerdict; source: string }> {
  if (!Number.isInteger(input.threshold) || input.threshold < 1 || input.threshold > maxThreshold) {
    throw invalidArgument(`threshold must be a whole number of years from 1 to ${maxThreshold}: ${input.threshold}`);
  }
  const at = requireInstant(input.at, "at");
  const human = await requireHuman(em, input.svcUserId);
  const newest = await em.findOne(
    AgeEvidence,
    { svcUserId: human.id },
    { orderBy: [{ recordedAt: "desc" }, { id: "desc" }] },
  );
  if (newest === null) return { verdict: "unavailable", source: "" };
  return { verdict: ageVerdictAt(newest.birthDate, input.threshold, at), source: newest.source };
}

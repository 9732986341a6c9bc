import type { EntityManager } from "@mikro-orm/postgresql";
import { requireHuman } from "../humans/humans.ts";
import { requireInstant } from "../input.ts";
import type { AgeVerdict } from "./age-evaluation.ts";
import { coveringVerdict, requireThreshold } from "./age-evidence.ts";
import { claimRequestPresentation } from "./wallet/presentations.ts";

/**
 * The human's age against a threshold at an instant. Confirming a gate request first makes the verdict
 * of a presentation accepted for that request the human's own evidence.
 */
export async function evaluateAge(
  em: EntityManager,
  input: { svcUserId: string; threshold: number; at: Date | undefined; requestId: string },
): Promise<{ verdict: AgeVerdict; source: string }> {
  requireThreshold(input.threshold);
  const at = requireInstant(input.at, "at");
  const human = await requireHuman(em, input.svcUserId);
  if (input.requestId !== "") await claimRequestPresentation(em, human.id, input.requestId);
  return coveringVerdict(em, human.id, input.threshold, at);
}

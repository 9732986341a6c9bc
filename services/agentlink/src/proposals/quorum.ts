import { refuse } from "../refusal.ts";

/** decisions.md, "Quorum approvals": 2-10 distinct approvers. */
const approversPerCard = { min: 2, max: 10 } as const;

/**
 * A quorum card's approvers and thresholds as inquire takes them: 2-10 distinct opaque_ids, `approve`
 * (M) from 1 to their number, `deny` (D) at least 1 (unset: 1, a single veto), and M + D at most their
 * number plus one, so that the card cannot be both approved and denied nor wait on a decision nobody
 * can give.
 */
export function checkedQuorum(
  approvers: readonly string[],
  quorum: { approve: number; deny?: number | undefined } | undefined,
): { approve: number; deny: number } {
  if (approvers.length === 0) throw refuse("invalid_argument", "quorum is given only with approvers");
  if (approvers.length < approversPerCard.min || approvers.length > approversPerCard.max)
    throw refuse(
      "invalid_argument",
      `approvers must hold ${approversPerCard.min}-${approversPerCard.max} opaque_ids, not ${approvers.length}`,
      { code: "invalid_approvers" },
    );
  approvers.forEach((id, index) => {
    if (id.length === 0)
      throw refuse("invalid_argument", `approvers[${index}] is empty`, { code: "invalid_approvers" });
    const first = approvers.indexOf(id);
    if (first !== index)
      throw refuse("invalid_argument", `approvers[${index}] repeats approvers[${first}]`, {
        code: "duplicate_approver",
      });
  });
  if (quorum === undefined)
    throw refuse("invalid_argument", "approvers need a quorum: {approve, deny}", { code: "invalid_quorum" });
  const n = approvers.length;
  const { approve, deny = 1 } = quorum;
  if (!Number.isInteger(approve) || approve < 1 || approve > n)
    throw refuse("invalid_argument", `quorum.approve must be 1-${n}, the number of approvers at most`, {
      code: "invalid_quorum",
    });
  if (!Number.isInteger(deny) || deny < 1)
    throw refuse("invalid_argument", "quorum.deny must be at least 1", { code: "invalid_quorum" });
  if (approve + deny > n + 1)
    throw refuse(
      "invalid_argument",
      `quorum.approve + quorum.deny must be at most ${n + 1}, the number of approvers plus one`,
      { code: "invalid_quorum" },
    );
  return { approve, deny };
}

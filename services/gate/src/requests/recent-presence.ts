/**
 * Recent Presence (decisions.md): a request naming a returning person who completed a ceremony on the
 * same gate and environment within the presence window is answered at once with `pass`. Who the
 * person is: the `svc_user_id` when given (the human who confirmed), else the `partner_user_ref` (the
 * reference a ceremony was completed under). A request that asks to secure an account always runs a
 * ceremony: a link is made only by a passkey confirmation. An Age Gate always runs one too: a pass
 * carries no age result, and a partner must read one before unlocking anything behind an Age Gate.
 * A pre-check's presence ceremony (`parent_request_id`) runs one as well: its pre-check already looked
 * for Recent Presence, and the pre-check confirmed meanwhile (a sandbox human answers it at once) must
 * not turn the ceremony the partner asked for into a pass without a token.
 */
export type PresenceLookup = { by: "human"; svcUserId: string } | { by: "reference"; refHash: Buffer };

export function presenceLookup(input: {
  svcUserId: string;
  refHash: Buffer | null;
  securesAccount: boolean;
  ageGate: boolean;
  presenceCeremony: boolean;
}): PresenceLookup | undefined {
  if (input.securesAccount || input.ageGate || input.presenceCeremony) return undefined;
  if (input.svcUserId !== "") return { by: "human", svcUserId: input.svcUserId };
  if (input.refHash) return { by: "reference", refHash: input.refHash };
  return undefined;
}

/** The earliest completion instant that still counts at `now`. */
export const presenceSince = (now: Date, windowMs: number): Date => new Date(now.getTime() - windowMs);

/**
 * The WebAuthn relying party of the person's side: the gateway's public host. A page may name its own
 * origin (the browser puts that origin into every assertion, so a wrong claim only makes the
 * assertion fail), but only an origin on the relying party's host is taken; anything else falls back
 * to the public origin.
 */
export function relyingParty(
  publicOrigin: string,
  claimedOrigin: string | undefined,
): { rpId: string; origin: string } {
  const rpId = new URL(publicOrigin).hostname;
  if (claimedOrigin !== undefined) {
    const claimed = URL.parse(claimedOrigin);
    if (claimed && (claimed.protocol === "https:" || claimed.protocol === "http:") && claimed.hostname === rpId)
      return { rpId, origin: claimed.origin };
  }
  return { rpId, origin: publicOrigin };
}

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
  return (
    (claimedOrigin !== undefined && pageRelyingParty(publicOrigin, claimedOrigin)) || { rpId, origin: publicOrigin }
  );
}

/** The relying party for a page at `claimedOrigin`, or undefined when that origin is not on the relying party's host. */
export function pageRelyingParty(
  publicOrigin: string,
  claimedOrigin: string,
): { rpId: string; origin: string } | undefined {
  const rpId = new URL(publicOrigin).hostname;
  const claimed = URL.parse(claimedOrigin);
  if (claimed && (claimed.protocol === "https:" || claimed.protocol === "http:") && claimed.hostname === rpId)
    return { rpId, origin: claimed.origin };
  return undefined;
}

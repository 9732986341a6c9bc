import { generateAuthenticationOptions, verifyAuthenticationResponse } from "@simplewebauthn/server";
import { uuid } from "@svc/platform";
import { requireHuman } from "../humans/humans.ts";
import { requireText, requireUuid } from "../input.ts";
import { refuse } from "../refusal.ts";
import { ceremonyLifetimeMs, consumeCeremony, startCeremony } from "./ceremonies.ts";
import { Passkey } from "./passkey.entity.ts";
import type { BegunCeremony, PasskeyContext } from "./registration.ts";
import { relyingParty } from "./relying-party.ts";
import { authenticationResponse } from "./webauthn-json.ts";
import { userHandleOf } from "./webauthn-policy.ts";

const requireBinding = (binding: string) => requireText(binding, "binding", 256);

/** A caller's own challenge: canonical base64url of 32-64 bytes, so the signed clientData names exactly it. */
function requireChallenge(challenge: string): Uint8Array<ArrayBuffer> {
  const bytes = Buffer.from(challenge, "base64url");
  if (bytes.length < 32 || bytes.length > 64 || bytes.toString("base64url") !== challenge)
    throw refuse("invalid_argument", "challenge must be the base64url form of 32 to 64 bytes");
  return new Uint8Array(bytes);
}

/**
 * Starts an assertion bound to what it confirms. Naming a human offers only that human's passkeys
 * (for this relying party, plus a sandbox passkey, which answers for any); without one, any
 * discoverable passkey may answer and the human is whoever holds it. A caller that commits to content
 * through the challenge itself (Agents Ask's confirm) gives it; the ceremony stays single use.
 */
export async function beginAssertion(
  ctx: PasskeyContext,
  input: { svcUserId: string; rpId: string; origin: string; binding: string; challenge?: string | undefined },
): Promise<BegunCeremony> {
  const party = relyingParty(input.rpId, input.origin);
  const binding = requireBinding(input.binding);
  const challenge = input.challenge === undefined ? undefined : requireChallenge(input.challenge);
  let svcUserId: string | null = null;
  let allowCredentials: { id: string; transports: string[] }[] = [];
  if (input.svcUserId !== "") {
    svcUserId = (await requireHuman(ctx.em, input.svcUserId)).id;
    const passkeys = await ctx.em.find(
      Passkey,
      { svcUserId, $or: [{ rpId: party.rpId }, { rpId: null }] },
      { orderBy: { createdAt: "asc" } },
    );
    if (passkeys.length === 0)
      throw refuse("failed_precondition", `human ${svcUserId} has no passkey for ${party.rpId}`);
    allowCredentials = passkeys.map((passkey) => ({ id: passkey.credentialId, transports: passkey.transports }));
  }
  const options = await generateAuthenticationOptions({
    rpID: party.rpId,
    allowCredentials,
    ...(challenge && { challenge }),
    userVerification: "required",
    timeout: ceremonyLifetimeMs,
  });
  const now = ctx.clock.now();
  const ceremony = {
    id: uuid(),
    kind: "assertion" as const,
    challenge: options.challenge,
    svcUserId,
    createsHuman: false,
    ...party,
    binding,
    createdAt: now,
    expiresAt: new Date(now.getTime() + ceremonyLifetimeMs),
  };
  await startCeremony(ctx.em, ceremony);
  return { ceremonyId: ceremony.id, optionsJson: JSON.stringify(options), expiresAt: ceremony.expiresAt };
}

export interface VerifiedAssertion {
  svcUserId: string;
  credentialId: string;
  userVerified: boolean;
}

/**
 * Finishes an assertion: the ceremony is used up first, then the response must be signed by a passkey
 * the ceremony allows, over its challenge, origin and relying party, with user verification (unless the
 * caller judges that itself), and with a signature counter above the stored one (unless the
 * authenticator keeps none, reporting 0 always).
 */
export async function finishAssertion(
  ctx: PasskeyContext,
  input: { ceremonyId: string; responseJson: string; binding: string; acceptWithoutUserVerification?: boolean },
): Promise<VerifiedAssertion> {
  const ceremonyId = requireUuid(input.ceremonyId, "ceremony_id");
  const binding = requireBinding(input.binding);
  const response = authenticationResponse(input.responseJson);
  const ceremony = await consumeCeremony(ctx.em, ctx.clock.now(), { id: ceremonyId, kind: "assertion", binding });

  const passkey = await ctx.em.findOne(Passkey, { credentialId: response.id });
  if (passkey === null) throw refuse("not_found", `no passkey with credential id ${response.id}`);
  const refuseAssertion = (reason: string) => refuse("permission_denied", `passkey assertion refused: ${reason}`);
  if (ceremony.svcUserId !== null && passkey.svcUserId !== ceremony.svcUserId)
    throw refuseAssertion("the passkey belongs to another human than the ceremony names");
  if (passkey.rpId !== null && passkey.rpId !== ceremony.rpId)
    throw refuseAssertion(`the passkey is registered for ${passkey.rpId}, not ${ceremony.rpId}`);
  const userHandle = response.response.userHandle;
  if (userHandle !== undefined && userHandle !== "" && userHandle !== userHandleOf(passkey.svcUserId))
    throw refuseAssertion("the user handle is not the passkey's human");

  const verified = await verifyAuthenticationResponse({
    response,
    expectedChallenge: ceremony.challenge,
    expectedOrigin: ceremony.origin,
    expectedRPID: ceremony.rpId,
    credential: {
      id: passkey.credentialId,
      publicKey: new Uint8Array(passkey.publicKey),
      counter: passkey.signCount,
      transports: passkey.transports,
    },
    requireUserVerification: input.acceptWithoutUserVerification !== true,
  }).catch((error: unknown) => {
    throw refuseAssertion((error as Error).message);
  });
  if (!verified.verified) throw refuseAssertion("the signature does not verify");

  // Compare-and-set: of two assertions that read the same counter, only one may move it.
  const updated = await ctx.em.execute<{ credential_id: string }[]>(
    `update passkey set sign_count = ?, last_used_at = ? where credential_id = ? and sign_count = ? returning credential_id`,
    [verified.authenticationInfo.newCounter, ctx.clock.now(), passkey.credentialId, passkey.signCount],
  );
  if (updated.length === 0)
    throw refuseAssertion("another assertion of this passkey was accepted at the same time (signature counter)");
  return {
    svcUserId: passkey.svcUserId,
    credentialId: passkey.credentialId,
    userVerified: verified.authenticationInfo.userVerified,
  };
}

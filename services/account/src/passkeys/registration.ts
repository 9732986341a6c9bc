import { type EntityManager, UniqueConstraintViolationException } from "@mikro-orm/postgresql";
import { generateRegistrationOptions, verifyRegistrationResponse } from "@simplewebauthn/server";
import { type Clock, uuid } from "@svc/platform";
import { insertHuman, requireHuman } from "../humans/humans.ts";
import { requireUuid } from "../input.ts";
import { refuse } from "../refusal.ts";
import { ceremonyLifetimeMs, consumeCeremony, startCeremony } from "./ceremonies.ts";
import { Passkey } from "./passkey.entity.ts";
import { relyingParty } from "./relying-party.ts";
import { registrationResponse } from "./webauthn-json.ts";
import { supportedAlgorithmIds, userHandleOf } from "./webauthn-policy.ts";

export interface PasskeyContext {
  em: EntityManager;
  clock: Clock;
}

export interface BegunCeremony {
  ceremonyId: string;
  optionsJson: string;
  expiresAt: Date;
}

/**
 * Starts a registration. Without svc_user_id (private mode) the human does not exist yet: its id is
 * chosen now (it is the WebAuthn user handle) and the human is created only when the registration
 * finishes, with nothing about the person but the passkey.
 */
export async function beginRegistration(
  ctx: PasskeyContext & { rpName: string },
  input: { svcUserId: string; rpId: string; origin: string },
): Promise<BegunCeremony> {
  const party = relyingParty(input.rpId, input.origin);
  const privateMode = input.svcUserId === "";
  const svcUserId = privateMode ? uuid() : (await requireHuman(ctx.em, input.svcUserId)).id;
  const existing = privateMode ? [] : await ctx.em.find(Passkey, { svcUserId, rpId: party.rpId });
  const options = await generateRegistrationOptions({
    rpName: ctx.rpName,
    rpID: party.rpId,
    userName: svcUserId,
    userID: Buffer.from(userHandleOf(svcUserId), "base64url"),
    userDisplayName: "",
    timeout: ceremonyLifetimeMs,
    attestationType: "none",
    excludeCredentials: existing.map((passkey) => ({ id: passkey.credentialId, transports: passkey.transports })),
    authenticatorSelection: { residentKey: "required", userVerification: "required" },
    supportedAlgorithmIDs: supportedAlgorithmIds,
  });
  const now = ctx.clock.now();
  const ceremony = {
    id: uuid(),
    kind: "registration" as const,
    challenge: options.challenge,
    svcUserId,
    createsHuman: privateMode,
    ...party,
    binding: null,
    createdAt: now,
    expiresAt: new Date(now.getTime() + ceremonyLifetimeMs),
  };
  await startCeremony(ctx.em, ceremony);
  return { ceremonyId: ceremony.id, optionsJson: JSON.stringify(options), expiresAt: ceremony.expiresAt };
}

export async function finishRegistration(
  ctx: PasskeyContext,
  input: { ceremonyId: string; responseJson: string },
): Promise<{ svcUserId: string; credentialId: string }> {
  const ceremonyId = requireUuid(input.ceremonyId, "ceremony_id");
  const response = registrationResponse(input.responseJson);
  const ceremony = await consumeCeremony(ctx.em, ctx.clock.now(), {
    id: ceremonyId,
    kind: "registration",
    binding: null,
  });
  const verified = await verifyRegistrationResponse({
    response,
    expectedChallenge: ceremony.challenge,
    expectedOrigin: ceremony.origin,
    expectedRPID: ceremony.rpId,
    requireUserPresence: true,
    requireUserVerification: true,
    supportedAlgorithmIDs: supportedAlgorithmIds,
  }).catch((error: unknown) => {
    throw refuse("permission_denied", `passkey registration refused: ${(error as Error).message}`);
  });
  if (!verified.verified)
    throw refuse("permission_denied", "passkey registration refused: the attestation does not verify");
  const { credential, credentialBackedUp } = verified.registrationInfo;
  if (credential.id !== response.id)
    throw refuse(
      "permission_denied",
      "passkey registration refused: the response's id is not the attested credential id",
    );

  const { svcUserId } = ceremony;
  if (svcUserId === null) throw new Error(`registration ceremony ${ceremony.id} names no human`);
  const now = ctx.clock.now();
  try {
    await ctx.em.transactional(async (tx) => {
      if (ceremony.createsHuman) await insertHuman(tx, { id: svcUserId, createdAt: now });
      tx.create(Passkey, {
        credentialId: credential.id,
        svcUserId,
        rpId: ceremony.rpId,
        publicKey: Buffer.from(credential.publicKey),
        signCount: credential.counter,
        transports: credential.transports ?? [],
        backedUp: credentialBackedUp,
        createdAt: now,
        lastUsedAt: null,
      });
    });
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException)
      throw refuse("already_exists", `a passkey with credential id ${credential.id} is already registered`);
    throw error;
  }
  return { svcUserId, credentialId: credential.id };
}

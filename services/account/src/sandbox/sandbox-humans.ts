import type { EntityManager } from "@mikro-orm/postgresql";
import type { PublicKeyCredentialRequestOptionsJSON } from "@simplewebauthn/server";
import { type Clock, type EnvironmentName, uuid } from "@svc/platform";
import { birthDateForAge } from "../age/age-evaluation.ts";
import { recordAgeEvidence } from "../age/age-evidence.ts";
import { addSandboxDevice } from "../devices/devices.ts";
import { insertHuman, requireHuman } from "../humans/humans.ts";
import { parseJsonObject, requireText } from "../input.ts";
import { userHandleOf } from "../passkeys/webauthn-policy.ts";
import { invalidArgument, refuse } from "../refusal.ts";
import { openPrivateKey, sealPrivateKey } from "./key-sealing.ts";
import { SandboxPasskey } from "./sandbox-passkey.entity.ts";
import { AuthenticatorRefusal, SoftwareAuthenticator } from "./software-authenticator.ts";

export type SandboxBehavior = "confirm" | "decline" | "silent";

export interface SandboxContext {
  em: EntityManager;
  clock: Clock;
  sandboxKey: Buffer;
  /** Issuer of sandbox sign-in identities: the development identity provider (deploy/dev-idp). */
  devIssuer: string;
}

export interface SandboxHuman {
  svcUserId: string;
  issuer: string;
  subject: string;
}

const maxAge = 150;

/**
 * A test human of the development environment: a software passkey whose private key is kept sealed
 * here (so SandboxAssert can sign with it), one virtual device, a behavior the gate follows, age
 * evidence when an age is given, and a sign-in identity the development identity provider can mint a
 * session for. The production environment has no sandbox humans.
 */
export async function createSandboxHuman(
  ctx: SandboxContext,
  input: { environment: EnvironmentName | undefined; behavior: SandboxBehavior | undefined; age: number | undefined },
): Promise<SandboxHuman> {
  if (input.environment === undefined)
    throw invalidArgument("environment is required (sandbox humans exist only in development)");
  if (input.environment !== "development")
    throw refuse(
      "failed_precondition",
      "sandbox humans exist only in the development environment; production never has them",
    );
  if (input.behavior === undefined) throw invalidArgument("behavior is required: confirm, decline or silent");
  if (input.age !== undefined && (!Number.isInteger(input.age) || input.age < 0 || input.age > maxAge)) {
    throw invalidArgument(`age must be a whole number of years from 0 to ${maxAge}: ${input.age}`);
  }
  const { age, behavior } = input;
  const svcUserId = uuid();
  const subject = uuid();
  const authenticator = SoftwareAuthenticator.create();
  const state = authenticator.export();
  await ctx.em.transactional(async (tx) => {
    const now = ctx.clock.now();
    await insertHuman(tx, {
      id: svcUserId,
      createdAt: now,
      sandboxBehavior: behavior,
      sandboxEnvironment: "development",
    });
    await tx.execute(`insert into sign_in_identity (issuer, subject, svc_user_id, created_at) values (?, ?, ?, ?)`, [
      ctx.devIssuer,
      subject,
      svcUserId,
      now,
    ]);
    await tx.execute(
      `insert into passkey (credential_id, svc_user_id, rp_id, public_key, sign_count, transports, backed_up, created_at) values (?, ?, null, ?, 0, '{internal}', false, ?)`,
      [authenticator.credentialId, svcUserId, authenticator.publicKeyCose(), now],
    );
    tx.create(SandboxPasskey, {
      credentialId: authenticator.credentialId,
      sealedPrivateKey: sealPrivateKey(ctx.sandboxKey, authenticator.credentialId, state.privateKey),
      signCount: 0,
    });
    addSandboxDevice(tx, svcUserId, now);
    if (age !== undefined)
      await recordAgeEvidence(tx, {
        svcUserId,
        birthDate: birthDateForAge(age, now),
        source: "sandbox",
        recordedAt: now,
      });
  });
  state.privateKey.fill(0);
  return { svcUserId, issuer: ctx.devIssuer, subject };
}

/**
 * The sandbox human's software passkey answers assertion options (from BeginPasskeyAssertion), so a
 * sandbox confirmation is then finished and verified exactly like a real one. Whether the human
 * confirms at all (its behavior) is the gate's to decide; this only signs.
 */
export async function sandboxAssert(
  ctx: SandboxContext,
  input: { svcUserId: string; optionsJson: string; origin: string },
): Promise<string> {
  const origin = requireText(input.origin, "origin");
  const options = requestOptions(input.optionsJson);
  const human = await requireHuman(ctx.em, input.svcUserId);
  if (human.sandboxEnvironment !== "development")
    throw refuse("permission_denied", `human ${human.id} is not a sandbox human: only a real person signs for it`);
  // The authenticator's own counter moves in the same statement that reads the key, so concurrent
  // assertions never sign with the same count.
  const [passkey] = await ctx.em.execute<{ credential_id: string; sealed_private_key: Buffer; sign_count: string }[]>(
    `update sandbox_passkey s set sign_count = s.sign_count + 1
     from passkey p where p.credential_id = s.credential_id and p.svc_user_id = ?
     returning s.credential_id, s.sealed_private_key, s.sign_count`,
    [human.id],
  );
  if (passkey === undefined) throw new Error(`sandbox human ${human.id} has no sandbox passkey`);
  const privateKey = openPrivateKey(ctx.sandboxKey, passkey.credential_id, passkey.sealed_private_key);
  const authenticator = SoftwareAuthenticator.restore({
    credentialId: passkey.credential_id,
    privateKey,
    signCount: Number(passkey.sign_count) - 1,
    userHandle: userHandleOf(human.id),
  });
  privateKey.fill(0);
  try {
    return JSON.stringify(authenticator.assert(options, origin));
  } catch (error) {
    if (error instanceof AuthenticatorRefusal)
      throw refuse("failed_precondition", `the sandbox passkey cannot answer these options: ${error.message}`);
    throw error;
  }
}

function requestOptions(text: string): PublicKeyCredentialRequestOptionsJSON {
  if (text === "") throw invalidArgument("options_json is required");
  const options = parseJsonObject(text, "options_json");
  if (typeof options.challenge !== "string" || options.challenge === "")
    throw invalidArgument("options_json has no challenge");
  if (options.allowCredentials !== undefined && !Array.isArray(options.allowCredentials))
    throw invalidArgument("options_json.allowCredentials must be a list");
  return options as unknown as PublicKeyCredentialRequestOptionsJSON;
}

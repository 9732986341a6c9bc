import { createPublicKey, randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import { type AttestationVerification, checkAttestation } from "@svc/contracts/attestation";
import { type Clock, createInternalClient, type ManualClock } from "@svc/platform";
import { SigningService, TokenCheckSchema } from "@svc/proto/signing/v1/signing_pb.js";
import { type RunningSigning, startSigning } from "../src/server.ts";
import { memoryLogger } from "./support.ts";

export const testKek = (): string => randomBytes(32).toString("base64");

/** The service in-process on a free port, on the given database, with a clock the test moves. */
export async function startTestSigning(
  databaseUrl: string,
  options: { clock: ManualClock; env?: NodeJS.ProcessEnv; logger?: ReturnType<typeof memoryLogger> },
) {
  const logger = options.logger ?? memoryLogger();
  const service: RunningSigning = await startSigning({
    // Tests run the maintenance themselves (RotateKeys, the prune): a timed run joined mid-way would have read the
    // clock before the test moved it. Five minutes is the longest the publish lead allows.
    env: { SVC_DATABASE_URL: databaseUrl, SIGNING_PORT: "0", SIGNING_REFRESH_EVERY: "5m", ...options.env },
    clock: options.clock,
    logger,
  });
  return { service, logger, client: createInternalClient(SigningService, service.url) };
}

/**
 * A token checked as the gateway checks one: the attestation contract's rules against the key set this
 * service publishes (GetKeySet, read anew for each check), then its ledger through RecordTokenChecks. The
 * keys are tested this way, not through the deprecated VerifyToken.
 */
export function checkToken(
  client: Client<typeof SigningService>,
  token: string,
  clock: Clock,
  audience?: string,
): Promise<AttestationVerification> {
  return checkAttestation(token, audience, {
    keys: {
      lookup: async (kid) => {
        const { keys, issuer } = await client.getKeySet({});
        const jwk = keys.find((key) => key.kid === kid);
        const key = jwk && createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y }, format: "jwk" });
        return { issuer, key };
      },
    },
    record: async (check) => {
      const { first } = await client.recordTokenChecks({
        checks: [
          create(TokenCheckSchema, { payloadHash: check.payloadHash, expiresAt: timestampFromDate(check.expiresAt) }),
        ],
      });
      return first[0] === true;
    },
    clock,
  });
}

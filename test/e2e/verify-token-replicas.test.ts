import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createInternalClient, fileClock } from "@svc/platform";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { startSigning } from "@svc/signing";
import { decodeProtectedHeader } from "jose";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { writeClockFile } from "../harness/clock-file.ts";
import { type GatewayReplica, startGatewayReplica } from "../harness/gateway-replica.ts";
import { createTestDatabase, type TestDatabase } from "../harness/index.ts";

/**
 * verify-token checks signatures in the gateway against the key set it keeps, and the gateway's ledger
 * of first checks (in its schema, shared by every replica) says whether a check is the first. Two
 * gateway processes on one database and one signing: the ledger, not a replica's memory, decides
 * replays across both; a key added in signing is found by both; a key that
 * is no longer published stops verifying; tampering is caught. Time moves by the shared clock file.
 */
const issuer = "http://127.0.0.1:8080";

let database: TestDatabase;
let signingService: Awaited<ReturnType<typeof startSigning>>;
let signing: ReturnType<typeof createInternalClient<typeof SigningService>>;
let dir: string;
let clockFile: string;
const replicas: GatewayReplica[] = [];
/** The shared clock: after the replay cutoff, so a second check is invalid. Only moved forward. */
let now = new Date("2026-12-01T10:00:00Z");
const moveClock = (to: Date) => {
  now = to;
  writeClockFile(clockFile, to);
};

beforeAll(async () => {
  database = await createTestDatabase("verify_replicas");
  dir = mkdtempSync(join(tmpdir(), "verify-replicas-"));
  clockFile = join(dir, "clock");
  moveClock(now);
  signingService = await startSigning({
    env: {
      SVC_DATABASE_URL: database.url,
      SIGNING_PORT: "0",
      SIGNING_KEK: randomBytes(32).toString("base64"),
      SIGNING_ISSUER: issuer,
      // Short, so that the test can move past a retired key's unpublishing.
      SIGNING_PROOF_RETENTION: "1h",
      SVC_LOG_LEVEL: "warn",
    },
    clock: fileClock(clockFile),
  });
  signing = createInternalClient(SigningService, signingService.url);
  const env = {
    SVC_DATABASE_URL: database.url,
    SVC_CLOCK_FILE: clockFile,
    SVC_LOG_LEVEL: "warn",
    GATEWAY_SIGNING_URL: signingService.url,
    GATEWAY_KEY_PEPPER: randomBytes(32).toString("base64"),
  };
  replicas.push(...(await Promise.all([startGatewayReplica(env), startGatewayReplica(env)])));
});

afterAll(async () => {
  await Promise.all(replicas.map((replica) => replica.stop()));
  await signingService?.stop();
  await database?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

let sequence = 0;
const mint = async () =>
  (
    await signing.signAttestation({
      requestId: `req_${(++sequence).toString(16).padStart(32, "0")}`,
      verified: true,
      organizationId: "org_replicas",
      verifiedAt: timestampFromDate(now),
    })
  ).token;

async function verify(replica: GatewayReplica, token: string) {
  const response = await replica.fetch(`${replica.url}/v1/sdk/verify-token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token }),
  });
  expect(response.status).toBe(200);
  return (await response.json()).data.data;
}

describe("verify-token on two gateway replicas", () => {
  test("copies of one token checked at once through both: exactly one is first, every other is a replay", async () => {
    for (let round = 0; round < 3; round++) {
      const token = await mint();
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) => verify(replicas[i % replicas.length]!, token)),
      );
      expect(answers.filter((answer) => answer.valid && !answer.replayed)).toHaveLength(1);
      const replays = answers.filter((answer) => !answer.valid);
      expect(replays).toHaveLength(11);
      for (const replay of replays) {
        expect(replay).toMatchObject({ reason: "replayed", replayed: true });
        expect(replay.claims.organization_id).toBe("org_replicas");
        expect(replay.verdict).toBeUndefined();
      }
    }
  });

  test("a tampered payload is bad_signature on both, without claims, and does not use the token up", async () => {
    const token = await mint();
    const [header, payload, signature] = token.split(".") as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString());
    const forged = Buffer.from(JSON.stringify({ ...claims, organization_id: "someone-else" })).toString("base64url");
    for (const replica of replicas) {
      const answer = await verify(replica, `${header}.${forged}.${signature}`);
      expect(answer).toEqual({ valid: false, reason: "bad_signature", replayed: false });
    }
    const unknown = Buffer.from(JSON.stringify({ alg: "ES256", kid: "no-such-key", typ: "JWT" })).toString("base64url");
    expect(await verify(replicas[0]!, `${unknown}.${payload}.${signature}`)).toEqual({
      valid: false,
      reason: "unknown_key",
      replayed: false,
    });
    expect(await verify(replicas[1]!, token)).toMatchObject({ valid: true, verdict: "pass", replayed: false });
  });

  test("a key rotated in signing is found by both replicas; the key it replaced stops verifying once unpublished", async () => {
    const old = await mint();
    const oldKid = decodeProtectedHeader(old).kid;
    // Both replicas hold the current key set before the rotation.
    for (const replica of replicas) expect(await verify(replica, await mint())).toMatchObject({ valid: true });

    const rotation = await signing.rotateKeys({});
    moveClock(new Date(timestampDate(rotation.signsFrom!).getTime() + 1000));
    const fresh = await mint();
    expect(decodeProtectedHeader(fresh).kid).toBe(rotation.kid);
    expect(await verify(replicas[0]!, fresh)).toMatchObject({ valid: true, replayed: false });
    expect(await verify(replicas[1]!, fresh)).toMatchObject({ valid: false, reason: "replayed", replayed: true });
    expect(await verify(replicas[1]!, await mint())).toMatchObject({ valid: true, replayed: false });

    // The old key's token expired long ago; once its key is unpublished it is an unknown key, as in signing.
    expect(await verify(replicas[0]!, old)).toMatchObject({ valid: false, reason: "expired" });
    const unpublishAt = rotation.keys.find((key) => key.kid === oldKid)!.unpublishAt!;
    moveClock(new Date(timestampDate(unpublishAt).getTime() + 1000));
    for (const replica of replicas)
      expect(await verify(replica, old)).toEqual({ valid: false, reason: "unknown_key", replayed: false });
    expect(await verify(replicas[0]!, await mint())).toMatchObject({ valid: true });
  });
});

import { createHash } from "node:crypto";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createInternalClient } from "@svc/platform";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectDocumented } from "../harness/documented-answer.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";

/**
 * The ledger of first token checks in the gateway's schema, through the gateway: a verify-token the
 * rate limiter refuses records nothing; and the handover from signing's ledger (GATEWAY_LEDGER_HANDOVER_UNTIL):
 * until then a token a gateway of the previous release checked (recorded in signing's ledger with
 * RecordTokenChecks, as that release did) still reads as replayed, and a first check here is recorded
 * there too, so such a gateway would read it as replayed; after it signing is no longer asked.
 */
const start = new Date("2026-12-01T10:00:03Z");
const handoverUntil = new Date("2026-12-01T11:00:00Z");
const anonymousPerMinute = 3;

describe("verify-token's ledger of first checks", () => {
  let mesh: TestMesh;
  let signing: ReturnType<typeof createInternalClient<typeof SigningService>>;
  let document: Record<string, unknown>;
  let now = start;
  const moveClock = (to: Date) => {
    now = to;
    mesh.setClock(to);
  };

  beforeAll(async () => {
    mesh = await startTestMesh("verify_ledger", {
      only: ["signing"],
      clockAt: start,
      env: {
        GATEWAY_RATE_LIMIT_ANONYMOUS_PER_MINUTE: String(anonymousPerMinute),
        GATEWAY_LEDGER_HANDOVER_UNTIL: handoverUntil.toISOString(),
      },
    });
    signing = createInternalClient(SigningService, mesh.urls.signing!);
    document = await (await fetch(`${mesh.gatewayUrl}/v1/openapi.json`)).json();
  });
  afterAll(() => mesh?.stop());

  let sequence = 0;
  const mint = async () =>
    (
      await signing.signAttestation({
        requestId: `req_${(++sequence).toString(16).padStart(32, "0")}`,
        verified: true,
        organizationId: "org_ledger",
        verifiedAt: timestampFromDate(now),
      })
    ).token;
  const verify = async (token: string) => {
    const response = await fetch(`${mesh.gatewayUrl}/v1/sdk/verify-token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token }),
    });
    const answer = { status: response.status, body: await response.json(), headers: response.headers };
    expectDocumented(document, "POST", "/v1/sdk/verify-token", answer);
    return answer;
  };
  const checked = async (token: string) => {
    const answer = await verify(token);
    expect(answer.status).toBe(200);
    return answer.body.data.data;
  };
  /** What a gateway of the previous release sent signing for a check: the payload's SHA-256 and the expiry. */
  const recordInSigning = async (token: string) => {
    const payload = token.split(".")[1]!;
    const { exp } = JSON.parse(Buffer.from(payload, "base64url").toString());
    const { first } = await signing.recordTokenChecks({
      checks: [
        {
          payloadHash: createHash("sha256").update(payload).digest(),
          expiresAt: timestampFromDate(new Date(exp * 1000)),
        },
      ],
    });
    return first[0];
  };

  it("a check the rate limiter refuses is not recorded: the token's next allowed check is its first", async () => {
    for (let i = 0; i < anonymousPerMinute; i++) expect(await checked(await mint())).toMatchObject({ valid: true });
    const token = await mint();
    const refused = await verify(token);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({
      errors: [{ code: "RATE_LIMITED" }],
      _rateLimit: { scope: "ip", buckets: { per_minute: { limit: anonymousPerMinute, remaining: 0 } } },
    });
    // A token refused before the ledger is refused by the limiter all the same.
    expect((await verify("not-a-token")).status).toBe(403);

    moveClock(new Date(start.getTime() + 60_000));
    expect(await checked(token)).toMatchObject({ valid: true, verdict: "pass", replayed: false });
    expect(await checked(token)).toMatchObject({ valid: false, reason: "replayed", replayed: true });
  });

  it("during the handover, a token the previous release checked reads as replayed, and a first check here is recorded in signing too", async () => {
    moveClock(new Date(start.getTime() + 120_000));
    const before = await mint();
    expect(await recordInSigning(before)).toBe(true);
    expect(await checked(before)).toMatchObject({ valid: false, reason: "replayed", replayed: true });
    expect(await checked(before)).toMatchObject({ valid: false, reason: "replayed", replayed: true });

    const fresh = await mint();
    expect(await checked(fresh)).toMatchObject({ valid: true, replayed: false });
    // A gateway of the previous release, still running during the rollout, would read it as a replay.
    expect(await recordInSigning(fresh)).toBe(false);
  });

  it("from the handover's end signing's ledger is neither asked nor written", async () => {
    moveClock(handoverUntil);
    const onlyInSigning = await mint();
    expect(await recordInSigning(onlyInSigning)).toBe(true);
    expect(await checked(onlyInSigning)).toMatchObject({ valid: true, replayed: false });

    const fresh = await mint();
    expect(await checked(fresh)).toMatchObject({ valid: true, replayed: false });
    expect(await recordInSigning(fresh)).toBe(true);
    expect(await checked(fresh)).toMatchObject({ valid: false, reason: "replayed" });
  });
});

import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ManualClock } from "@svc/platform";
import { KeyState, SignAttestationRequestSchema } from "@svc/proto/signing/v1/signing_pb.js";
import { createLocalJWKSet, jwtVerify } from "jose";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/harness/index.ts";
import { checkToken, startTestSigning, testKek } from "./service-support.ts";

const issuer = "http://127.0.0.1:8080";
const day = 86_400_000;

describe("key rotation", () => {
  let db: TestDatabase;
  let running: Awaited<ReturnType<typeof startTestSigning>>;
  const clock = new ManualClock("2026-12-01T00:00:00Z");
  const start = clock.now().getTime();

  beforeAll(async () => {
    db = await createTestDatabase("signing_rotation");
    running = await startTestSigning(db.url, { clock, env: { SIGNING_KEK: testKek(), SIGNING_ROTATE_EVERY: "0" } });
  });
  afterAll(async () => {
    await running?.service.stop();
    await db?.drop();
  });

  const sign = () =>
    running.client.signAttestation(
      create(SignAttestationRequestSchema, {
        requestId: "req_rot",
        verified: true,
        organizationId: "org_r",
        verifiedAt: timestampFromDate(clock.now()),
      }),
    );
  const kids = async () => (await running.client.getKeySet({})).keys.map((key) => key.kid);

  it("publishes the new key at once, signs with it one publish lead later, and keeps the old key's tokens verifiable", async () => {
    const { client } = running;
    const oldKid = (await sign()).kid;
    expect(await kids()).toEqual([oldKid]);

    const rotated = await client.rotateKeys({});
    expect(rotated.kid).not.toBe(oldKid);
    expect(timestampDate(rotated.signsFrom!).getTime()).toBe(start + 300_000);
    expect(await kids()).toEqual([oldKid, rotated.kid]);
    const states = Object.fromEntries(rotated.keys.map((key) => [key.kid, key]));
    expect(states[oldKid]).toMatchObject({ state: KeyState.ACTIVE });
    expect(timestampDate(states[oldKid]!.retiredAt!).getTime()).toBe(start + 300_000);
    expect(timestampDate(states[oldKid]!.unpublishAt!).getTime()).toBe(start + 300_000 + 400 * day);
    expect(states[rotated.kid]).toMatchObject({ state: KeyState.PENDING });
    expect(states[rotated.kid]!.retiredAt).toBeUndefined();

    expect((await sign()).kid).toBe(oldKid);
    clock.advance(250_000);
    const lastOfOld = await sign();
    expect(lastOfOld.kid).toBe(oldKid);
    clock.advance(49_999);
    expect((await sign()).kid).toBe(oldKid);
    clock.advance(1);
    expect((await sign()).kid).toBe(rotated.kid);

    clock.advance(10_000);
    const jwks = createLocalJWKSet({
      keys: (await client.getKeySet({})).keys.map(({ kid, kty, crv, x, y, alg, use }) => ({
        kid,
        kty,
        crv,
        x,
        y,
        alg,
        use,
      })),
    });
    await expect(jwtVerify(lastOfOld.token, jwks, { issuer, currentDate: clock.now() })).resolves.toMatchObject({
      protectedHeader: { kid: oldKid },
    });
    expect(await checkToken(client, lastOfOld.token, clock)).toMatchObject({ kind: "valid", replayed: false });
  });

  it("keeps the retired key published through the proof retention, then drops it", async () => {
    const [oldKid, newKid] = await kids();
    clock.set(new Date(start + 300_000 + 400 * day - 1));
    expect(await kids()).toEqual([oldKid, newKid]);
    clock.advance(1);
    expect(await kids()).toEqual([newKid]);

    // Its row, sealed private half included, goes at the next upkeep.
    await running.service.maintain();
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const { rows } = await client.query(`select kid from signing.signing_key`);
    await client.end();
    expect(rows).toEqual([{ kid: newKid }]);
  });

  it("adds a key on the schedule when the newest key reaches its age, serialized across replicas", async () => {
    const kek = testKek();
    const scheduleDb = await createTestDatabase("signing_schedule");
    const scheduleClock = new ManualClock("2026-12-01T00:00:00Z");
    const env = { SIGNING_KEK: kek, SIGNING_ROTATE_EVERY: "30d" };
    const a = await startTestSigning(scheduleDb.url, { clock: scheduleClock, env });
    const b = await startTestSigning(scheduleDb.url, { clock: scheduleClock, env });
    try {
      scheduleClock.advance(30 * day - 1);
      await Promise.all([a.service.maintain(), b.service.maintain()]);
      expect((await a.client.getKeySet({})).keys).toHaveLength(1);
      scheduleClock.advance(1);
      await Promise.all([a.service.maintain(), b.service.maintain(), a.service.maintain()]);
      const keys = (await b.client.getKeySet({})).keys;
      expect(keys).toHaveLength(2);
      // Replica b learned of the key a may have added through its reload, and switches with a.
      scheduleClock.advance(300_000);
      expect(
        (
          await a.client.signAttestation(
            create(SignAttestationRequestSchema, {
              requestId: "r",
              verified: true,
              organizationId: "o",
              verifiedAt: timestampFromDate(scheduleClock.now()),
            }),
          )
        ).kid,
      ).toBe(keys[1]!.kid);
      expect(
        (
          await b.client.signAttestation(
            create(SignAttestationRequestSchema, {
              requestId: "r",
              verified: true,
              organizationId: "o",
              verifiedAt: timestampFromDate(scheduleClock.now()),
            }),
          )
        ).kid,
      ).toBe(keys[1]!.kid);

      // A key added on one replica is in the other's key set at once, without waiting for its reload.
      const rotated = await a.client.rotateKeys({});
      expect((await b.client.getKeySet({})).keys.map((key) => key.kid)).toContain(rotated.kid);
    } finally {
      await a.service.stop();
      await b.service.stop();
      await scheduleDb.drop();
    }
  });
});

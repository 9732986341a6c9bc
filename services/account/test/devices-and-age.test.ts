import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import { createLogger, ManualClock, openDatabase, uuid } from "@svc/platform";
import { AgeVerdict } from "@svc/proto/account/v1/account_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgeEvidence } from "../src/age/age-evidence.entity.ts";
import { recordAgeEvidence } from "../src/age/age-evidence.ts";
import { migrations } from "../src/migrations/index.ts";
import { refusal, startTestAccount, type TestAccount } from "./support/account.ts";

const clock = new ManualClock("2026-11-22T10:00:00Z");
let account: TestAccount;
let orm: MikroORM;

beforeAll(async () => {
  account = await startTestAccount("account_devices_age", { clock });
  // Evidence for real humans has no RPC yet: the test records it with the internal rule.
  orm = await openDatabase({
    url: account.database.url,
    schema: "account",
    entities: [AgeEvidence],
    migrations,
    logger: createLogger("age-test", {}, "error"),
  });
});
afterAll(async () => {
  await orm?.close();
  await account?.stop();
});

const newHuman = async () =>
  (await account.client.resolveSignedInHuman({ issuer: "https://id.example", subject: uuid() })).svcUserId;

describe("devices", () => {
  it("are registered, listed and counted; the same push token stays one device", async () => {
    const svcUserId = await newHuman();
    const phone = await account.client.registerDevice({ svcUserId, pushToken: `apns-${uuid()}`, platform: "ios" });
    clock.advance(1000);
    const browserToken = `webpush-${uuid()}`;
    const browser = await account.client.registerDevice({ svcUserId, pushToken: browserToken, platform: "web" });
    expect(phone.deviceId).toMatch(/^[0-9a-f-]{36}$/);
    clock.advance(1000);
    expect(
      (await account.client.registerDevice({ svcUserId, pushToken: browserToken, platform: "web" })).deviceId,
    ).toBe(browser.deviceId);

    const { devices } = await account.client.listDevices({ svcUserId });
    expect(devices.map((d) => [d.deviceId, d.platform, timestampDate(d.registeredAt!).toISOString()])).toEqual([
      [phone.deviceId, "ios", "2026-11-22T10:00:00.000Z"],
      [browser.deviceId, "web", "2026-11-22T10:00:02.000Z"],
    ]);
    expect((await account.client.getHuman({ svcUserId })).deviceCount).toBe(2);
  });

  it("a push token registered by another human moves to that human", async () => {
    const first = await newHuman();
    const second = await newHuman();
    const pushToken = `fcm-${uuid()}`;
    const device = await account.client.registerDevice({ svcUserId: first, pushToken, platform: "android" });
    expect((await account.client.registerDevice({ svcUserId: second, pushToken, platform: "android" })).deviceId).toBe(
      device.deviceId,
    );
    expect((await account.client.listDevices({ svcUserId: first })).devices).toEqual([]);
    expect((await account.client.listDevices({ svcUserId: second })).devices.map((d) => d.deviceId)).toEqual([
      device.deviceId,
    ]);
  });

  it("refuses unknown platforms, empty tokens and unknown humans", async () => {
    const svcUserId = await newHuman();
    const platform = await refusal(account.client.registerDevice({ svcUserId, pushToken: "t", platform: "sandbox" }));
    expect([platform.code, platform.rawMessage]).toEqual([
      Code.InvalidArgument,
      'platform must be one of ios, android, web: "sandbox"',
    ]);
    expect((await refusal(account.client.registerDevice({ svcUserId, pushToken: "", platform: "ios" }))).code).toBe(
      Code.InvalidArgument,
    );
    expect(
      (await refusal(account.client.registerDevice({ svcUserId: uuid(), pushToken: "t", platform: "ios" }))).code,
    ).toBe(Code.NotFound);
    expect((await refusal(account.client.listDevices({ svcUserId: uuid() }))).code).toBe(Code.NotFound);
  });
});

describe("EvaluateAge", () => {
  /** `null` leaves the instant out. */
  const evaluate = (svcUserId: string, threshold: number, at: Date | null = clock.now()) =>
    account.client.evaluateAge({ svcUserId, threshold, ...(at !== null && { at: timestampFromDate(at) }) });

  it("is unavailable without evidence", async () => {
    expect(await evaluate(await newHuman(), 18)).toMatchObject({ verdict: AgeVerdict.UNAVAILABLE, source: "" });
  });

  it("reads the newest evidence, at the instant asked, with its source", async () => {
    const svcUserId = await newHuman();
    await recordAgeEvidence(orm.em.fork(), {
      svcUserId,
      birthDate: "2016-01-01",
      source: "sandbox",
      recordedAt: new Date("2026-01-01T00:00:00Z"),
    });
    expect(await evaluate(svcUserId, 18)).toMatchObject({ verdict: AgeVerdict.UNDER, source: "sandbox" });
    await recordAgeEvidence(orm.em.fork(), {
      svcUserId,
      birthDate: "2008-11-23",
      source: "document",
      recordedAt: new Date("2026-06-01T00:00:00Z"),
    });
    expect(await evaluate(svcUserId, 18)).toMatchObject({ verdict: AgeVerdict.UNDER, source: "document" });
    expect(await evaluate(svcUserId, 18, new Date("2026-11-23T00:00:00Z"))).toMatchObject({
      verdict: AgeVerdict.OVER,
      source: "document",
    });
  });

  it("refuses a missing instant, a threshold out of range and unknown humans", async () => {
    const svcUserId = await newHuman();
    expect((await refusal(evaluate(svcUserId, 18, null))).rawMessage).toBe("at is required");
    const zero = await refusal(evaluate(svcUserId, 0));
    expect([zero.code, zero.rawMessage]).toEqual([
      Code.InvalidArgument,
      "threshold must be a whole number of years from 1 to 150: 0",
    ]);
    expect((await refusal(evaluate(uuid(), 18))).code).toBe(Code.NotFound);
  });
});

import { createECDH } from "node:crypto";
import { getCACertificates, setDefaultCACertificates } from "node:tls";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { createInternalClient, createLogger, ManualClock, openDatabase, uuid } from "@svc/platform";
import { AccountService, NoticeKind, PushKind } from "@svc/proto/account/v1/account_pb.js";
import { CallerSchema, CredentialKind, Environment } from "@svc/proto/common/v1/caller_pb.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  type BrowserSubscription,
  startPushService,
  type TestPushService,
} from "../../../test/harness/push-service.ts";
import { selfSignedCertificate } from "../../../test/harness/tls-certificate.ts";
import { Human } from "../src/humans/human.entity.ts";
import { migrations } from "../src/migrations/index.ts";
import { checkPushEndpoint } from "../src/push/push-endpoint-policy.ts";
import { pushSealing } from "../src/push/subscription-sealing.ts";
import { loadVapidKeys } from "../src/push/vapid-keys.ts";
import { startAccount } from "../src/server.ts";
import { refusal, startTestAccount, type TestAccount } from "./support/account.ts";

const clock = new ManualClock("2026-11-22T10:00:00Z");
let account: TestAccount;
let pushService: TestPushService;

beforeAll(async () => {
  pushService = await startPushService({
    vapidPublicKey: async () => (await account.client.getPushKey({})).publicKey,
    now: () => clock.now(),
  });
  account = await startTestAccount("account_web_push", {
    clock,
    // https on 127.0.0.1 for the push services below that speak TLS, as the public ones do.
    env: { ACCOUNT_PUSH_POLL_EVERY: "20ms", ACCOUNT_PUSH_SERVICE_HOSTS: "127.0.0.1" },
  });
});
afterAll(async () => {
  await account?.stop();
  await pushService?.stop();
});

const newHuman = async () =>
  (await account.client.resolveSignedInHuman({ issuer: "https://id.example", subject: uuid() })).svcUserId;

async function subscribed(
  svcUserId: string,
  at: TestPushService = pushService,
): Promise<BrowserSubscription & { id: string }> {
  const subscription = at.subscribe();
  const { subscriptionId } = await account.client.addPushSubscription({
    svcUserId,
    endpoint: subscription.endpoint,
    ...subscription.keys,
  });
  return { ...subscription, id: subscriptionId };
}

const card = (svcUserId: string, lifeSeconds = 300) => ({
  svcUserId,
  kind: PushKind.AGENT_CARD,
  title: "An agent asks for your approval",
  itemId: `card_${uuid()}`,
  expiresAt: timestampFromDate(new Date(clock.now().getTime() + lifeSeconds * 1000)),
});

describe("the VAPID key", () => {
  it("is an uncompressed P-256 point, made once and kept sealed: a second start on the database serves the same", async () => {
    const { publicKey } = await account.client.getPushKey({});
    const point = Buffer.from(publicKey, "base64url");
    expect(point).toHaveLength(65);
    expect(point[0]).toBe(4);
    const [row] = await account.sql<{ sealed_private_key: Buffer }>(`select sealed_private_key from vapid_key`);
    expect(row?.sealed_private_key.length).toBe(12 + 32 + 16);
    const second = await startAccount({ env: account.env, clock, logger: createLogger("account", {}, "error") });
    try {
      expect((await createInternalClient(AccountService, second.url).getPushKey({})).publicKey).toBe(publicKey);
    } finally {
      await second.stop();
    }
  });

  it("production refuses to start without its own, and refuses the pair this database made for development", async () => {
    await expect(
      startAccount({
        env: { SVC_DEPLOYMENT: "production", SVC_DATABASE_URL: "postgres://nowhere.invalid/x" },
        logger: createLogger("account", {}, "error"),
      }),
    ).rejects.toThrow(/ACCOUNT_VAPID_PRIVATE_KEY is required in production/);
    const orm = await openDatabase({
      url: account.env.SVC_DATABASE_URL as string,
      schema: "account",
      entities: [Human],
      migrations,
      logger: createLogger("account", {}, "error"),
    });
    try {
      const [row] = await account.sql<{ sealed_private_key: Buffer }>(`select sealed_private_key from vapid_key`);
      const sealing = pushSealing(Buffer.from("account development web push key", "utf8"));
      const developmentPair = sealing.open("vapid", row?.sealed_private_key as Buffer);
      const production = { deployment: "production" as const, vapidSubject: "mailto:ops@example.com" };
      await expect(
        loadVapidKeys(orm, sealing, clock, { ...production, vapidPrivateKey: developmentPair }),
      ).rejects.toThrow("ACCOUNT_VAPID_PRIVATE_KEY is the development pair, which production refuses");
      const own = createECDH("prime256v1");
      own.generateKeys();
      const keys = await loadVapidKeys(orm, sealing, clock, { ...production, vapidPrivateKey: own.getPrivateKey() });
      expect(keys.publicKey).toBe(own.getPublicKey().toString("base64url"));
    } finally {
      await orm.close();
    }
  });
});

describe("subscriptions", () => {
  it("registers a loopback endpoint in development, lists it by host, and keeps the endpoint and keys only sealed", async () => {
    const svcUserId = await newHuman();
    const subscription = await subscribed(svcUserId);
    const again = await account.client.addPushSubscription({
      svcUserId,
      endpoint: subscription.endpoint,
      ...subscription.keys,
    });
    expect(again.subscriptionId).toBe(subscription.id);
    const { subscriptions } = await account.client.listPushSubscriptions({ svcUserId });
    expect(subscriptions.map((s) => [s.subscriptionId, s.pushHost])).toEqual([
      [subscription.id, new URL(pushService.origin).host],
    ]);
    const dump = JSON.stringify(await account.sql(`select encode(sealed, 'escape') as s, * from push_subscription`));
    expect(dump).not.toContain(subscription.endpoint.split("/push/")[1]);
    expect(dump).not.toContain(subscription.keys.p256dh);
    expect(dump).not.toContain(subscription.keys.auth);
    expect((await account.client.listDevices({ svcUserId })).webPushSubscriptions).toBe(1);
  });

  it("refuses endpoints off the push-service policy and malformed keys, creating nothing", async () => {
    const svcUserId = await newHuman();
    const { keys } = pushService.subscribe();
    const cases: [string, Partial<typeof keys>, RegExp][] = [
      ["https://evil.example/push/1", {}, /endpoint must be https on a known push service/],
      ["http://10.0.0.1/push/1", {}, /endpoint must be https/],
      ["http://fcm.googleapis.com/fcm/send/1", {}, /endpoint must be https/],
      ["not a url", {}, /endpoint is not a URL/],
      [`${pushService.origin}/push/x`, { p256dh: "AAAA" }, /keys.p256dh must be base64url of 65 bytes/],
      [`${pushService.origin}/push/x`, { auth: Buffer.alloc(15).toString("base64url") }, /keys.auth must be/],
      // The right length and prefix, but (1, 1) is not on P-256: no push could ever be encrypted to it.
      [
        `${pushService.origin}/push/x`,
        {
          p256dh: Buffer.concat([
            Buffer.of(4),
            Buffer.alloc(31),
            Buffer.of(1),
            Buffer.alloc(31),
            Buffer.of(1),
          ]).toString("base64url"),
        },
        /keys.p256dh must be a point on P-256/,
      ],
    ];
    for (const [endpoint, override, message] of cases) {
      const error = await refusal(account.client.addPushSubscription({ svcUserId, endpoint, ...keys, ...override }));
      expect(error.code).toBe(Code.InvalidArgument);
      expect(error.rawMessage).toMatch(message);
    }
    expect((await account.client.listPushSubscriptions({ svcUserId })).subscriptions).toEqual([]);
    const unknown = await refusal(
      account.client.addPushSubscription({ svcUserId: uuid(), endpoint: `${pushService.origin}/push/y`, ...keys }),
    );
    expect(unknown.code).toBe(Code.NotFound);
  });

  it("production takes https on the configured push services only", () => {
    const production = { deployment: "production" as const, hosts: ["fcm.googleapis.com", "*.notify.windows.com"] };
    expect(checkPushEndpoint("https://fcm.googleapis.com/fcm/send/abc", production).host).toBe("fcm.googleapis.com");
    expect(checkPushEndpoint("https://wns2-par02p.notify.windows.com/w/?token=1", production)).toBeInstanceOf(URL);
    for (const endpoint of [
      "http://127.0.0.1:9999/push",
      "https://notify.windows.com.evil.example/w",
      "https://user:pw@fcm.googleapis.com/fcm/send/abc",
    ])
      expect(() => checkPushEndpoint(endpoint, production)).toThrow(/endpoint/);
  });

  it("removes only the person's own subscription", async () => {
    const svcUserId = await newHuman();
    const subscription = await subscribed(svcUserId);
    const other = await refusal(
      account.client.removePushSubscription({ svcUserId: await newHuman(), subscriptionId: subscription.id }),
    );
    expect(other.code).toBe(Code.NotFound);
    await account.client.removePushSubscription({ svcUserId, subscriptionId: subscription.id });
    expect((await account.client.listPushSubscriptions({ svcUserId })).subscriptions).toEqual([]);
  });

  it("keeps a person's ten newest subscriptions: the eleventh drops the oldest", async () => {
    const svcUserId = await newHuman();
    const ids: string[] = [];
    for (let i = 0; i < 11; i++) {
      ids.push((await subscribed(svcUserId)).id);
      clock.advance(1000);
    }
    const listed = (await account.client.listPushSubscriptions({ svcUserId })).subscriptions;
    expect(listed.map((s) => s.subscriptionId)).toEqual(ids.slice(1));
  });
});

describe("the connection to a push service", () => {
  let h2: TestPushService;
  let h1: TestPushService;
  beforeAll(async () => {
    const certificate = await selfSignedCertificate();
    // This process's TLS trusts the test certificate, as a server's trusts the public push services'.
    setDefaultCACertificates([...getCACertificates("default"), certificate.cert]);
    const vapidPublicKey = async () => (await account.client.getPushKey({})).publicKey;
    const now = () => clock.now();
    h2 = await startPushService({ vapidPublicKey, now, tls: { certificate, http2: true } });
    h1 = await startPushService({ vapidPublicKey, now, tls: { certificate, http2: false } });
  });
  afterAll(async () => {
    await h2?.stop();
    await h1?.stop();
  });

  it("is HTTP/2 where the push service offers it: one TLS connection carries every push, each checked and decrypted", async () => {
    const svcUserId = await newHuman();
    const devices = [await subscribed(svcUserId, h2), await subscribed(svcUserId, h2), await subscribed(svcUserId, h2)];
    const first = card(svcUserId);
    expect((await account.client.pushToHuman(first)).webPush).toBe(3);
    const receipts = await Promise.all(devices.map((device) => h2.next(device.endpoint)));
    const second = card(svcUserId);
    await account.client.pushToHuman(second);
    receipts.push(...(await Promise.all(devices.map((device) => h2.next(device.endpoint)))));
    expect(
      receipts.map((receipt) => [receipt.httpVersion, receipt.status, (receipt.payload as { id: string }).id]),
    ).toEqual([...devices.map(() => ["2.0", 201, first.itemId]), ...devices.map(() => ["2.0", 201, second.itemId])]);
    expect(receipts.every((receipt) => receipt.ttl === 300 && receipt.urgency === "high")).toBe(true);
    expect(h2.connections()).toBe(1);
    expect(h2.problems).toEqual([]);
  });

  it("connects again after the push service ends the connection (GOAWAY), and a 410 over HTTP/2 still deletes", async () => {
    const svcUserId = await newHuman();
    const phone = await subscribed(svcUserId, h2);
    const gone = await subscribed(svcUserId, h2);
    await account.client.pushToHuman(card(svcUserId));
    await Promise.all([h2.next(phone.endpoint), h2.next(gone.endpoint)]);
    const before = h2.connections();
    h2.endConnections();
    h2.answerNext(gone.endpoint, 410);
    const after = card(svcUserId);
    await account.client.pushToHuman(after);
    const [delivered, refused] = await Promise.all([h2.next(phone.endpoint), h2.next(gone.endpoint)]);
    expect([delivered.httpVersion, delivered.status, (delivered.payload as { id: string }).id]).toEqual([
      "2.0",
      201,
      after.itemId,
    ]);
    expect([refused.httpVersion, refused.status]).toEqual(["2.0", 410]);
    expect(h2.connections()).toBe(before + 1);
    await expect
      .poll(async () =>
        (await account.client.listPushSubscriptions({ svcUserId })).subscriptions.map((s) => s.subscriptionId),
      )
      .toEqual([phone.id]);
  });

  it("a push waiting on HTTP/2 for an answer when its sender stops is given back, due at once, for another", async () => {
    const svcUserId = await newHuman();
    const phone = await subscribed(svcUserId, h2);
    h2.answerNext(phone.endpoint, "hang");
    const second = await startAccount({ env: account.env, clock, logger: createLogger("account", {}, "error") });
    let unanswered: Awaited<ReturnType<TestPushService["next"]>>;
    try {
      await createInternalClient(AccountService, second.url).pushToHuman(card(svcUserId));
      unanswered = await h2.next(phone.endpoint);
      expect([unanswered.httpVersion, unanswered.status]).toEqual(["2.0", 0]);
    } finally {
      await second.stop();
    }
    const delivered = await h2.next(phone.endpoint);
    expect([delivered.httpVersion, delivered.status, delivered.topic]).toEqual(["2.0", 201, unanswered.topic]);
  });

  it("is HTTP/1.1 over TLS where the push service offers only that", async () => {
    const svcUserId = await newHuman();
    const phone = await subscribed(svcUserId, h1);
    const queued = card(svcUserId);
    await account.client.pushToHuman(queued);
    const receipt = await h1.next(phone.endpoint);
    expect([receipt.httpVersion, receipt.status, (receipt.payload as { id: string }).id]).toEqual([
      "1.1",
      201,
      queued.itemId,
    ]);
    expect(h1.problems).toEqual([]);
  });
});

describe("sending", () => {
  it("pushes a queued card encrypted, with the card's remaining life as TTL, high urgency and one topic per card", async () => {
    const svcUserId = await newHuman();
    const phone = await subscribed(svcUserId);
    const laptop = await subscribed(svcUserId);
    const queued = card(svcUserId, 300);
    expect((await account.client.pushToHuman(queued)).webPush).toBe(2);
    const [onPhone, onLaptop] = await Promise.all([
      pushService.next(phone.endpoint),
      pushService.next(laptop.endpoint),
    ]);
    for (const receipt of [onPhone, onLaptop]) {
      expect(receipt.payload).toEqual({ kind: "card", id: queued.itemId, title: "An agent asks for your approval" });
      expect(receipt.ttl).toBe(300);
      expect(receipt.urgency).toBe("high");
      expect(receipt.topic).toMatch(/^[A-Za-z0-9_-]{32}$/);
      expect(receipt.vapid.aud).toBe(pushService.origin);
      // Twelve hours by the injected clock, not the real time.
      expect(receipt.vapid.exp).toBe(clock.now().getTime() / 1000 + 12 * 3600);
    }
    expect(onPhone.topic).toBe(onLaptop.topic);
    // The same card pushed again is the same push: nothing new is written or sent.
    await account.client.pushToHuman(queued);
    const next = card(svcUserId);
    await account.client.pushToHuman(next);
    expect((await pushService.next(phone.endpoint)).payload).toMatchObject({ id: next.itemId });
    expect(pushService.received.filter((r) => r.topic === onPhone.topic)).toHaveLength(2);
    expect(pushService.problems).toEqual([]);
  });

  it("a 410 deletes the subscription with what was still to be pushed to it", async () => {
    const svcUserId = await newHuman();
    const gone = await subscribed(svcUserId);
    pushService.answerNext(gone.endpoint, 410);
    await account.client.pushToHuman(card(svcUserId));
    expect((await pushService.next(gone.endpoint)).status).toBe(410);
    await expect
      .poll(async () => (await account.client.listPushSubscriptions({ svcUserId })).subscriptions)
      .toEqual([]);
    expect(await account.sql(`select * from push_job where subscription_id = $1`, [gone.id])).toEqual([]);
  });

  it("a 503 is retried after a backoff within the item's life, under the same topic with what is left as TTL", async () => {
    const svcUserId = await newHuman();
    const phone = await subscribed(svcUserId);
    pushService.answerNext(phone.endpoint, 503);
    const queued = card(svcUserId, 120);
    await account.client.pushToHuman(queued);
    const refused = await pushService.next(phone.endpoint);
    expect(refused.status).toBe(503);
    await expect
      .poll(
        async () =>
          (
            await account.sql<{ attempts: number }>(`select attempts from push_job where subscription_id = $1`, [
              phone.id,
            ])
          )[0]?.attempts,
      )
      .toBe(1);
    clock.advance(1000);
    const retried = await pushService.next(phone.endpoint);
    expect(retried.status).toBe(201);
    expect(retried.topic).toBe(refused.topic);
    expect(retried.ttl).toBe(119);
    expect(retried.payload).toEqual(refused.payload);
  });

  it("a push is leased to the sender that sends it, and given back, due at once, when that sender stops", async () => {
    const svcUserId = await newHuman();
    const phone = await subscribed(svcUserId);
    pushService.answerNext(phone.endpoint, "hang");
    // A second replica on the same database takes the push and stops while the push service keeps it waiting.
    const second = await startAccount({ env: account.env, clock, logger: createLogger("account", {}, "error") });
    let unanswered: Awaited<ReturnType<TestPushService["next"]>>;
    try {
      const pushed = card(svcUserId);
      await createInternalClient(AccountService, second.url).pushToHuman(pushed);
      unanswered = await pushService.next(phone.endpoint);
      expect(unanswered.status).toBe(0);
      const [job] = await account.sql<{ next_attempt_at: Date }>(
        `select next_attempt_at from push_job where subscription_id = $1`,
        [phone.id],
      );
      expect(job?.next_attempt_at).toEqual(new Date(clock.now().getTime() + 30_000));
    } finally {
      await second.stop();
    }
    // The first replica's sender takes it without the clock moving.
    const delivered = await pushService.next(phone.endpoint);
    expect(delivered.status).toBe(201);
    expect(delivered.topic).toBe(unanswered.topic);
    expect(delivered.payload).toEqual(unanswered.payload);
  });

  it("the VAPID JWT is reused for six hours of the injected clock and then signed again, ending twelve hours on", async () => {
    const svcUserId = await newHuman();
    const phone = await subscribed(svcUserId);
    // Past the six hours of whatever token earlier pushes signed.
    clock.advance(6 * 3600_000);
    await account.client.pushToHuman(card(svcUserId));
    const first = await pushService.next(phone.endpoint);
    expect(first.vapid.exp).toBe(clock.now().getTime() / 1000 + 12 * 3600);
    clock.advance(6 * 3600_000 - 1000);
    await account.client.pushToHuman(card(svcUserId));
    const reused = await pushService.next(phone.endpoint);
    expect(reused.vapid).toEqual(first.vapid);
    clock.advance(1000);
    await account.client.pushToHuman(card(svcUserId));
    const resigned = await pushService.next(phone.endpoint);
    expect(resigned.vapid.exp).toBe(clock.now().getTime() / 1000 + 12 * 3600);
    expect(pushService.problems).toEqual([]);
  });

  it("an item whose life ends while the push service refuses is never sent", async () => {
    const svcUserId = await newHuman();
    const phone = await subscribed(svcUserId);
    pushService.answerNext(phone.endpoint, 503);
    await account.client.pushToHuman(card(svcUserId, 1));
    expect((await pushService.next(phone.endpoint)).status).toBe(503);
    // The refusal's retry committed first: a delete meeting its row still locked would skip it, and the
    // next delete waits for the clock to move again.
    await expect
      .poll(
        async () =>
          (await account.sql(`select 1 from push_job where subscription_id = $1 and attempts = 1`, [phone.id])).length,
      )
      .toBe(1);
    clock.advance(1000);
    await expect
      .poll(async () => account.sql(`select * from push_job where subscription_id = $1`, [phone.id]))
      .toEqual([]);
    expect(pushService.received.filter((r) => r.endpoint === phone.endpoint)).toHaveLength(1);
  });

  it("a partner's revoke and a relink offer push their notice, at normal urgency", async () => {
    const svcUserId = await newHuman();
    const phone = await subscribed(svcUserId);
    const organizationId = `org_${uuid()}`;
    const environment = Environment.DEVELOPMENT;
    await account.client.secureAccount({
      organizationId,
      environment,
      partnerUserRef: "u1",
      svcUserId,
      surfaceId: "",
      at: timestampFromDate(clock.now()),
    });
    await account.console.unlinkAccount({ organizationId, environment, partnerUserRef: "u1" });
    const revoked = await pushService.next(phone.endpoint);
    const [notice] = (await account.client.listNotices({ svcUserId })).notices;
    expect(revoked.payload).toEqual({
      kind: "notice",
      id: notice?.noticeId,
      title: "A platform removed your linked account",
    });
    expect(revoked.urgency).toBe("normal");
    expect(revoked.ttl).toBe(24 * 3600);
    await account.client.secureAccount({
      organizationId,
      environment,
      partnerUserRef: "u1",
      svcUserId,
      surfaceId: "",
      at: timestampFromDate(clock.now()),
    });
    await account.client.reportCredentialChange({
      caller: create(CallerSchema, {
        organizationId,
        environment,
        credentialId: uuid(),
        credentialKind: CredentialKind.SECRET_KEY,
      }),
      partnerUserRef: "u1",
    });
    const offered = await pushService.next(phone.endpoint);
    const offer = (await account.client.listNotices({ svcUserId })).notices.find(
      (n) => n.kind === NoticeKind.RELINK_OFFER,
    );
    expect(offered.payload).toEqual({
      kind: "notice",
      id: offer?.noticeId,
      title: "A platform asks you to link your account again",
    });
    expect(offered.topic).not.toBe(revoked.topic);
    expect(pushService.problems).toEqual([]);
  });
});

describe("metrics", () => {
  /** account's /metrics: each sample's value by its name and labels, as Prometheus' text format writes them. */
  const scrape = async (): Promise<Map<string, number>> => {
    const response = await fetch(`${account.service.url}/metrics`);
    expect(response.status).toBe(200);
    const samples = new Map<string, number>();
    for (const line of (await response.text()).split("\n")) {
      if (line === "" || line.startsWith("#")) continue;
      const at = line.lastIndexOf(" ");
      samples.set(line.slice(0, at), Number(line.slice(at + 1)));
    }
    return samples;
  };
  const attempts = (samples: Map<string, number>, outcome: string) =>
    samples.get(`account_web_push_attempts_total{outcome="${outcome}"}`) ?? 0;
  const oldestDue = (samples: Map<string, number>) => samples.get("account_web_push_oldest_due_age_seconds");

  it("counts each send by outcome, and serves how long the oldest due push has waited for a sender", async () => {
    const before = await scrape();
    const svcUserId = await newHuman();
    const phone = await subscribed(svcUserId);
    const gone = await subscribed(svcUserId);
    pushService.answerNext(phone.endpoint, 503);
    pushService.answerNext(gone.endpoint, 410);
    await account.client.pushToHuman(card(svcUserId));
    expect((await pushService.next(phone.endpoint)).status).toBe(503);
    expect((await pushService.next(gone.endpoint)).status).toBe(410);
    await expect
      .poll(
        async () =>
          (await account.sql(`select 1 from push_job where subscription_id = $1 and attempts = 1`, [phone.id])).length,
      )
      .toBe(1);
    expect(oldestDue(await scrape())).toBe(0);

    // Held by a transaction of the test's, the retry comes due and no sender can take it (they skip locked rows).
    await account.sql("begin");
    try {
      await account.sql(`select 1 from push_job where subscription_id = $1 for update`, [phone.id]);
      clock.advance(5000);
      // Due since 4 s: its retry was set for 1 s after the refusal.
      expect(oldestDue(await scrape())).toBe(4);
    } finally {
      await account.sql("rollback");
    }
    expect((await pushService.next(phone.endpoint)).status).toBe(201);
    const after = await vi.waitFor(async () => {
      const samples = await scrape();
      if (attempts(samples, "delivered") === attempts(before, "delivered")) throw new Error("not settled yet");
      return samples;
    });
    expect(attempts(after, "delivered") - attempts(before, "delivered")).toBe(1);
    expect(attempts(after, "retry") - attempts(before, "retry")).toBe(1);
    expect(attempts(after, "gone") - attempts(before, "gone")).toBe(1);
    expect(attempts(after, "refused") - attempts(before, "refused")).toBe(0);
    expect(oldestDue(after)).toBe(0);
  });
});

import { createSecretKey } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import { jetstream } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { createLogger, ManualClock, OutboxEvent, openDatabase, uuid } from "@svc/platform";
import { LinkConflict } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { type Event, EventSchema } from "@svc/proto/events/v1/events_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { natsUrl, uniqueName } from "../../../test/harness/index.ts";
import { AccountLink } from "../src/links/account-link.entity.ts";
import { unlinkAccount } from "../src/links/account-links.ts";
import { migrations } from "../src/migrations/index.ts";
import { refPepper, refusal, startTestAccount, type TestAccount } from "./support/account.ts";

const clock = new ManualClock("2026-11-22T10:00:00Z");
let account: TestAccount;
let nc: NatsConnection;
/** Every account event of this service's stream, decoded, in stream order. */
const received: { subject: string; msgId: string | undefined; event: Event }[] = [];
let orm: MikroORM;

beforeAll(async () => {
  account = await startTestAccount("account_links", { clock });
  nc = await connect({ servers: natsUrl() });
  const consumer = await jetstream(nc).consumers.get(account.env.SVC_EVENT_STREAM!, {
    filter_subjects: `${account.env.SVC_EVENT_SUBJECT_PREFIX}.account.>`,
  });
  const messages = await consumer.consume();
  void (async () => {
    for await (const msg of messages)
      received.push({
        subject: msg.subject,
        msgId: msg.headers?.get("Nats-Msg-Id"),
        event: fromBinary(EventSchema, msg.data),
      });
  })();
  // The test calls the unlink rule directly on the service's own tables, so it can end links with any by/reason.
  orm = await openDatabase({
    url: account.database.url,
    schema: "account",
    entities: [OutboxEvent, AccountLink],
    migrations,
    logger: createLogger("links-test", {}, "error"),
  });
});
afterAll(async () => {
  await orm?.close();
  await nc?.drain();
  await account?.stop();
});

const newHuman = async () =>
  (await account.client.resolveSignedInHuman({ issuer: "https://id.example", subject: uuid() })).svcUserId;

function platform() {
  const organizationId = uniqueName("org");
  const environment = Environment.PRODUCTION;
  return {
    organizationId,
    environment,
    secure: (partnerUserRef: string, svcUserId: string, extra: { surfaceId?: string; at?: Date } = {}) =>
      account.client.secureAccount({
        organizationId,
        environment,
        partnerUserRef,
        svcUserId,
        surfaceId: extra.surfaceId ?? "",
        at: timestampFromDate(extra.at ?? clock.now()),
      }),
    link: (partnerUserRef: string, svcUserId = "") =>
      account.client.getAccountLink({ organizationId, environment, partnerUserRef, svcUserId }),
  };
}

const eventsFor = (handle: string) =>
  received.filter(
    ({ event }) =>
      (event.payload.case === "accountSecured" || event.payload.case === "accountUnlinked") &&
      event.payload.value.handle === handle,
  );

describe("SecureAccount", () => {
  it("creates a link the first time and reports the same link afterwards", async () => {
    const shop = platform();
    const human = await newHuman();
    const securedAt = clock.now();
    const first = await shop.secure("user-1001", human);
    expect(first.conflict).toBe(LinkConflict.UNSPECIFIED);
    expect(first.firstTime).toBe(true);
    expect(first.handle).toMatch(/^OP_[A-Za-z0-9]{12}$/);
    expect(timestampDate(first.trustedSince!)).toEqual(securedAt);

    clock.advance(60_000);
    const again = await shop.secure("user-1001", human);
    expect(again).toMatchObject({ conflict: LinkConflict.UNSPECIFIED, firstTime: false, handle: first.handle });
    expect(timestampDate(again.trustedSince!)).toEqual(securedAt);

    const link = await shop.link("user-1001");
    expect(link).toMatchObject({ trusted: true, handle: first.handle });
    expect(timestampDate(link.trustedSince!)).toEqual(securedAt);
    expect((await shop.link("user-1001", human)).trusted).toBe(true);
    expect(await shop.link("user-1001", await newHuman())).toMatchObject({ trusted: false, handle: "" });
    expect(await shop.link("user-unknown")).toMatchObject({ trusted: false, handle: "" });
  });

  it("refuses an account held by another human (rebind_requires_prior_id) and a second account of one human (already_trusted)", async () => {
    const shop = platform();
    const holder = await newHuman();
    await shop.secure("user-A", holder);
    const other = await newHuman();
    expect(await shop.secure("user-A", other)).toMatchObject({
      conflict: LinkConflict.REBIND_REQUIRES_PRIOR_ID,
      firstTime: false,
      handle: "",
    });
    expect(await shop.secure("user-B", holder)).toMatchObject({
      conflict: LinkConflict.ALREADY_TRUSTED,
      firstTime: false,
      handle: "",
    });
    // The same reference or human on another platform (organization or environment) is another account.
    expect((await platform().secure("user-A", other)).firstTime).toBe(true);
    const development = await account.client.secureAccount({
      organizationId: shop.organizationId,
      environment: Environment.DEVELOPMENT,
      partnerUserRef: "user-B",
      svcUserId: holder,
      surfaceId: "",
      at: timestampFromDate(clock.now()),
    });
    expect(development.firstTime).toBe(true);
  });

  it("relinking after an unlink is a new link: first time again, with the same handle", async () => {
    const shop = platform();
    const human = await newHuman();
    const first = await shop.secure("user-relink", human);
    clock.advance(60_000);
    const unlinked = await unlinkAccount(
      {
        em: orm.em.fork(),
        clock,
        pepper: createSecretKey(Buffer.from(refPepper, "base64")),
        bus: { subject: (type) => `${account.env.SVC_EVENT_SUBJECT_PREFIX}.${type}` },
        outbox: { publishCommitted: async () => true },
        inboxes: { changed() {} },
      },
      {
        organizationId: shop.organizationId,
        environment: "production",
        partnerUserRef: "user-relink",
        by: "platform",
        reason: "credential_changed",
        at: clock.now(),
      },
    );
    expect(unlinked.handle).toBe(first.handle);
    expect((await shop.link("user-relink")).trusted).toBe(false);
    // Its row is left to the service's relay (this call's outbox hands nothing over): published before the relink.
    const cases = () => eventsFor(first.handle).map(({ event }) => event.payload.case);
    await expect.poll(cases, { timeout: 10_000 }).toEqual(["accountSecured", "accountUnlinked"]);

    clock.advance(60_000);
    const relinked = await shop.secure("user-relink", human);
    expect(relinked.firstTime).toBe(true);
    expect(relinked.handle).toBe(first.handle);
    expect(timestampDate(relinked.trustedSince!)).toEqual(clock.now());
    const rows = await account.sql<{
      handle: string;
      status: string;
      unlinked_by: string | null;
      unlink_reason: string | null;
    }>(
      "select handle, status, unlinked_by, unlink_reason from account_link where organization_id = $1 order by secured_at",
      [shop.organizationId],
    );
    expect(rows).toEqual([
      { handle: first.handle, status: "unlinked", unlinked_by: "platform", unlink_reason: "credential_changed" },
      { handle: first.handle, status: "active", unlinked_by: null, unlink_reason: null },
    ]);
    await expect.poll(cases, { timeout: 10_000 }).toEqual(["accountSecured", "accountUnlinked", "accountSecured"]);
    const unlinkedEvent = eventsFor(first.handle)[1]!.event;
    expect(unlinkedEvent.payload.case === "accountUnlinked" && unlinkedEvent.payload.value).toMatchObject({
      handle: first.handle,
      by: "platform",
      reason: "credential_changed",
    });
  });

  it("sends account.secured on JetStream exactly once per new link, as one Event envelope", async () => {
    const shop = platform();
    const human = await newHuman();
    const surfaceId = uuid();
    const first = await shop.secure("user-event", human, { surfaceId });
    await shop.secure("user-event", human);
    // A later link on another platform: once its event is on the stream, everything enqueued before it is too.
    const marker = await platform().secure("user-marker", await newHuman());
    await expect.poll(() => eventsFor(marker.handle).length, { timeout: 10_000 }).toBe(1);

    const events = eventsFor(first.handle);
    expect(events).toHaveLength(1);
    const { subject, msgId, event } = events[0]!;
    expect(subject).toBe(`${account.env.SVC_EVENT_SUBJECT_PREFIX}.account.secured`);
    expect(event.dedupKey).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(msgId).toBe(event.dedupKey);
    expect(event.organizationId).toBe(shop.organizationId);
    expect(event.environment).toBe(Environment.PRODUCTION);
    expect(timestampDate(event.occurredAt!)).toEqual(timestampDate(first.trustedSince!));
    expect(event.payload.case).toBe("accountSecured");
    const payload = event.payload.case === "accountSecured" ? event.payload.value : undefined;
    expect(payload?.handle).toBe(first.handle);
    expect(payload?.surfaceId).toBe(surfaceId);
    expect(timestampDate(payload!.securedAt!)).toEqual(timestampDate(first.trustedSince!));
  });

  it("a link through a gate has no surface_id in its event", async () => {
    const secured = await platform().secure("user-gate", await newHuman());
    await expect.poll(() => eventsFor(secured.handle).length, { timeout: 10_000 }).toBe(1);
    const { event } = eventsFor(secured.handle)[0]!;
    expect(event.payload.case === "accountSecured" && event.payload.value.surfaceId).toBeUndefined();
  });

  it("concurrent calls for one account create exactly one link", async () => {
    const shop = platform();
    const human = await newHuman();
    const results = await Promise.all(Array.from({ length: 8 }, () => shop.secure("user-race", human)));
    expect(results.filter((r) => r.firstTime)).toHaveLength(1);
    expect(new Set(results.map((r) => r.handle)).size).toBe(1);

    const rivals = await Promise.all(Array.from({ length: 4 }, () => newHuman()));
    const contested = await Promise.all(rivals.map((rival) => shop.secure("user-contested", rival)));
    expect(contested.filter((r) => r.firstTime)).toHaveLength(1);
    expect(contested.filter((r) => r.conflict === LinkConflict.REBIND_REQUIRES_PRIOR_ID)).toHaveLength(3);

    const greedy = await newHuman();
    const spread = await Promise.all(
      ["user-x1", "user-x2", "user-x3", "user-x4"].map((ref) => shop.secure(ref, greedy)),
    );
    expect(spread.filter((r) => r.firstTime)).toHaveLength(1);
    expect(spread.filter((r) => r.conflict === LinkConflict.ALREADY_TRUSTED)).toHaveLength(3);

    const [row] = await account.sql<{ active: string }>(
      "select count(*) as active from account_link where organization_id = $1 and status = 'active'",
      [shop.organizationId],
    );
    expect(row!.active).toBe("3");
  });

  it("never stores the partner's reference in clear, in any table", async () => {
    const reference = `partner-ref-${uuid()}`;
    const shop = platform();
    await shop.secure(reference, await newHuman());
    await shop.link(reference);
    const tables = await account.sql<{ table_name: string }>(
      "select table_name from information_schema.tables where table_schema = 'account'",
    );
    expect(tables.map((t) => t.table_name)).toEqual(
      expect.arrayContaining(["account_link", "outbox", "human", "passkey"]),
    );
    const needle = Buffer.from(reference);
    for (const { table_name } of tables) {
      for (const row of await account.sql<Record<string, unknown>>(`select * from "${table_name}"`)) {
        for (const value of Object.values(row)) {
          const bytes = Buffer.isBuffer(value) ? value : Buffer.from(JSON.stringify(value) ?? "");
          expect(bytes.includes(needle), `${table_name} holds the reference`).toBe(false);
        }
      }
    }
  });

  it("refuses bad input and unknown humans", async () => {
    const shop = platform();
    const human = await newHuman();
    const at = timestampFromDate(clock.now());
    const base = {
      organizationId: shop.organizationId,
      environment: Environment.PRODUCTION,
      partnerUserRef: "user-1",
      svcUserId: human,
      surfaceId: "",
      at,
    };
    const cases: [Partial<typeof base> & Record<string, unknown>, Code, string][] = [
      [{ environment: Environment.UNSPECIFIED }, Code.InvalidArgument, "environment is required"],
      [{ partnerUserRef: "" }, Code.InvalidArgument, "partner_user_ref is required"],
      [{ partnerUserRef: "x".repeat(513) }, Code.InvalidArgument, "partner_user_ref is longer than 512 characters"],
      [{ surfaceId: "surface-1" }, Code.InvalidArgument, 'surface_id is not a uuid: "surface-1"'],
      [{ at: undefined }, Code.InvalidArgument, "at is required"],
      [
        { svcUserId: "00000000-0000-4000-8000-000000000000" },
        Code.NotFound,
        "no human with svc_user_id 00000000-0000-4000-8000-000000000000",
      ],
    ];
    for (const [change, code, message] of cases) {
      const error = await refusal(account.client.secureAccount({ ...base, ...change }));
      expect([error.code, error.rawMessage]).toEqual([code, message]);
    }
  });
});

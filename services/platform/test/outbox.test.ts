import type { MikroORM } from "@mikro-orm/postgresql";
import { jetstreamManager } from "@nats-io/jetstream";
import {
  committedEvent,
  connectEventBus,
  createLogger,
  type EventBus,
  enqueueEvent,
  ManualClock,
  OutboxEvent,
  openDatabase,
  openStatementPool,
  outboxMigrations,
  startOutboxRelay,
} from "@svc/platform";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, natsUrl, type TestDatabase, uniqueName } from "../../../test/harness/index.ts";

const logger = createLogger("platform-test", {}, "error");
const clock = new ManualClock("2026-11-22T10:00:00Z");

describe("transactional outbox", () => {
  let db: TestDatabase;
  let orm: MikroORM;
  let statements: pg.Pool;
  let bus: EventBus;
  let stream: string;

  beforeAll(async () => {
    db = await createTestDatabase("outbox");
    orm = await openDatabase({
      url: db.url,
      schema: "outbox_test",
      entities: [OutboxEvent],
      migrations: outboxMigrations,
      logger,
    });
    statements = openStatementPool({ url: db.url, schema: "outbox_test", max: 2, logger });
    stream = uniqueName("outbox").toUpperCase();
    bus = await connectEventBus({ url: natsUrl(), name: "outbox-test", stream, subjectPrefix: stream.toLowerCase() });
  });
  afterAll(async () => {
    await bus.nc.drain();
    await statements.end();
    await orm.close();
    await db.drop();
  });

  const streamMessages = async () => (await (await jetstreamManager(bus.nc)).streams.info(stream)).state.messages;

  /**
   * Adds a stream for the subjects under `late`, wakes the relay and waits for nothing to be left unpublished;
   * then stops the relay, checks that the stream got its one message, and deletes it.
   */
  const publishedOnceAStreamTakes = async (
    late: string,
    relay: ReturnType<typeof startOutboxRelay>,
    unpublished: () => Promise<string[]>,
  ) => {
    const jsm = await jetstreamManager(bus.nc);
    await jsm.streams.add({ name: late.toUpperCase(), subjects: [`${late}.>`] });
    relay.wake();
    await expect.poll(unpublished, { timeout: 5000 }).toEqual([]);
    await relay.stop();
    expect((await jsm.streams.info(late.toUpperCase())).state.messages).toBe(1);
    await jsm.streams.delete(late.toUpperCase());
  };

  it("publishes only events whose transaction committed, each once under its message id", async () => {
    await orm.em.fork().transactional(async (em) => {
      enqueueEvent(
        em,
        clock,
        { type: "test.committed", messageId: "committed-1", payload: new TextEncoder().encode("one") },
        bus,
      );
    });
    await orm.em
      .fork()
      .transactional(async (em) => {
        enqueueEvent(
          em,
          clock,
          { type: "test.rolled_back", messageId: "rolled-back-1", payload: new Uint8Array([1]) },
          bus,
        );
        await em.flush();
        throw new Error("abort the state change");
      })
      .catch(() => undefined);

    const relay = startOutboxRelay({ statements, bus, logger, clock, pollMs: 50 });
    await expect.poll(streamMessages, { timeout: 5000 }).toBe(1);
    await relay.stop();

    const rows = await orm.em
      .fork()
      .execute<{ message_id: string; published_at: string }[]>("select message_id, published_at from outbox");
    expect(rows.map((r) => [r.message_id, new Date(r.published_at).toISOString()])).toEqual([
      ["committed-1", clock.now().toISOString()],
    ]);
  });

  it("re-publishing a row after a crash (published but not marked) does not duplicate the event", async () => {
    await orm.em.fork().transactional(async (em) => {
      enqueueEvent(em, clock, { type: "test.retry", messageId: "retry-1", payload: new Uint8Array([2]) }, bus);
    });
    await bus.js.publish(bus.subject("test.retry"), new Uint8Array([2]), { msgID: "retry-1" });
    const before = await streamMessages();
    const relay = startOutboxRelay({ statements, bus, logger, clock, pollMs: 50 });
    await expect
      .poll(async () => (await orm.em.fork().execute("select 1 from outbox where published_at is null")).length, {
        timeout: 5000,
      })
      .toBe(0);
    await relay.stop();
    expect(await streamMessages()).toBe(before);
  });

  it("a row whose publish fails stays for the next poll; the rows around it are published and marked", async () => {
    const late = `${stream.toLowerCase()}_late`;
    const insert = (subject: string, messageId: string) =>
      orm.em
        .fork()
        .execute("insert into outbox (subject, message_id, payload, created_at) values (?, ?, ?, ?)", [
          subject,
          messageId,
          Buffer.from([5]),
          clock.now(),
        ]);
    await insert(bus.subject("test.around"), "around-1");
    await insert(`${late}.one`, "late-1");
    await insert(bus.subject("test.around"), "around-2");
    const unpublished = async () =>
      (
        await orm.em
          .fork()
          .execute<{ message_id: string }[]>("select message_id from outbox where published_at is null order by id")
      ).map((r) => r.message_id);
    const before = await streamMessages();
    const relay = startOutboxRelay({ statements, bus, logger, clock, pollMs: 50 });
    await expect.poll(unpublished, { timeout: 5000 }).toEqual(["late-1"]);
    expect(await streamMessages()).toBe(before + 2);

    // Once a stream takes its subject, the next poll publishes it.
    await publishedOnceAStreamTakes(late, relay, unpublished);
    expect(await streamMessages()).toBe(before + 2);
  });

  it("publishes events handed over by their writer at once, unclaimed, and marks them; a refused one stays for a run", async () => {
    const late = `${stream.toLowerCase()}_handed`;
    const unpublished = async () =>
      (
        await orm.em
          .fork()
          .execute<{ message_id: string }[]>("select message_id from outbox where published_at is null order by id")
      ).map((r) => r.message_id);
    // Its runs come a minute apart, and its first, at start, finds nothing: only a hand-over publishes.
    const relay = startOutboxRelay({ statements, bus, logger, clock, pollMs: 60_000 });
    const write = async (subject: string, messageId: string) => {
      const [row] = await orm.em
        .fork()
        .execute<{ id: string }[]>(
          "insert into outbox (subject, message_id, payload, created_at) values (?, ?, ?, ?) returning id",
          [subject, messageId, Buffer.from([7]), clock.now()],
        );
      return { id: String(row?.id), subject, messageId, payload: new Uint8Array([7]), traceContext: null };
    };
    const before = await streamMessages();

    // Written through the ORM, the row has its id once the transaction committed; handed over twice (a
    // writer's hand-over and a run's claim may both publish one row): one message.
    const row = await orm.em
      .fork()
      .transactional(async (em) =>
        enqueueEvent(em, clock, { type: "test.handed", messageId: "handed-1", payload: new Uint8Array([7]) }, bus),
      );
    const handed = committedEvent(row);
    expect(handed.id).toMatch(/^\d+$/);
    // Resolved once JetStream stored both; the mark follows.
    expect(await relay.publishCommitted([handed, handed])).toBe(true);
    await expect.poll(unpublished, { timeout: 5000 }).toEqual([]);
    expect(await streamMessages()).toBe(before + 1);

    // No stream takes this subject yet: the publish is refused and the row is left unmarked.
    const refused = await write(`${late}.one`, "handed-late-1");
    expect(await relay.publishCommitted([refused])).toBe(false);
    expect(await unpublished()).toEqual(["handed-late-1"]);
    await publishedOnceAStreamTakes(late, relay, unpublished);
    expect(await streamMessages()).toBe(before + 1);
  });

  it("deletes published rows past their retention, a small batch at a time, and never an unpublished one", async () => {
    const hour = 3600_000;
    const enqueue = (messageId: string) =>
      orm.em
        .fork()
        .transactional(async (em) =>
          enqueueEvent(em, clock, { type: "test.pruned", messageId, payload: new Uint8Array([3]) }, bus),
        );
    const unpublished = async () =>
      (await orm.em.fork().execute("select 1 from outbox where published_at is null")).length;
    const messageIds = async () =>
      (await orm.em.fork().execute<{ message_id: string }[]>("select message_id from outbox order by id")).map(
        (r) => r.message_id,
      );
    for (let i = 0; i < 5; i += 1) await enqueue(`old-${i}`);
    const relay = startOutboxRelay({
      statements,
      bus,
      logger,
      clock,
      pollMs: 50,
      retentionMs: 24 * hour,
      pruneBatchSize: 2,
    });
    await expect.poll(unpublished, { timeout: 5000 }).toBe(0);

    clock.advance(12 * hour);
    await enqueue("young");
    relay.wake();
    await expect.poll(unpublished, { timeout: 5000 }).toBe(0);
    // An event no stream takes stays unpublished, however old it is.
    await orm.em
      .fork()
      .execute("insert into outbox (subject, message_id, payload, created_at) values (?, ?, ?, ?)", [
        "nowhere.test",
        "stuck-1",
        Buffer.from([4]),
        new Date(clock.now().getTime() - 48 * hour),
      ]);

    clock.advance(12 * hour + 1000);
    relay.wake();
    await expect.poll(messageIds, { timeout: 5000 }).toEqual(["young", "stuck-1"]);
    await relay.stop();
    await orm.em.fork().execute("delete from outbox where message_id = 'stuck-1'");
  });

  it("claims a backlog's oldest rows by walking the unpublished index, though the statistics saw only a few waiting", async () => {
    const em = orm.em.fork();
    // As after a day of service: rows of a few hundred bytes in no physical order of id (new rows fill the
    // space pruned ones left), and a few in flight whenever the statistics were taken.
    const rows = (count: number, firstId: number, idOf: string, published: string) =>
      em.execute(
        `insert into outbox (id, subject, message_id, payload, created_at, published_at)
           select ${firstId} + ${idOf}, 'test.backlog', 'backlog-' || g, decode(repeat('00', 300), 'hex'), ?,
             case when ${published} then ?::timestamptz end
           from generate_series(1, ${count}) g`,
        [clock.now(), clock.now()],
      );
    await rows(20_000, 1_000_000, "(g * 7919) % 20011", "g % 500 <> 0");
    await em.execute("analyze outbox");
    await rows(5000, 2_000_000, "g", "false");
    // The claim's own query planned under the function's own settings, as PostgreSQL runs it.
    const plan = await em.transactional(async (tx) => {
      const [claim] = await tx.execute<{ body: string; settings: string[] }[]>(
        "select prosrc as body, proconfig as settings from pg_proc where proname = 'claim_unpublished_events'",
      );
      for (const setting of claim?.settings ?? []) {
        const [name, value] = setting.split("=");
        await tx.execute(`select set_config(?, ?, true)`, [name, value]);
      }
      const [row] = await tx.execute<{ "QUERY PLAN": unknown }[]>(
        `explain (format json) ${claim?.body.replace("p_batch", "100")}`,
      );
      return JSON.stringify(row?.["QUERY PLAN"]);
    });
    await em.execute("delete from outbox where message_id like 'backlog-%'");
    expect(plan).toContain('"Index Name":"outbox_unpublished"');
    expect(plan).toContain('"Node Type":"Index Scan"');
    expect(plan).not.toContain('"Node Type":"Sort"');
  });

  it("a second migration run on an up-to-date schema changes nothing", async () => {
    const again = await openDatabase({
      url: db.url,
      schema: "outbox_test",
      entities: [OutboxEvent],
      migrations: outboxMigrations,
      logger,
    });
    const applied = await again.em
      .fork()
      .execute<{ name: string }[]>("select name from outbox_test.mikro_orm_migrations");
    expect(applied.map((r) => r.name)).toEqual(["0000_outbox", "0000_outbox_trace_context", "0000_outbox_claim"]);
    await again.close();
  });
});

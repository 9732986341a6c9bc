import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTestDatabase, natsUrl, postgresUrl, type TestDatabase, uniqueName } from "./index.ts";

describe("test database", () => {
  let database: TestDatabase;
  let client: pg.Client;

  beforeAll(async () => {
    database = await createTestDatabase("harness");
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
  });

  afterAll(async () => {
    await client?.end();
    await database?.drop();
  });

  test("answers queries in its own database", async () => {
    const { rows } = await client.query("select 1 as one, current_database() as name");
    expect(rows).toEqual([{ one: 1, name: database.name }]);
  });

  test("keeps a table it created", async () => {
    await client.query("create table widgets (id serial primary key, label text not null)");
    await client.query("insert into widgets (label) values ($1), ($2)", ["first", "second"]);
    const { rows } = await client.query("select label from widgets order by id");
    expect(rows).toEqual([{ label: "first" }, { label: "second" }]);
  });

  test("drop removes the database from the server", async () => {
    const scratch = await createTestDatabase("scratch");
    await scratch.drop();
    const admin = new pg.Client({ connectionString: postgresUrl() });
    await admin.connect();
    try {
      const { rowCount } = await admin.query("select 1 from pg_database where datname = $1", [scratch.name]);
      expect(rowCount).toBe(0);
    } finally {
      await admin.end();
    }
  });
});

describe("NATS JetStream", () => {
  test("flags a second publish with the same msgID as a duplicate", async () => {
    const connection = await connect({ servers: natsUrl() });
    try {
      const manager = await jetstreamManager(connection);
      const stream = uniqueName("harness");
      const subject = `${stream}.events`;
      await manager.streams.add({ name: stream, subjects: [subject] });

      const client = jetstream(connection);
      const first = await client.publish(subject, "hello", { msgID: "event-1" });
      const second = await client.publish(subject, "hello", { msgID: "event-1" });

      expect(first.duplicate).toBe(false);
      expect(second.duplicate).toBe(true);
      expect(second.seq).toBe(first.seq);
      expect((await manager.streams.info(stream)).state.messages).toBe(1);
      await manager.streams.delete(stream);
    } finally {
      await connection.close();
    }
  });
});

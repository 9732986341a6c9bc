import { createSecretKey } from "node:crypto";
import type { EntityManager, MikroORM } from "@mikro-orm/postgresql";
import { createLogger, OutboxEvent, openDatabase, openStatementPool } from "@svc/platform";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/harness/index.ts";
import { planOf } from "../../../test/harness/plans.ts";
import { AccountLink } from "../src/links/account-link.entity.ts";
import { listSecuredAccounts, type SecuredAccountQuery } from "../src/links/secured-accounts.ts";
import { migrations } from "../src/migrations/index.ts";

/**
 * The plans of the secured-accounts list on a partner with 30,000 links (and the count table behind
 * `total`), after `analyze`: no form of the page reads the table from end to end. The list's own
 * statement is captured as it runs and explained with the same values.
 */
const logger = createLogger("list-plans", {}, "error");
const organizationId = "org-plans";
const pepper = createSecretKey(Buffer.alloc(32, 9));

let database: TestDatabase;
let orm: MikroORM;
let statements: ReturnType<typeof openStatementPool>;

/** Runs the list and answers the plan of the statement it sent. */
async function planOfList(query: Partial<SecuredAccountQuery>): Promise<string> {
  const sent: { sql: string; params: unknown[] }[] = [];
  const em = orm.em.fork();
  const recording = new Proxy(em, {
    get(target, property, receiver) {
      if (property !== "execute") return Reflect.get(target, property, receiver);
      return (sql: string, params: unknown[]) => {
        sent.push({ sql, params });
        return target.execute(sql, params);
      };
    },
  }) as EntityManager;
  await listSecuredAccounts(
    { em: recording, pepper },
    { organizationId, environment: "development", secretKey: true },
    { partnerUserRef: undefined, status: undefined, limit: 25, offset: 0, cursor: undefined, ...query },
  );
  expect(sent).toHaveLength(1);
  return planOf(statements, sent[0]!.sql, sent[0]!.params);
}

beforeAll(async () => {
  database = await createTestDatabase("account-list-plans");
  orm = await openDatabase({
    url: database.url,
    schema: "account",
    entities: [OutboxEvent, AccountLink],
    migrations,
    logger,
  });
  statements = openStatementPool({ url: database.url, schema: "account", max: 2, logger });
  // Four links in five active, each with its own person; the rest unlinked, their person deleted.
  await statements.query(
    `with h as (
       insert into human (id, created_at) select gen_random_uuid(), now() from generate_series(1, 24000) returning id)
     insert into account_link (id, organization_id, environment, ref_hash, svc_user_id, handle, secured_at, status)
       select gen_random_uuid(), $1, 'development', sha256(h.id::text::bytea), h.id,
              'OP_' || substr(md5(h.id::text), 1, 12), now() - random() * interval '365 days', 'active'
         from h`,
    [organizationId],
  );
  await statements.query(
    `insert into account_link (id, organization_id, environment, ref_hash, svc_user_id, handle, secured_at, status,
                               unlinked_at, unlinked_by, unlink_reason)
       select gen_random_uuid(), $1, 'development', sha256(i::text::bytea), null, 'OP_' || substr(md5(i::text), 1, 12),
              now() - interval '400 days', 'unlinked', now() - interval '1 day', 'human', 'human'
         from generate_series(1, 6000) as i`,
    [organizationId],
  );
  await statements.query("analyze account_link");
  await statements.query("analyze account_link_count");
});
afterAll(async () => {
  await statements?.end();
  await orm?.close();
  await database?.drop();
});

describe("the secured-accounts list on a grown table", () => {
  it("keeps total exact from the maintained counts", async () => {
    const page = await listSecuredAccounts(
      { em: orm.em.fork(), pepper },
      { organizationId, environment: "development", secretKey: true },
      { partnerUserRef: undefined, status: "unlinked", limit: 25, offset: 0, cursor: undefined },
    );
    expect(page.total).toBe(6000);
  });

  // A page walks an index in page order, so nothing is sorted; one account's few links (the reference
  // filter) are sorted after the index found them.
  it.each([
    ["the default page", {}, false],
    ["a large offset", { offset: 20_000 }, false],
    ["the status filter", { status: "unlinked" as const }, false],
    ["the reference filter", { partnerUserRef: "someone" }, true],
    ["a cursor page", { cursor: "AAZFRgoj1QC9xxK5Y0ZZq0U1ZQjCMD_A" }, false],
    [
      "a cursor page with the status filter",
      { status: "active" as const, cursor: "AAZFRgoj1QC9xxK5Y0ZZq0U1ZQjCMD_A" },
      false,
    ],
  ])("reads %s on indexes, never the whole table", async (_, query, sorts) => {
    const plan = await planOfList(query);
    expect(plan, plan).not.toContain("Seq Scan");
    if (!sorts) expect(plan, plan).not.toMatch(/Sort\b/);
  });
});

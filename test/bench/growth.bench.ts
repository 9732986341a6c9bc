import { loadavg } from "node:os";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { consoleTransport } from "@svc/local-mesh/console-client";
import { createInternalClient, dueBatchStatement } from "@svc/platform";
import { AccountService } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { ConsoleService, KeyType } from "@svc/proto/console/v1/console_pb.js";
import { GateConsoleService, GateType } from "@svc/proto/gate/v1/gate_pb.js";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import pg from "pg";
import { startBenchMesh } from "./bench-infrastructure.ts";
import { cpuSince, threadCpu } from "./mesh-arms.ts";
import { postgresProcesses } from "./process-cpu.ts";

/**
 * Growth: the mesh's lookups and periodic scans with its tables filled by SQL to 10,000 rows, then
 * (in the same run, same machine) to 1,000,000. Goals: each lookup's p50 at 1M within 1.5x of 10k, and
 * each scan's time at the same number of due rows within 1.5x too (O(due), not O(table)).
 *
 * The distribution (steady state of a successful mesh, everything inside its retention):
 * - 20 partners; one big one holds 55% of every table's rows, the other 19 share the rest evenly.
 * - gate.requests: created over the last 29 days; 60% completed, 27% expired by the window, 8% failed,
 *   5% Recent Presence passes; none pending (a pending request lives five minutes).
 * - gate.sessions: as many consumed sessions, expired over the last 23 hours (they are kept a day).
 * - account.account_link: secured over the last two years; 80% active (each with its own person),
 *   20% unlinked (by the person, the platform or a changed credential; a third of those persons deleted).
 * - webhook_dispatch.messages: arrived over the last 89 days, each with one delivered delivery to its
 *   partner's endpoint.
 * - gateway.token_checks: ledger rows of tokens expiring within the next two hours (a real ledger holds
 *   only minutes of tokens; these stand in for a busy hour and stay clear of the gateway's own sweep).
 * - gateway.rate_counters: counters whose windows end within the next day.
 * Every scan is then given the same 1,000 due rows at both sizes, seeded in the transaction that scans
 * them, so the services' own timers never see them.
 *
 * Lookups go through the real gateway, one at a time; scans run their statement (the services' text,
 * or the platform's batch delete for retention) straight on PostgreSQL. Beside each time, CPU from the
 * threads' schedstat: a lookup's server CPU (the mesh, PostgreSQL, NATS; create-link's counts the session
 * it needs), a scan's PostgreSQL CPU (its median round's), at both sizes.
 */
/** `GROWTH_SIZES=10000,20000` tries the benchmark quickly; its goals are about 10,000 against 1,000,000. */
const sizes = (process.env.GROWTH_SIZES ?? "10000,1000000").split(",").map(Number);
const samples = 200;
const due = 1000;
const scanRounds = 5;
const partners = 20;
const bigShare = 55;
const fillChunk = 250_000;

const mesh = await startBenchMesh(["signing", "account", "gate", "webhook-dispatch"]);
const db = new pg.Pool({ connectionString: mesh.databaseUrl, max: 4 });
try {
  const transport = consoleTransport(mesh.consoleUrl, mesh.consoleToken);
  const console_ = createClient(ConsoleService, transport);
  const gates = createClient(GateConsoleService, transport);
  const orgs: string[] = [];
  for (let p = 0; p < partners; p++)
    orgs.push((await console_.createOrganization({ name: `partner ${p}` })).organizationId);
  const big = orgs[0]!;
  const { key, keyId } = await console_.createKey({
    organizationId: big,
    environment: Environment.DEVELOPMENT,
    type: KeyType.SECRET,
  });
  for (const bucket of ["per_minute", "hourly", "daily", "in_flight"])
    await console_.setKeyLimits({ keyId, bucket, limit: 100_000_000 });
  await gates.createGate({
    organizationId: big,
    environment: Environment.DEVELOPMENT,
    key: "login",
    type: GateType.HUMAN,
    status: "active",
  });

  const account = createInternalClient(AccountService, mesh.urls.account!);
  const signing = createInternalClient(SigningService, mesh.urls.signing!, { timeoutMs: 30_000 });

  // A few links of the big partner made the real way, so the reference filter has references to find.
  const references = Array.from({ length: 20 }, (_, i) => `known-user-${i}`);
  for (const reference of references) {
    const { svcUserId } = await account.resolveSignedInHuman({ issuer: "https://bench.example", subject: reference });
    await account.secureAccount({
      organizationId: big,
      environment: Environment.DEVELOPMENT,
      partnerUserRef: reference,
      svcUserId,
      at: timestampFromDate(new Date(Date.now() - 3 * 86_400_000)),
    });
  }
  await db.query(
    `insert into webhook_dispatch.endpoints (id, organization_id, url, status, secret_version, secret_sealed, created_at)
       select 'ep_' || o.i, o.id, 'https://partner' || o.i || '.example/hook', 'enabled', 1, '\\x00', now()
         from unnest($1::text[]) with ordinality as o(id, i)`,
    [orgs],
  );

  /** Partner of row i: the big one for 55 of every 100 rows, spread so that no range of i is one partner's. */
  const partnerOf = (i: string) =>
    `(case when (${i} * 37) % 100 < ${bigShare} then 1 else 2 + (${i} * 7919) % ${partners - 1} end)`;

  /** Adds rows numbered from..to (inclusive) to every growing table. */
  async function fill(from: number, to: number) {
    for (let start = from; start <= to; start += fillChunk) {
      const end = Math.min(to, start + fillChunk - 1);
      const range = [start, end];
      await db.query(
        `insert into gate.requests (id, organization_id, environment, gate_key, gate_type, session_id, status, flow_secret_hash,
                                    mode, sdk_type, notarize_offered, created_at, expires_at, ended_at, ended_by, trusted, first_time, event_sent)
           select 'req_' || lpad(to_hex(i), 32, '0'), ($3::uuid[])[${partnerOf("i")}], 'development', 'login', 'human',
                  md5('s' || i)::uuid, st, '\\x00', 'private', case when st = 'pass' then 'presence' else 'signal' end, false,
                  created, created + interval '5 minutes',
                  case when st = 'completed' then created + interval '40 seconds' when st = 'expired' then created + interval '5 minutes'
                       when st = 'pass' then created else created + interval '1 minute' end,
                  case st when 'completed' then 'confirmed' when 'expired' then 'window' when 'failed' then 'declined' when 'pass' then 'presence' else 'revoked' end,
                  case when st in ('completed', 'pass') then false end, case when st in ('completed', 'pass') then false end, true
             from (select i, now() - (i % 2505600) * interval '1 second' - interval '10 minutes' as created,
                          case when i % 100 < 60 then 'completed' when i % 100 < 85 then 'expired' when i % 100 < 93 then 'failed'
                               when i % 100 < 98 then 'pass' else 'expired' end as st
                     from generate_series($1::bigint, $2::bigint) as i) as r`,
        [...range, orgs],
      );
      await db.query(
        `insert into gate.sessions (id, token_hash, organization_id, environment, credential_id, credential_kind, created_at, expires_at,
                                    consumed_at, request_id)
           select md5('s' || i)::uuid, sha256(('t' || i)::bytea), ($3::uuid[])[${partnerOf("i")}], 'development', 'key', 'secret_key',
                  created, created + interval '5 minutes', created + interval '2 seconds', 'req_' || lpad(to_hex(i), 32, '0')
             from (select i, now() - (i % 82800) * interval '1 second' - interval '10 minutes' as created
                     from generate_series($1::bigint, $2::bigint) as i) as r`,
        [...range, orgs],
      );
      // The maintained counts are rebuilt after the fill (as migration 0009 backfills them): a bulk insert
      // would otherwise run the per-link trigger a million times, which no real partner does at once.
      await db.query("alter table account.account_link disable trigger account_link_counted");
      await db.query(
        `insert into account.human (id, created_at)
           select md5('h' || i)::uuid, now() - interval '800 days' from generate_series($1::bigint, $2::bigint) as i where i % 15 <> 0`,
        range,
      );
      await db.query(
        `insert into account.account_link (id, organization_id, environment, ref_hash, svc_user_id, handle, secured_at, status,
                                           unlinked_at, unlinked_by, unlink_reason)
           select md5('l' || i)::uuid, ($3::text[])[${partnerOf("i")}], 'development', sha256(('r' || i)::bytea),
                  case when i % 15 <> 0 then md5('h' || i)::uuid end,
                  'OP_' || substr(translate(encode(sha256(('k' || i)::bytea), 'base64'), '+/=', 'xyz'), 1, 12),
                  now() - (i % 63072000) * interval '1 second' - interval '1 day', st,
                  case when st = 'unlinked' then now() - interval '1 hour' end,
                  case when st = 'unlinked' then (case when i % 3 = 0 then 'human' else 'platform' end) end,
                  case when st = 'unlinked' then (case i % 3 when 0 then 'human' when 1 then 'platform' else 'credential_changed' end) end
             from (select i, case when i % 5 = 0 then 'unlinked' else 'active' end as st
                     from generate_series($1::bigint, $2::bigint) as i) as r`,
        [...range, orgs],
      );
      await db.query(
        `with m as (
           insert into webhook_dispatch.messages (id, organization_id, dedup_key, type, environment, body, received_at)
             select 'msg_' || i, ($3::text[])[${partnerOf("i")}], 'gate.human_verified:req_' || i, 'gate.human_verified', 'development',
                    '\\x7b7d', now() - (i % 7689600) * interval '1 second' - interval '1 minute'
               from generate_series($1::bigint, $2::bigint) as i
             returning id, organization_id, received_at)
         insert into webhook_dispatch.deliveries (message_id, endpoint_id, status, attempts, created_at, delivered_at, last_attempt_at)
           select m.id, e.id, 'delivered', 1, m.received_at, m.received_at, m.received_at
             from m join webhook_dispatch.endpoints e on e.organization_id = m.organization_id`,
        [...range, orgs],
      );
      await db.query(
        `insert into gateway.token_checks (payload_hash, checked_at, expires_at)
           select sha256(('p' || i)::bytea), now(), now() + interval '10 minutes' + (i % 7200) * interval '1 second'
             from generate_series($1::bigint, $2::bigint) as i`,
        range,
      );
      await db.query(
        `insert into gateway.rate_counters (subject, bucket, window_start, count, expires_at)
           select 'secret_key:' || md5('c' || i), 'daily', 0, 1, now() + interval '1 hour' + (i % 82800) * interval '1 second'
             from generate_series($1::bigint, $2::bigint) as i`,
        range,
      );
    }
    await db.query("alter table account.account_link enable trigger account_link_counted");
    await db.query("delete from account.account_link_count");
    await db.query(
      `insert into account.account_link_count (organization_id, environment, status, slot, n)
         select organization_id, environment, status, 0, count(*) from account.account_link group by 1, 2, 3`,
    );
    // What autovacuum does on a table that grew: fresh statistics and a visibility map.
    for (const table of [
      "gate.requests",
      "gate.sessions",
      "account.human",
      "account.account_link",
      "account.account_link_count",
      "webhook_dispatch.messages",
      "webhook_dispatch.deliveries",
      "gateway.token_checks",
      "gateway.rate_counters",
    ])
      await db.query(`vacuum analyze ${table}`);
    // The fill writes gigabytes in two minutes, which no partner does; without this, the checkpoint it
    // sets off writes them back while the lookups are timed, and they measure the fill.
    await db.query("checkpoint");
  }

  const gateway = new URL("/v1", mesh.gatewayUrl);
  const call = async (method: "GET" | "POST", path: string, input: Record<string, unknown>, credential?: string) => {
    const url = new URL(`${gateway.pathname}${path}`, mesh.gatewayUrl);
    if (method === "GET") for (const [k, v] of Object.entries(input)) url.searchParams.set(k, String(v));
    const response = await fetch(url, {
      method,
      headers: {
        ...(credential && { authorization: `Bearer ${credential}` }),
        ...(method === "POST" && { "content-type": "application/json" }),
      },
      ...(method === "POST" && { body: JSON.stringify(input) }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: a JSON reply, checked by each lookup below.
    const body: any = await response.json();
    if (response.status !== 200 || body.data?.error)
      throw new Error(`${path}: ${response.status} ${JSON.stringify(body)}`);
    return body.data;
  };

  type Timed = { p50: number; p99: number; cpuUs: number };
  const percentile = (values: number[], p: number) => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
  };
  /**
   * p50 and p99 in ms of `work`, one at a time, after a few warm-up calls. A work that answers a number
   * measured only part of itself (create-link: not the session it needs first), and that is the sample.
   */
  async function timed(work: (i: number) => Promise<number | undefined>) {
    for (let i = 0; i < 10; i++) await work(samples + i);
    const times: number[] = [];
    const cpuBefore = threadCpu(mesh.serverProcesses());
    for (let i = 0; i < samples; i++) {
      const started = performance.now();
      const part = await work(i);
      times.push(part ?? performance.now() - started);
    }
    const cpuUs = cpuSince(cpuBefore, mesh.serverProcesses()) / samples;
    return { p50: percentile(times, 50), p99: percentile(times, 99), cpuUs };
  }

  /** The ids of rows the big partner owns among the first `size`. */
  const bigRows = async (size: number) =>
    (
      await db.query(
        `select i from generate_series(1, $1::bigint) as i where (i * 37) % 100 < ${bigShare} and i % 100 < 60 order by random() limit $2`,
        [size, samples + 20],
      )
    ).rows.map((row) => Number(row.i));

  async function lookups(size: number) {
    const requestIds = (await bigRows(size)).map((i) => `req_${i.toString(16).padStart(32, "0")}`);
    const list = (query: Record<string, unknown>) => call("GET", "/secured-accounts/list", query, key);
    const bigLinks = (await list({ limit: 1 })).data.total as number;
    const largeOffset = 5000;
    if (bigLinks <= largeOffset) throw new Error(`the big partner has only ${bigLinks} links`);
    const cursor = (await list({ limit: 1, offset: largeOffset })).data.next_cursor as string;
    const result: Record<string, Timed> = {};
    result.status = await timed(async (i) => {
      const record = await call("GET", "/verification/status", { request_id: requestIds[i % requestIds.length] }, key);
      if (record.found !== true) throw new Error(`status: ${JSON.stringify(record)}`);
      return undefined;
    });
    const page = (query: Record<string, unknown>) => async () => {
      await list(query);
      return undefined;
    };
    result["list default"] = await timed(page({}));
    result[`list offset ${largeOffset}`] = await timed(page({ offset: largeOffset }));
    result["list status=unlinked"] = await timed(page({ status: "unlinked" }));
    result["list by reference"] = await timed(async (i) => {
      const found = await list({ platform_user_ref: references[i % references.length]! });
      if (found.data.rows.length !== 1) throw new Error("reference not found");
      return undefined;
    });
    result["list cursor (deep)"] = await timed(page({ cursor }));
    result["create-link"] = await timed(async () => {
      const grant = (await call("POST", "/sdk/create-session", {}, key)).data.anchor_grant_token as string;
      const started = performance.now();
      await call("POST", "/sdk/create-verification-link", { gate: "login" }, grant);
      return performance.now() - started;
    });
    // Signed just before they are checked: a token lives 120 s, and the lookups above take minutes on a
    // loaded machine.
    const tokens = await Promise.all(
      Array.from({ length: samples + 10 }, (_, i) =>
        signing
          .signAttestation({
            requestId: `req_${(size + i).toString(16).padStart(32, "f")}`,
            verified: true,
            organizationId: big,
            verifiedAt: timestampFromDate(new Date()),
          })
          .then((r) => r.token),
      ),
    );
    let next = 0;
    result["verify-token"] = await timed(async () => {
      const answer = await call("POST", "/sdk/verify-token", { token: tokens[next++] });
      if (answer.data.valid !== true) throw new Error(`verify-token: ${JSON.stringify(answer)}`);
      return undefined;
    });
    return result;
  }

  /**
   * Times one periodic scan over exactly `due` due rows: statements of at most 1000 rows until one is
   * short. The due rows are seeded in the same transaction, so no service's own timer takes them first.
   */
  async function scan(seed: string, statement: string, values: unknown[]) {
    const client = await db.connect();
    try {
      const drain = async () => {
        let changed = 0;
        for (;;) {
          const { rowCount } = await client.query(statement, values);
          changed += rowCount ?? 0;
          if ((rowCount ?? 0) < 1000) return changed;
        }
      };
      await client.query("begin");
      // Rows the mesh made due by itself (the benchmark's own rate-limit windows that ended) go first.
      await drain();
      await client.query(seed);
      const postgres = postgresProcesses(mesh.databaseUrl);
      const cpuBefore = threadCpu(postgres);
      const started = performance.now();
      const changed = await drain();
      const ms = performance.now() - started;
      const cpuUs = cpuSince(cpuBefore, postgres);
      await client.query("commit");
      if (changed !== due) throw new Error(`scan changed ${changed} rows, not ${due}: ${statement}`);
      return { ms, cpuUs };
    } finally {
      client.release();
    }
  }
  const numbered = (sql: string) => {
    let n = 0;
    return sql.replaceAll("?", () => `$${++n}`);
  };
  const retention = (table: string, column: string) => numbered(dueBatchStatement({ table, column }));
  const day = 86_400_000;

  /** Each scan's median round over `scanRounds` rounds, each with its own fresh due rows. */
  async function scans(size: number) {
    const rounds: Record<string, { ms: number; cpuUs: number }>[] = [];
    for (let round = 0; round < scanRounds; round++) rounds.push(await scanRound(`${size}_${round}`));
    return Object.fromEntries(
      Object.keys(rounds[0]!).map((name) => {
        const byTime = rounds.map((r) => r[name]!).sort((a, b) => a.ms - b.ms);
        return [name, byTime[Math.floor(byTime.length / 2)]!];
      }),
    );
  }

  async function scanRound(tag: string) {
    const now = new Date();
    const series = `generate_series(1, ${due}) as i`;
    const result: Record<string, { ms: number; cpuUs: number }> = {};
    result["gate expiry sweep"] = await scan(
      `insert into gate.requests (id, organization_id, environment, gate_key, gate_type, session_id, status, flow_secret_hash,
                                  mode, sdk_type, notarize_offered, created_at, expires_at)
         select 'req_due${tag}_' || i, '${big}', 'development', 'login', 'human', gen_random_uuid(), 'pending', '\\x00', 'private', 'signal',
                false, now() - interval '6 minutes', now() - interval '1 minute' from ${series}`,
      `with due as (select id from gate.requests where status = 'pending' and expires_at <= $1 and (confirming_until is null or confirming_until <= $1)
                    order by expires_at limit 1000 for update skip locked)
       update gate.requests r set status = 'expired', ended_at = r.expires_at, ended_by = 'window', event_sent = (r.opened_at is not null),
              partner_ref_sealed = null from due where r.id = due.id`,
      [now],
    );
    result["gate session retention"] = await scan(
      // Consumed, as the filled ones and nearly every real session: a smaller row would fit the space a
      // page has left after the fill, one row a page, which no table that grew by sessions has.
      `insert into gate.sessions (id, token_hash, organization_id, environment, credential_id, credential_kind, created_at, expires_at,
                                  consumed_at, request_id)
         select gen_random_uuid(), sha256(('due${tag}' || i)::bytea), '${big}', 'development', 'key', 'secret_key',
                now() - interval '2 days 5 minutes', now() - interval '2 days', now() - interval '2 days 5 minutes' + interval '2 seconds',
                'req_' || md5('due${tag}' || i) from ${series}`,
      retention("gate.sessions", "expires_at"),
      [new Date(now.getTime() - day), 1000],
    );
    result["gate request retention"] = await scan(
      `insert into gate.requests (id, organization_id, environment, gate_key, gate_type, session_id, status, flow_secret_hash,
                                  mode, sdk_type, notarize_offered, created_at, expires_at, ended_at, ended_by)
         select 'req_old${tag}_' || i, '${big}', 'development', 'login', 'human', gen_random_uuid(), 'completed', '\\x00', 'private', 'signal',
                false, now() - interval '31 days', now() - interval '31 days', now() - interval '31 days', 'confirmed' from ${series}`,
      retention("gate.requests", "ended_at"),
      [new Date(now.getTime() - 30 * day), 1000],
    );
    result["webhook message retention"] = await scan(
      `with m as (
         insert into webhook_dispatch.messages (id, organization_id, dedup_key, type, body, received_at)
           select 'msg_old${tag}_' || i, '${big}', 'old${tag}:' || i, 'gate.human_verified', '\\x7b7d', now() - interval '91 days' from ${series}
           returning id, received_at)
       insert into webhook_dispatch.deliveries (message_id, endpoint_id, status, attempts, created_at, delivered_at)
         select m.id, 'ep_1', 'delivered', 1, m.received_at, m.received_at from m`,
      retention("webhook_dispatch.messages", "received_at"),
      [new Date(now.getTime() - 90 * day), 1000],
    );
    result["token-check ledger sweep"] = await scan(
      `insert into gateway.token_checks (payload_hash, checked_at, expires_at)
         select sha256(('due${tag}' || i)::bytea), now() - interval '20 minutes', now() - interval '15 minutes' from ${series}`,
      `delete from gateway.token_checks where expires_at < $1 and ctid = any(array(
         select ctid from gateway.token_checks where expires_at < $1 limit $2 for update skip locked))`,
      [new Date(now.getTime() - 10 * 60_000), 1000],
    );
    result["rate-limit sweep"] = await scan(
      `insert into gateway.rate_counters (subject, bucket, window_start, count, expires_at)
         select 'due${tag}:' || i, 'per_minute', 0, 1, now() - interval '1 minute' from ${series}`,
      `delete from gateway.rate_counters where expires_at < $1 and ctid = any(array(
         select ctid from gateway.rate_counters where expires_at < $1 limit $2 for update skip locked))`,
      [now, 1000],
    );
    return result;
  }

  const measured: {
    size: number;
    lookups: Record<string, Timed>;
    scans: Record<string, { ms: number; cpuUs: number }>;
  }[] = [];
  let filled = 0;
  for (const size of sizes) {
    const fillStarted = performance.now();
    await fill(filled + 1, size);
    filled = size;
    process.stdout.write(
      `filled to ${size} rows a table in ${((performance.now() - fillStarted) / 1000).toFixed(0)} s; load ${loadavg()[0]!.toFixed(1)}\n`,
    );
    measured.push({ size, lookups: await lookups(size), scans: await scans(size) });
  }

  const [small, large] = measured as [(typeof measured)[0], (typeof measured)[0]];
  const label = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1000}k`);
  const [a0, b0] = [label(small.size), label(large.size)];
  const rows: string[] = [];
  const ratios: Record<string, number> = {};
  const cpu = (us: number) => Math.round(us).toLocaleString("en").padStart(11);
  rows.push(
    `${"lookup (ms, µs of CPU)".padEnd(28)} ${`p50 ${a0}`.padStart(9)} ${`p99 ${a0}`.padStart(9)} ${`p50 ${b0}`.padStart(9)} ${`p99 ${b0}`.padStart(9)} ${"p50 ratio".padStart(10)} ${`cpu ${a0}`.padStart(11)} ${`cpu ${b0}`.padStart(11)}`,
  );
  const lookupCpu: Record<string, [number, number]> = {};
  for (const name of Object.keys(small.lookups)) {
    const a = small.lookups[name]!;
    const b = large.lookups[name]!;
    ratios[name] = b.p50 / a.p50;
    lookupCpu[name] = [Math.round(a.cpuUs), Math.round(b.cpuUs)];
    rows.push(
      `${name.padEnd(28)} ${a.p50.toFixed(2).padStart(9)} ${a.p99.toFixed(2).padStart(9)} ${b.p50.toFixed(2).padStart(9)} ${b.p99.toFixed(2).padStart(9)} ${ratios[name]!.toFixed(2).padStart(10)} ${cpu(a.cpuUs)} ${cpu(b.cpuUs)}`,
    );
  }
  rows.push(
    `${`scan of ${due} due rows (ms)`.padEnd(28)} ${a0.padStart(9)} ${"".padStart(9)} ${b0.padStart(9)} ${"".padStart(9)} ${"ratio".padStart(10)} ${`pg cpu ${a0}`.padStart(11)} ${`pg cpu ${b0}`.padStart(11)}`,
  );
  const scanRatios: Record<string, number> = {};
  const scanCpu: Record<string, [number, number]> = {};
  for (const name of Object.keys(small.scans)) {
    const a = small.scans[name]!;
    const b = large.scans[name]!;
    scanRatios[name] = b.ms / a.ms;
    scanCpu[name] = [Math.round(a.cpuUs), Math.round(b.cpuUs)];
    rows.push(
      `${name.padEnd(28)} ${a.ms.toFixed(2).padStart(9)} ${"".padStart(9)} ${b.ms.toFixed(2).padStart(9)} ${"".padStart(9)} ${scanRatios[name]!.toFixed(2).padStart(10)} ${cpu(a.cpuUs)} ${cpu(b.cpuUs)}`,
    );
  }
  process.stdout.write(
    `${rows.join("\n")}\nload average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}\n`,
  );
  console.log(
    JSON.stringify({
      name: "growth",
      worst_lookup_ratio: Math.max(...Object.values(ratios)),
      worst_scan_ratio: Math.max(...Object.values(scanRatios)),
      lookup_ratios: ratios,
      scan_ratios: scanRatios,
      lookup_cpu_us: lookupCpu,
      scan_postgres_cpu_us: scanCpu,
      load_average: loadavg()[0],
    }),
  );
} finally {
  await db.end();
  await mesh.stop();
}

import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { consoleTransport } from "@svc/local-mesh/console-client";
import { fileClock } from "@svc/platform";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { ConsoleService, KeyType } from "@svc/proto/console/v1/console_pb.js";
import { startSigning } from "@svc/signing";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { writeClockFile } from "../harness/clock-file.ts";
import { type GatewayReplica, startGatewayReplica } from "../harness/gateway-replica.ts";
import { createTestDatabase, type TestDatabase } from "../harness/index.ts";

/**
 * Two gateway processes on one database share every limit exactly: requests sent to both at once
 * pass exactly `limit` times in all, and a limit raised through one replica's console holds on the
 * other from its next request.
 */

const anonymousLimit = 7;
/** The operator credential both replicas are configured with. */
const consoleToken = randomBytes(32).toString("base64url");

let database: TestDatabase;
let signing: Awaited<ReturnType<typeof startSigning>>;
let dir: string;
const replicas: GatewayReplica[] = [];

beforeAll(async () => {
  database = await createTestDatabase("edge_replicas");
  dir = mkdtempSync(join(tmpdir(), "edge-replicas-"));
  const clockFile = join(dir, "clock");
  // 10:00:03: the minute windows stay open for the whole file.
  writeClockFile(clockFile, "2026-12-01T10:00:03.000Z");
  signing = await startSigning({
    env: {
      SVC_DATABASE_URL: database.url,
      SIGNING_PORT: "0",
      SIGNING_KEK: randomBytes(32).toString("base64"),
      SVC_LOG_LEVEL: "warn",
    },
    clock: fileClock(clockFile),
  });
  const env = {
    SVC_DATABASE_URL: database.url,
    SVC_CLOCK_FILE: clockFile,
    SVC_LOG_LEVEL: "warn",
    GATEWAY_SIGNING_URL: signing.url,
    GATEWAY_KEY_PEPPER: randomBytes(32).toString("base64"),
    GATEWAY_RATE_LIMIT_ANONYMOUS_PER_MINUTE: String(anonymousLimit),
  };
  // Started together: the migrations of both run under one advisory lock.
  replicas.push(
    ...(await Promise.all([startGatewayReplica(env, consoleToken), startGatewayReplica(env, consoleToken)])),
  );
});

afterAll(async () => {
  await Promise.all(replicas.map((replica) => replica.stop()));
  await signing?.stop();
  await database?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A reply of a burst: these tests read its `_rateLimit` report and match the rest as a whole. */
interface BurstReply {
  status: number;
  body: { _rateLimit: { primary: { remaining: number } } };
}

/** Sends `count` requests at once, alternating between the replicas. */
function burst(count: number, request: (replica: GatewayReplica) => Promise<Response>): Promise<BurstReply[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const response = await request(replicas[i % replicas.length]!);
      return { status: response.status, body: (await response.json()) as BurstReply["body"] };
    }),
  );
}

describe("two gateway processes on one database", () => {
  test("a key's per_minute limit holds exactly across both, and a raise through one console holds on the other", async () => {
    const console_ = createClient(ConsoleService, consoleTransport(replicas[0]!.consoleUrl, consoleToken, "1.1"));
    const { organizationId } = await console_.createOrganization({ name: "Replicas" });
    const { key, keyId } = await console_.createKey({
      organizationId,
      environment: Environment.PRODUCTION,
      type: KeyType.SECRET,
    });
    await console_.setKeyLimits({ keyId, bucket: "per_minute", limit: 9 });
    const send = (replica: GatewayReplica) =>
      replica.fetch(`${replica.url}/v1/sdk/create-session`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: "{}",
      });

    const answers = await burst(30, send);
    const passed = answers.filter((a) => a.status !== 403);
    expect(passed).toHaveLength(9);
    expect(passed.map((a) => a.body._rateLimit.primary.remaining).sort((x, y) => x - y)).toEqual([
      0, 1, 2, 3, 4, 5, 6, 7, 8,
    ]);
    for (const refused of answers.filter((a) => a.status === 403)) {
      expect(refused.body).toMatchObject({
        errors: [{ code: "RATE_LIMITED" }],
        _rateLimit: { scope: "bs_prod", primary: { bucket: "per_minute", limit: 9, remaining: 0 } },
      });
    }

    const other = createClient(ConsoleService, consoleTransport(replicas[1]!.consoleUrl, consoleToken, "1.1"));
    await other.setKeyLimits({ keyId, bucket: "per_minute", limit: 11 });
    const more = await burst(6, send);
    expect(more.filter((a) => a.status !== 403)).toHaveLength(2);
  });

  test("operations without a credential are limited per client IP across both", async () => {
    const answers = await burst(24, (replica) =>
      replica.fetch(`${replica.url}/v1/sdk/verify-token`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ token: "x.y.z" }),
      }),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(anonymousLimit);
    expect(answers.filter((a) => a.status === 403)).toHaveLength(24 - anonymousLimit);
    expect(answers.find((a) => a.status === 403)!.body._rateLimit).toEqual({
      scope: "ip",
      primary: { bucket: "per_minute", limit: anonymousLimit, remaining: 0, resetIn: 57 },
      buckets: { per_minute: { limit: anonymousLimit, remaining: 0, resetIn: 57 } },
    });
  });
});

import { ManualClock } from "@svc/platform";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { KeyType } from "@svc/proto/console/v1/console_pb.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { runSvcctl } from "../../test/harness/svcctl.ts";
import { routes } from "../src/operations/index.ts";
import { startTestMesh, type TestMesh } from "./support.ts";

/** `svcctl key limits` as an operator runs it, against the console, and the limit as a partner then meets it. */

const clock = new ManualClock("2026-12-01T10:00:03Z");
let mesh: TestMesh;

beforeAll(async () => {
  mesh = await startTestMesh("edge_key_limits", clock);
});
afterAll(() => mesh?.stop());

const svcctl = (args: string[]) =>
  runSvcctl({ consoleUrl: mesh.gateway.consoleUrl, consoleToken: mesh.consoleToken }, args);

describe("svcctl key limits", () => {
  test("raises one bucket of one key, prints every bucket's limit, and the next request meets it", async () => {
    const { organizationId } = await mesh.console.createOrganization({ name: "Limits" });
    const { key, keyId } = await mesh.console.createKey({
      organizationId,
      environment: Environment.DEVELOPMENT,
      type: KeyType.SECRET,
    });
    const run = await svcctl(["key", "limits", "--key-id", keyId, "--bucket", "burst", "--limit", "45"]);
    expect([run.code, run.stderr]).toEqual([0, ""]);
    expect(JSON.parse(run.stdout)).toEqual({
      key_id: keyId,
      limits: [
        { bucket: "per_minute", limit: 45, window_seconds: 10, raised: true },
        { bucket: "hourly", limit: 300, window_seconds: 3600, raised: false },
        { bucket: "daily", limit: 2000, window_seconds: 86400, raised: false },
        { bucket: "in_flight", limit: 10, raised: false },
      ],
    });
    // Any operation that takes a secret key shows the limit; the gate service is not running here, so
    // the answer itself is a refusal, counted all the same.
    const route = routes.find((r) => r.method === "POST" && r.auth.accepts.includes("secret_key"))!;
    const response = await fetch(`${mesh.gateway.url}/v1${route.path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: "{}",
    });
    expect((await response.json())._rateLimit.buckets.per_minute).toEqual({ limit: 45, remaining: 44, resetIn: 7 });
  });

  test("refuses a bucket the key does not have, and a limit that is not a whole number", async () => {
    const { organizationId } = await mesh.console.createOrganization({ name: "Limits" });
    const { keyId } = await mesh.console.createKey({
      organizationId,
      environment: Environment.PRODUCTION,
      type: KeyType.SITE,
      allowedOrigins: ["https://shop.example"],
    });
    const wrongBucket = await svcctl(["key", "limits", "--key-id", keyId, "--bucket", "hourly", "--limit", "5"]);
    expect(wrongBucket.code).toBe(1);
    expect(wrongBucket.stderr).toContain("a production site key has the buckets per_minute, daily, per_ip, not hourly");
    const notANumber = await svcctl(["key", "limits", "--key-id", keyId, "--bucket", "per_ip", "--limit", "1.5"]);
    expect(notANumber.code).toBe(2);
    expect(notANumber.stderr).toContain('--limit must be a whole number up to 4294967295, not "1.5"');
  });
});

import { ManualClock } from "@svc/platform";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { KeyType } from "@svc/proto/console/v1/console_pb.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { issuer, startTestMesh, type TestMesh } from "./support.ts";

/** The `upgrade_url` of a development key's refusal leads somewhere: by default a page the gateway serves. */
const clock = new ManualClock("2026-12-01T10:00:03Z");
let mesh: TestMesh;

beforeAll(async () => {
  mesh = await startTestMesh("upgrade_page", clock);
});
afterAll(() => mesh?.stop());

describe("the upgrade page", () => {
  test("a development key's refusal links to {api_origin}/upgrade, which answers with how to raise limits", async () => {
    const { organizationId } = await mesh.console.createOrganization({ name: "Upgrade" });
    const { key, keyId } = await mesh.console.createKey({
      organizationId,
      environment: Environment.DEVELOPMENT,
      type: KeyType.SECRET,
    });
    await mesh.console.setKeyLimits({ keyId, bucket: "per_minute", limit: 1 });
    const call = () =>
      fetch(`${mesh.gateway.url}/v1/sdk/create-session`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: "{}",
      });
    await (await call()).body?.cancel();
    const refused = await call();
    expect(refused.status).toBe(403);
    const { upgrade_url } = (await refused.json()).data.error;
    expect(upgrade_url).toBe(`${issuer}/upgrade`);

    const page = await fetch(`${mesh.gateway.url}${new URL(upgrade_url).pathname}`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    const text = await page.text();
    expect(text).toContain("npx svcctl key limits --key-id KEY_ID --bucket BUCKET --limit N");
    expect(text).toContain('"Raising a key\'s rate limits"');
  });

  test("takes only GET and HEAD", async () => {
    const posted = await fetch(`${mesh.gateway.url}/upgrade`, { method: "POST" });
    expect(posted.status).toBe(405);
    expect(posted.headers.get("allow")).toBe("GET, HEAD");
    await posted.body?.cancel();
    expect((await fetch(`${mesh.gateway.url}/upgrade`, { method: "HEAD" })).status).toBe(200);
  });
});

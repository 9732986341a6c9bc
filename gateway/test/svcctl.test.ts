import { ManualClock } from "@svc/platform";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { runSvcctl, type SvcctlRun } from "../../test/harness/svcctl.ts";
import { closedPort, startTestMesh, type TestMesh } from "./support.ts";

const clock = new ManualClock("2026-10-20T12:00:00Z");
let mesh: TestMesh;

beforeAll(async () => {
  mesh = await startTestMesh("svcctl", clock);
});
afterAll(() => mesh?.stop());

/** svcctl as an operator runs it (the installed command), talking to this mesh's console or to `consoleUrl`. */
const svcctl = (args: string[], consoleUrl?: string): Promise<SvcctlRun> =>
  runSvcctl(consoleUrl ?? { consoleUrl: mesh.gateway.consoleUrl, consoleToken: mesh.consoleToken }, args);

const json = (run: SvcctlRun) => {
  expect([run.code, run.stderr]).toEqual([0, ""]);
  return JSON.parse(run.stdout);
};

describe("svcctl", () => {
  test("creates an organization and keys, lists and revokes them", async () => {
    const { organization_id } = json(await svcctl(["org", "create", "--name", "Acme Shop"]));
    expect(organization_id).toMatch(/^[0-9a-f-]{36}$/);

    const secret = json(
      await svcctl([
        "key",
        "create",
        "--org",
        organization_id,
        "--env",
        "production",
        "--type",
        "secret",
        "--gate",
        "checkout",
        "--gate",
        "signup",
      ]),
    );
    expect(secret.key).toMatch(/^svc_production_[A-Za-z0-9]{32}$/);
    expect(secret.key_id).toMatch(/^[0-9a-f-]{36}$/);

    const site = json(
      await svcctl([
        "key",
        "create",
        "--org",
        organization_id,
        "--env",
        "development",
        "--type",
        "site",
        "--origin",
        "https://shop.example",
        "--origin",
        "http://localhost:3000",
      ]),
    );
    expect(site.key).toMatch(/^pk_test_/);

    const listed = json(await svcctl(["key", "list", "--org", organization_id]));
    const byId = Object.fromEntries(listed.keys.map((k: { key_id: string }) => [k.key_id, k]));
    expect(byId[secret.key_id]).toEqual({
      key_id: secret.key_id,
      type: "secret",
      environment: "production",
      display_prefix: secret.key.slice(0, 19),
      allowed_origins: [],
      allowed_gates: ["checkout", "signup"],
      revoked: false,
      created_at: clock.now().toISOString(),
    });
    expect(byId[site.key_id]).toMatchObject({
      type: "site",
      environment: "development",
      allowed_origins: ["https://shop.example", "http://localhost:3000"],
    });

    const revoked = json(await svcctl(["key", "revoke", "--key-id", site.key_id]));
    expect(revoked).toEqual({ key_id: site.key_id, revoked_at: clock.now().toISOString() });
    const after = json(await svcctl(["key", "list", "--org", organization_id]));
    expect(after.keys.find((k: { key_id: string }) => k.key_id === site.key_id).revoked).toBe(true);
  });

  test("rotates the signing keys", async () => {
    const rotated = json(await svcctl(["signing", "rotate"]));
    expect(rotated.kid).toEqual(expect.any(String));
    expect(Date.parse(rotated.signs_from)).toBeGreaterThan(clock.now().getTime());
    expect(rotated.keys.find((k: { kid: string }) => k.kid === rotated.kid).state).toBe("pending");
  });

  test.each([
    [["--help"]],
    [["key", "--help"]],
    [["key", "create", "--help"]],
    [["org", "create", "-h"]],
    [["signing", "rotate", "--help"]],
  ])("%j prints usage and exits 0", async (args) => {
    const run = await svcctl(args);
    expect([run.code, run.stderr]).toEqual([0, ""]);
    expect(run.stdout).toMatch(/^Usage: svcctl/);
  });

  test.each([
    [[], "no command given"],
    [["orgs"], 'unknown command group "orgs"'],
    [["key"], "key: no command given"],
    [["key", "delete"], 'key: unknown command "delete"'],
    [["org", "create"], "--name is required"],
    [
      ["key", "create", "--org", "x", "--env", "staging", "--type", "secret"],
      "--env must be one of development, production",
    ],
    [["org", "create", "--name", "x", "--colour", "red"], "Unknown option '--colour'"],
    [
      ["key", "create", "--org", "x", "--env", "development", "--type", "secret", "--expires-at", "soon"],
      "--expires-at is not an ISO 8601 instant",
    ],
  ])("usage error %j exits 2", async (args, message) => {
    const run = await svcctl(args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain(message);
  });

  test("a refusal of the console exits 1 with its message on stderr", async () => {
    const { organization_id } = json(await svcctl(["org", "create", "--name", "Strict"]));
    const run = await svcctl(["key", "create", "--org", organization_id, "--env", "development", "--type", "site"]);
    expect([run.code, run.stdout]).toEqual([1, ""]);
    expect(run.stderr).toBe("svcctl: InvalidArgument: a site key needs at least one allowed origin\n");
  });

  test("an unreachable console exits 1 and says where it looked", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const run = await svcctl(["org", "create", "--name", "x"], url);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`cannot reach the console at ${url}`);
  });
});

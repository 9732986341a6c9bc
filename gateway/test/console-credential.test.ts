import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ManualClock } from "@svc/platform";
import { AccountConsoleService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { ConsoleService } from "@svc/proto/console/v1/console_pb.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { consoleTransport } from "../../test/harness/console-transport.ts";
import { runSvcctl } from "../../test/harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "./support.ts";

/**
 * The console port answers operators only: every call but the probes needs `Authorization: Bearer` with
 * the configured operator credential, and is refused as Connect's `unauthenticated` before it reaches a
 * handler or a service the console forwards to.
 */

const clock = new ManualClock("2026-12-01T10:00:00Z");
let mesh: TestMesh;

beforeAll(async () => {
  mesh = await startTestMesh("console_credential", clock);
});
afterAll(() => mesh?.stop());

const refusal = async (call: Promise<unknown>) => {
  const error = await call.then(
    () => undefined,
    (thrown: unknown) => ConnectError.from(thrown),
  );
  return error && { code: error.code, message: error.rawMessage };
};
const unauthenticated = {
  code: Code.Unauthenticated,
  message: expect.stringContaining("the console requires the operator credential"),
};

describe("the console's operator credential", () => {
  const without = () =>
    createClient(ConsoleService, createConnectTransport({ baseUrl: mesh.gateway.consoleUrl, httpVersion: "1.1" }));

  test("a call without it is unauthenticated, and changes nothing", async () => {
    expect(await refusal(without().createOrganization({ name: "Intruder" }))).toEqual(unauthenticated);
    expect(await refusal(without().mintDevSession({ issuer: "http://127.0.0.1:8070", subject: "anyone" }))).toEqual(
      unauthenticated,
    );
  });

  test("a wrong token, of the same length or another, is unauthenticated", async () => {
    const wrong = (token: string) =>
      createClient(ConsoleService, consoleTransport(mesh.gateway.consoleUrl, token, "1.1")).createOrganization({
        name: "Intruder",
      });
    const sameLength = `${mesh.consoleToken.slice(0, -1)}${mesh.consoleToken.endsWith("A") ? "B" : "A"}`;
    expect(await refusal(wrong(sameLength))).toEqual(unauthenticated);
    expect(await refusal(wrong(`${mesh.consoleToken}x`))).toEqual(unauthenticated);
    expect(await refusal(wrong("svc-console-development-operator-token"))).toEqual(unauthenticated);
  });

  test("a forwarded console call without it never reaches its service", async () => {
    // Account does not run in this mesh: a forwarded call would be 503 unavailable, not unauthenticated.
    const accounts = createClient(
      AccountConsoleService,
      createConnectTransport({ baseUrl: mesh.gateway.consoleUrl, httpVersion: "1.1" }),
    );
    expect(
      await refusal(
        accounts.createSandboxHuman({ environment: Environment.DEVELOPMENT, behavior: SandboxBehavior.CONFIRM }),
      ),
    ).toEqual(unauthenticated);
  });

  test("with it, the console answers", async () => {
    const { organizationId } = await mesh.console.createOrganization({ name: "Operators' own" });
    expect(organizationId).toMatch(/^[0-9a-f-]{36}$/);
  });

  test("the probes need none, so the kubelet can ask", async () => {
    expect((await fetch(`${mesh.gateway.consoleUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${mesh.gateway.consoleUrl}/readyz`)).status).toBe(200);
  });

  test("svcctl without it exits 1 saying what is missing", async () => {
    const run = await runSvcctl({ consoleUrl: mesh.gateway.consoleUrl, consoleToken: "" }, [
      "org",
      "create",
      "--name",
      "Intruder",
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^svcctl: Unauthenticated: the console requires the operator credential/);
  });
});

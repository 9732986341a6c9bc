import { randomBytes } from "node:crypto";
import { uuid } from "@svc/platform";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { partnerApi, result } from "./gate-support.ts";

/**
 * `svcctl human session` signs a sandbox human in to the app API through the gateway's console (the
 * account service finds the human's sign-in identity, the development identity provider mints the
 * session); a production gateway refuses.
 */
const start = new Date("2026-11-22T10:00:00Z");

describe("svcctl human session", () => {
  let mesh: TestMesh;

  const svcctl = (args: string[]) => runSvcctl(mesh, args);
  const json = async (args: string[]) => {
    const run = await svcctl(args);
    expect(run.stderr, run.stderr).toBe("");
    expect(run.code).toBe(0);
    return JSON.parse(run.stdout);
  };

  beforeAll(async () => {
    mesh = await startTestMesh("human_session", { only: ["signing", "account"], clockAt: start });
  });
  afterAll(async () => {
    await mesh?.stop();
  });

  it("prints a session the app API takes as that human's", async () => {
    const { svc_user_id } = await json(["human", "create", "--env", "development"]);
    const session = await json(["human", "session", "--human", svc_user_id]);
    expect(session).toEqual({
      session_token: expect.stringMatching(/^eyJ/),
      expires_at: new Date(start.getTime() + 3_600_000).toISOString(),
    });
    const begun = result(await partnerApi(mesh).post("/app/passkeys/begin-registration", {}, session.session_token));
    expect(begun.options.user.name).toBe(svc_user_id);
  });

  it("refuses a human it does not know (exit 1) and prints its help", async () => {
    const unknown = uuid();
    expect(await svcctl(["human", "session", "--human", unknown])).toEqual({
      code: 1,
      stdout: "",
      stderr: `svcctl: NotFound: no human with svc_user_id ${unknown}\n`,
    });
    expect((await svcctl(["human", "session"])).code).toBe(2);
    const help = await svcctl(["human", "session", "--help"]);
    expect([help.code, help.stdout]).toEqual([0, expect.stringContaining("Usage: svcctl human session --human ID")]);
  });

  it("mints nothing without the console's operator credential, or with another one", async () => {
    const { svc_user_id } = await json(["human", "create", "--env", "development"]);
    for (const consoleToken of ["", "svc-console-development-operator-token", `${mesh.consoleToken}x`]) {
      const run = await runSvcctl({ consoleUrl: mesh.consoleUrl, consoleToken }, [
        "human",
        "session",
        "--human",
        svc_user_id,
      ]);
      expect([run.code, run.stdout]).toEqual([1, ""]);
      expect(run.stderr).toMatch(/^svcctl: Unauthenticated: the console requires the operator credential/);
    }
  });

  it("is refused by a production gateway", async () => {
    const { svc_user_id } = await json(["human", "create", "--env", "development"]);
    await mesh.restart("gateway", {
      SVC_DEPLOYMENT: "production",
      GATEWAY_KEY_PEPPER: randomBytes(32).toString("base64"),
      SVC_CLOCK_FILE: "",
      GATEWAY_DEV_IDP_ISSUER: "",
    });
    expect(await svcctl(["human", "session", "--human", svc_user_id])).toEqual({
      code: 1,
      stdout: "",
      stderr:
        "svcctl: FailedPrecondition: the development identity provider does not run in production, nor here: GATEWAY_DEV_IDP_ISSUER is not set\n",
    });
  });
});

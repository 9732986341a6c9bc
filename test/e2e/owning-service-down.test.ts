import { Code, ConnectError } from "@connectrpc/connect";
import { createLogger, type RunningService, serveConnect } from "@svc/platform";
import { AccountService } from "@svc/proto/account/v1/account_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { dataError, newGate, newPartner, partnerApi, result } from "./gate-support.ts";

/**
 * The spec's error rows that only an owning service's failure produces, through the gateway: the 500
 * rows of the gate operations and the status operation's `status: "error"` with gate stopped, and
 * list-secured-accounts' 403 `partner_not_found` when the account service refuses the caller. One
 * mesh: the refusal runs first, then gate is stopped for the rest.
 */
describe("an owning service stopped or refusing, seen through the gateway", () => {
  let mesh: TestMesh;
  let refusingAccount: RunningService;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;
  let unusedGrant: string;
  let pendingRequestId: string;

  beforeAll(async () => {
    // Stands in for the account service at the address the gateway calls: it refuses every listing
    // the way account refuses a call that names no partner (PermissionDenied).
    refusingAccount = await serveConnect({
      name: "refusing-account",
      host: "127.0.0.1",
      port: 0,
      logger: createLogger("refusing-account", {}, "error"),
      routes: (router) =>
        router.service(AccountService, {
          listSecuredAccounts: () => {
            throw new ConnectError("the call names no partner (organization and environment)", Code.PermissionDenied);
          },
        }),
      ready: async () => {},
      onStop: async () => {},
    });
    mesh = await startTestMesh("owning_down", { only: ["signing", "gate"] });
    await mesh.restart("gateway", { GATEWAY_ACCOUNT_URL: refusingAccount.url });
    api = partnerApi(mesh);
    partner = await newPartner(mesh, "Owning service down");
    await newGate(mesh, partner.organizationId, { key: "checkout" });
    unusedGrant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token;
    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token;
    pendingRequestId = result(await api.post("/sdk/create-verification-link", { gate: "checkout" }, grant)).request_id;
  });
  afterAll(async () => {
    await mesh?.stop();
    await refusingAccount?.stop();
  });

  it("list-secured-accounts: the account service's refusal of the caller is 403 partner_not_found", async () => {
    expect(dataError(await api.get("/secured-accounts/list", {}, partner.devSecret))).toEqual({
      statusCode: 403,
      message: "the call names no partner (organization and environment)",
      code: "partner_not_found",
    });
  });

  describe("with gate stopped", () => {
    beforeAll(async () => {
      await mesh.kill("gate");
    });

    it("create-session is data.error 500: the grant could not be created", async () => {
      expect(
        dataError(await api.post("/sdk/create-session", { partner_user_id: "user-1" }, partner.devSecret)),
      ).toEqual({ statusCode: 500, message: "the grant could not be created; retry" });
    });

    it("create-verification-link is data.error 500: the request could not be created", async () => {
      expect(dataError(await api.post("/sdk/create-verification-link", { gate: "checkout" }, unusedGrant))).toEqual({
        statusCode: 500,
        message: "the request could not be created; retry",
      });
    });

    it("revoke-verification is data.error 500: the revoke failed", async () => {
      const reply = await api.post(
        "/sdk/revoke-verification",
        { gate: "checkout", partner_user_id: "user-1" },
        partner.devSecret,
      );
      expect(dataError(reply)).toEqual({ statusCode: 500, message: "the revoke failed; retry" });
    });

    it("logout is data.error 500: the revoke failed", async () => {
      const reply = await api.post("/sdk/logout", { anchor_grant_token: unusedGrant }, partner.devSecret);
      expect(dataError(reply)).toEqual({ statusCode: 500, message: "the revoke failed; retry" });
    });

    it("the status operation answers status error with a message in the normal payload", async () => {
      const reply = await api.get("/verification/status", { request_id: pendingRequestId }, partner.devSecret);
      expect(result(reply, true)).toEqual({
        found: false,
        status: "error",
        message: "the status could not be read; retry",
      });
    });
  });
});

import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchHeadlessChromium } from "../harness/headless-browser.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { newGate, newPartner, partnerApi, result } from "./gate-support.ts";
import { type PartnerEndpoint, startPartnerEndpoint } from "./partner-endpoint.ts";
import { pageWithAuthenticator, phoneViewport, reviewScreen, signInAsNewPerson } from "./web-app-support.ts";

/**
 * The web app's screens over the person's accounts and inbox operations: the passkey list and removal,
 * secured accounts and unlinking, deleting the account, the live inbox.
 */
describe("the web app over the accounts and inbox operations", () => {
  let mesh: TestMesh;
  let browser: Browser;
  let origin: string;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;
  let endpoint: PartnerEndpoint;

  beforeAll(async () => {
    mesh = await startTestMesh("web_app_accounts");
    origin = `http://localhost:${new URL(mesh.gatewayUrl).port}`;
    await mesh.restart("gateway", { GATEWAY_PUBLIC_ORIGIN: origin });
    api = partnerApi(mesh);
    partner = await newPartner(mesh, "Web shop");
    endpoint = await startPartnerEndpoint(mesh, partner.organizationId, ["account.secured", "account.unlinked"]);
    await newGate(mesh, partner.organizationId, { key: "login", notarizeOffer: true });
    browser = await launchHeadlessChromium();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await mesh?.stop();
    endpoint?.close();
  });

  /** A signed-in person with a passkey, on a phone-sized page. */
  async function person() {
    const context = await browser.newContext({ locale: "en-US", viewport: phoneViewport });
    const { page } = await pageWithAuthenticator(context);
    page.setDefaultTimeout(15_000);
    const session = await signInAsNewPerson(page, origin);
    await page.getByRole("link", { name: "Passkeys" }).click();
    await page.getByRole("button", { name: "Create a passkey" }).click();
    await page.getByText("Passkey created.").waitFor();
    const svcUserId = result(await api.get("/app/me", {}, session)).svc_user_id as string;
    return { context, page, svcUserId };
  }

  /** A request of the partner's naming the person; notarized, it secures their account when confirmed. */
  const request = async (svcUserId: string, extra: Record<string, unknown> = {}) => {
    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token;
    return result(
      await api.post("/sdk/create-verification-link", { gate: "login", svc_user_id: svcUserId, ...extra }, grant),
    );
  };

  it("lists the person's passkeys and removes one", async () => {
    const { context, page } = await person();
    const item = page.getByRole("listitem").filter({ hasText: "Passkey created" });
    await item.getByText("Not used yet").waitFor();
    await reviewScreen(page, "passkeys-listed");
    await item.getByRole("button", { name: /^Remove the passkey created / }).click();
    await page.getByText("Passkey removed.").waitFor();
    await page.getByText("You have no passkey yet.").waitFor();
    await context.close();
  });

  it("receives a request in the inbox without reloading, and confirms it", async () => {
    const { context, page, svcUserId } = await person();
    await page.getByRole("link", { name: "Inbox" }).click();
    await page.getByText("New items appear here by themselves.").waitFor();
    const link = await request(svcUserId);
    await page.getByText("Web shop asks you to confirm you are a person").waitFor();
    await reviewScreen(page, "inbox-request");
    const open = page.getByRole("button", { name: "Open", exact: true }).first();
    // Each request's Open button is described by that request's text, for a screen reader.
    expect(
      await open.evaluate(
        (b) => b.closest("li")?.querySelector(`[id="${b.getAttribute("aria-describedby")}"]`)?.textContent,
      ),
    ).toBe("Web shop asks you to confirm you are a person");
    await open.click();
    await page.getByRole("button", { name: "Confirm with a passkey" }).click();
    await page.getByText("This request is completed.").waitFor();
    const record = result(
      await api.get("/verification/status", { request_id: link.request_id }, partner.devSecret),
      true,
    );
    expect(record).toMatchObject({ status: "completed" });
    await context.close();
  });

  it("shows a secured account and unlinks it", async () => {
    const { context, page, svcUserId } = await person();
    const link = await request(svcUserId, { partner_user_ref: "acct-web", notarize: true });
    await page.goto(`${origin}/app/requests/${link.request_id}`);
    await page.getByRole("button", { name: "Confirm with a passkey" }).click();
    await page.getByText("This request is completed.").waitFor();

    await page.getByRole("link", { name: "Secured accounts" }).click();
    await page.getByRole("heading", { name: "Web shop" }).waitFor();
    await reviewScreen(page, "accounts-listed");
    await page.getByRole("button", { name: "Unlink your account at Web shop" }).click();
    await page.getByRole("button", { name: "Yes, unlink" }).click();
    await page.getByText("Your account at Web shop is unlinked.").waitFor();
    await page.getByText(/^Unlinked /).waitFor();
    const [row] = result(
      await api.get("/secured-accounts/list", { platform_user_ref: "acct-web" }, partner.devSecret),
    ).rows;
    expect(row).toMatchObject({ status: "unlinked", unlinked_by: "human", unlink_reason: "human" });
    // The partner hears it as a signed account.unlinked for the handle it was given at account.secured.
    const unlinked = (await endpoint.waitFor((hook) => hook.type === "account.unlinked", "account.unlinked")).body;
    const secured = endpoint.deliveries().find((d) => d.body.type === "account.secured")?.body;
    expect(unlinked).toMatchObject({
      handle: row.handle,
      by: "human",
      reason: "human",
    });
    expect(secured).toMatchObject({ handle: row.handle });
    await context.close();
  });

  it("deletes the account only after the phrase is typed", async () => {
    const { context, page } = await person();
    await page.getByRole("link", { name: "Delete my account" }).click();
    await page.getByLabel("To confirm, type: delete my account").fill("delete my acount");
    await page.getByRole("button", { name: "Delete my account for good" }).click();
    await page.getByText("Type the phrase exactly as shown.").waitFor();
    await page.getByLabel("To confirm, type: delete my account").fill("delete my account");
    await page.getByRole("button", { name: "Delete my account for good" }).click();
    await page.getByText("Your account is deleted.").waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem("svc.id_token"))).toBeNull();
    await context.close();
  });
});

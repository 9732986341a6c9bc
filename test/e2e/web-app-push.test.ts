import type { Browser, BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchHeadlessChromium, launchHeadlessChromiumProfile } from "../harness/headless-browser.ts";
import { startPushService, type TestPushService } from "../harness/push-service.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { partnerApi, result } from "./gate-support.ts";
import { phoneViewport, reviewScreen, signInAsNewPerson } from "./web-app-support.ts";

/**
 * The installable app in headless Chromium, through the DevTools protocol: the manifest and service worker
 * meet Chromium's installability criteria; a push delivered to the service worker shows a notification with
 * the push's title, linked to the request's screen or the card in the inbox; the shell loads offline and
 * the API does not; the notifications screen lists and removes devices and asks for permission only on its
 * button. axe and screenshots as for every screen.
 */
describe("the installable app and its notifications", () => {
  let mesh: TestMesh;
  let browser: Browser;
  let origin: string;
  let pushService: TestPushService;

  beforeAll(async () => {
    mesh = await startTestMesh("web_app_push", { clockAt: new Date() });
    origin = `http://localhost:${new URL(mesh.gatewayUrl).port}`;
    await mesh.restart("gateway", { GATEWAY_PUBLIC_ORIGIN: origin });
    browser = await launchHeadlessChromium();
    pushService = await startPushService({ vapidPublicKey: async () => "" });
  }, 180_000);
  afterAll(async () => {
    await pushService?.stop();
    await browser?.close();
    await mesh?.stop();
  });

  /** `profile`: a Chromium profile of its own rather than an incognito context (installability, notifications). */
  async function signedInApp(profile = false) {
    const context: BrowserContext = profile
      ? await launchHeadlessChromiumProfile({ viewport: phoneViewport })
      : await browser.newContext({ viewport: phoneViewport });
    const page = await context.newPage();
    const token = await signInAsNewPerson(page, origin);
    await page.evaluate(async () => {
      await navigator.serviceWorker.ready;
    });
    return { context, page, token, cdp: await context.newCDPSession(page) };
  }

  it("is installable: a manifest Chromium reads without errors and an active service worker", async () => {
    const { context, page, cdp } = await signedInApp(true);
    const manifest = await cdp.send("Page.getAppManifest");
    expect(manifest.errors).toEqual([]);
    expect(JSON.parse(manifest.data ?? "{}")).toMatchObject({
      display: "standalone",
      scope: "/app/",
      start_url: "/app/inbox",
      theme_color: "#1f4e79",
    });
    expect((await cdp.send("Page.getInstallabilityErrors")).installabilityErrors).toEqual([]);
    for (const size of [192, 512]) {
      const icon = await page.request.get(`${origin}/app/assets/icon-${size}.png`);
      expect(icon.headers()["content-type"]).toBe("image/png");
      const png = await icon.body();
      expect(png.subarray(1, 4).toString()).toBe("PNG");
      expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([size, size]);
    }
    await context.close();
  });

  it("shows a delivered push with its title, linked to the request's screen or the card in the inbox", async () => {
    const { context, page, cdp } = await signedInApp(true);
    await context.grantPermissions(["notifications"], { origin });
    const registrations: { registrationId: string; scopeURL: string }[] = [];
    cdp.on("ServiceWorker.workerRegistrationUpdated", (event) => registrations.push(...event.registrations));
    await cdp.send("ServiceWorker.enable");
    await expect.poll(() => registrations.find((r) => r.scopeURL === `${origin}/app/`)).toBeDefined();
    const registrationId = registrations.find((r) => r.scopeURL === `${origin}/app/`)?.registrationId as string;
    const requestId = `req_${"ab".repeat(16)}`;
    const deliver = (payload: Record<string, string>) =>
      cdp.send("ServiceWorker.deliverPushMessage", { origin, registrationId, data: JSON.stringify(payload) });
    const shown = () =>
      page.evaluate(async () =>
        (await (await navigator.serviceWorker.ready).getNotifications()).map((n) => ({
          title: n.title,
          tag: n.tag,
          path: (n.data as { path: string }).path,
        })),
      );
    // A push delivered while the worker is still starting can be dropped: each is delivered again, under the same
    // tag (which replaces, never adds), until it shows.
    await page.evaluate(async () => {
      await navigator.serviceWorker.ready;
    });
    const showsOnce = async (payload: Record<string, string>, count: number) =>
      expect
        .poll(async () => {
          const now = (await shown()).length;
          if (now < count) await deliver(payload);
          return now;
        })
        .toBe(count);
    await showsOnce({ kind: "request", id: requestId, title: "A verification request is waiting for you" }, 1);
    await showsOnce({ kind: "card", id: "card_7", title: "An agent asks for your approval" }, 2);
    expect(await shown()).toEqual(
      expect.arrayContaining([
        {
          title: "A verification request is waiting for you",
          tag: `request:${requestId}`,
          path: `/app/requests/${requestId}`,
        },
        { title: "An agent asks for your approval", tag: "card:card_7", path: "/app/inbox#card-card_7" },
      ]),
    );

    // DevTools cannot click a notification: inside the worker's own target (Runtime.evaluate there), the card's
    // notification is taken from the registration and its click event dispatched on the worker's global scope.
    const [worker] = context.serviceWorkers();
    if (!worker) throw new Error("the app's service worker is not running");
    await worker.evaluate(async () => {
      // The worker's global scope; the test's own types know only windows.
      const scope = self as unknown as EventTarget & {
        registration: ServiceWorkerRegistration;
        NotificationEvent: new (type: string, init: { notification: Notification }) => Event;
      };
      const [notification] = await scope.registration.getNotifications({ tag: "card:card_7" });
      if (!notification) throw new Error("the card's notification is not shown");
      scope.dispatchEvent(new scope.NotificationEvent("notificationclick", { notification }));
    });
    await expect.poll(() => new URL(page.url()).pathname + new URL(page.url()).hash).toBe("/app/inbox#card-card_7");
    expect(await shown()).toEqual([expect.objectContaining({ tag: `request:${requestId}` })]);
    await context.close();
  });

  it("loads the shell offline, while the API, which decides, is not reached", async () => {
    const { context, page } = await signedInApp();
    await page.reload();
    await page.getByRole("heading", { name: "Inbox", level: 1 }).waitFor();
    await context.setOffline(true);
    await page.goto(`${origin}/app/passkeys`);
    await page.getByRole("heading", { name: "Passkeys", level: 1 }).waitFor();
    const api = await page.evaluate(() =>
      fetch("/v1/app/me").then(
        () => "reached",
        () => "not reached",
      ),
    );
    expect(api).toBe("not reached");
    await context.close();
  });

  it("the notifications screen: no prompt before the button; lists the devices; removes one", async () => {
    const { context, page, token } = await signedInApp();
    const api = partnerApi(mesh);
    const subscription = pushService.subscribe();
    const { id } = result(await api.post("/app/push-subscriptions", { ...subscription }, token));
    await page.goto(`${origin}/app/notifications`);
    await page.getByRole("heading", { name: "Notifications", level: 1 }).waitFor();
    expect(await page.evaluate(() => Notification.permission)).toBe("default");
    await page.getByText(new URL(pushService.origin).host).waitFor();
    await reviewScreen(page, "notifications");
    await page.getByRole("button", { name: /^Remove 127.0.0.1:\d+, added/ }).click();
    await page.getByText("That device no longer receives notifications.").waitFor();
    await page.getByText("No device receives notifications yet.").waitFor();
    expect(result(await api.get("/app/push-subscriptions", {}, token)).subscriptions).toEqual([]);
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    await reviewScreen(page, "notifications-none");
    await context.close();
  });
});

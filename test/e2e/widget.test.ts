import { mkdirSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { createClient } from "@connectrpc/connect";
import { AccountConsoleService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { KeyType } from "@svc/proto/console/v1/console_pb.js";
import { WebhookConsoleService } from "@svc/proto/webhook/v1/webhook_pb.js";
import axe from "axe-core";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { launchHeadlessChromium } from "../harness/headless-browser.ts";
import { SoftwareAuthenticator } from "../harness/software-passkey.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { newGate, newPartner, partnerApi, result, verifyIndependently } from "./gate-support.ts";

/**
 * `<svc-verify>` in headless Chromium on a partner's page, served by this test on its own origin under a
 * strict Content-Security-Policy (no inline script or style, no eval), loading the versioned script that
 * partner-config publishes, with its integrity hash. Sandbox humans answer at once on the development
 * site key. Gate events are read where a partner reads them: signed webhooks from webhook-dispatch.
 */
const now = new Date("2026-12-01T10:00:00Z");
const screenshots = fileURLToPath(new URL("../.screenshots/widget/", import.meta.url));

interface Seen {
  type: string;
  detail: Record<string, unknown>;
}

describe("the svc-verify widget", () => {
  let mesh: TestMesh;
  let browser: Browser;
  let partner: Awaited<ReturnType<typeof newPartner>>;
  let siteKey: string;
  let widget: { url: string; integrity: string };
  const webhooks: Record<string, unknown>[] = [];
  const submitted: string[] = [];
  let receiver: Server;
  let shop: Server;
  let shopOrigin: string;
  let otherOrigin: string;

  /** The partner's page: the widget in a form, its attributes from the query. */
  const page = (attributes: Record<string, string>) => {
    const attrs = Object.entries(attributes)
      .map(([name, value]) => (value === "" ? name : `${name}="${value}"`))
      .join(" ");
    return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop checkout</title>
<script src="${widget.url}" integrity="${widget.integrity}" crossorigin="anonymous"></script></head>
<body><main><h1>Checkout</h1><form method="post" action="/submit"><svc-verify ${attrs}></svc-verify>
<button type="submit">Pay</button></form></main></body></html>`;
  };

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        webhooks.push(JSON.parse(Buffer.concat(chunks).toString()));
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    mesh = await startTestMesh("widget", {
      only: ["signing", "account", "gate", "webhook-dispatch"],
      clockAt: now,
    });
    // The links a response carries (the QR code's address) name the gateway as the page reaches it.
    await mesh.restart("gateway", { GATEWAY_PUBLIC_ORIGIN: mesh.gatewayUrl });
    await mesh.restart("gate", { GATE_PASSKEY_ORIGIN: mesh.gatewayUrl });
    const gateway = new URL(mesh.gatewayUrl).origin;
    shop = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://shop.invalid");
      if (url.pathname === "/submit") {
        const chunks: Buffer[] = [];
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("end", () => {
          submitted.push(Buffer.concat(chunks).toString());
          res.writeHead(200, { "content-type": "text/plain" }).end("paid");
        });
        return;
      }
      if (url.pathname !== "/") return void res.writeHead(404).end();
      res
        .writeHead(200, {
          "content-type": "text/html; charset=utf-8",
          "content-security-policy": `default-src 'none'; script-src ${gateway}; connect-src ${gateway}; img-src ${gateway}; style-src 'none'; form-action 'self'; base-uri 'none'`,
        })
        .end(page(JSON.parse(url.searchParams.get("attrs") ?? "{}")));
    });
    await new Promise<void>((resolve) => shop.listen(0, "127.0.0.1", resolve));
    const port = (shop.address() as AddressInfo).port;
    shopOrigin = `http://127.0.0.1:${port}`;
    otherOrigin = `http://localhost:${port}`;

    partner = await newPartner(mesh, "Widget shop");
    const site = await mesh.console.createKey({
      organizationId: partner.organizationId,
      environment: Environment.DEVELOPMENT,
      type: KeyType.SITE,
      allowedOrigins: [shopOrigin],
      allowedGates: [],
    });
    siteKey = site.key;
    // Every page of this file calls from one IP, far above a site key's per-IP minute.
    for (const bucket of ["per_minute", "per_ip"])
      await mesh.console.setKeyLimits({ keyId: site.keyId, bucket, limit: 1_000_000 });
    const webhookConsole = createClient(WebhookConsoleService, mesh.consoleTransport());
    await webhookConsole.addEndpoint({
      organizationId: partner.organizationId,
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
      types: [],
    });
    await newGate(mesh, partner.organizationId, { key: "plain" });
    await newGate(mesh, partner.organizationId, { key: "secure", notarizeOffer: true });
    await newGate(mesh, partner.organizationId, { key: "adults", age: 18 });
    const config = result(await partnerApi(mesh).get("/sdk/partner-config", { gate: "plain" }, partner.devSecret));
    widget = config.widget;
    browser = await launchHeadlessChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await mesh?.stop();
    shop?.close();
    receiver?.close();
  });

  /** A person with the app: a development-IdP session, a registered passkey and a phone. */
  async function appPerson() {
    const api = partnerApi(mesh);
    const passkeyOrigin = mesh.gatewayUrl;
    const { sessionToken } = await mesh.console.mintDevSession({
      issuer: mesh.devIdpIssuer,
      subject: `person-${crypto.randomUUID()}`,
    });
    const authenticator = SoftwareAuthenticator.create();
    const app = (path: string, body: Record<string, unknown> = {}) => api.post(`/app${path}`, body, sessionToken);
    const begun = result(await app("/passkeys/begin-registration"));
    result(
      await app("/passkeys/finish-registration", {
        ceremony_id: begun.ceremony_id,
        response: authenticator.register(begun.options, passkeyOrigin),
      }),
    );
    const me = result(await api.get("/app/me", {}, sessionToken));
    return { svcUserId: me.svc_user_id as string, authenticator, app, passkeyOrigin };
  }

  const sandboxHuman = async (behavior: SandboxBehavior, age?: number) =>
    (
      await createClient(AccountConsoleService, mesh.consoleTransport()).createSandboxHuman({
        environment: Environment.DEVELOPMENT,
        behavior,
        ...(age === undefined ? {} : { age }),
      })
    ).svcUserId;

  /**
   * Opens the partner's page with these attributes, recording every widget event (on `document`: they
   * bubble out of the shadow root), console warnings, CSP violations and create-verification-link bodies.
   * `pageNow` is the page's clock as the element reads it (the legacy events' sunset).
   */
  async function open(
    attributes: Record<string, string>,
    options: { origin?: string; pageNow?: number; viewport?: { width: number; height: number }; dark?: boolean } = {},
  ) {
    const context: BrowserContext = await browser.newContext({
      viewport: options.viewport ?? { width: 1280, height: 800 },
      colorScheme: options.dark ? "dark" : "light",
    });
    const tab: Page = await context.newPage();
    const warnings: string[] = [];
    const linkBodies: Record<string, unknown>[] = [];
    tab.on("console", (message) => {
      if (message.type() === "warning") warnings.push(message.text());
    });
    tab.on("request", (request) => {
      if (request.url().includes("/sdk/create-verification-link") && request.method() === "POST")
        linkBodies.push(request.postDataJSON());
    });
    await tab.addInitScript((pageNow) => {
      const seen: unknown[] = [];
      const violations: string[] = [];
      Object.assign(window, { seen, violations });
      for (const type of ["svc:gate-status", "census-status", "multipass-status"])
        document.addEventListener(type, (event) => seen.push({ type, detail: (event as CustomEvent).detail }));
      document.addEventListener("securitypolicyviolation", (event) => violations.push(event.violatedDirective));
      if (pageNow !== null)
        void customElements.whenDefined("svc-verify").then((element) => {
          (element as unknown as { now: () => number }).now = () => pageNow;
        });
    }, options.pageNow ?? null);
    const query = new URLSearchParams({ attrs: JSON.stringify({ sitekey: siteKey, ...attributes }) });
    await tab.goto(`${options.origin ?? shopOrigin}/?${query}`);
    const events = () => tab.evaluate(() => (window as unknown as { seen: Seen[] }).seen);
    const gateEvents = async () => (await events()).filter((e) => e.type === "svc:gate-status");
    const until = (status: string) =>
      vi.waitFor(
        async () => {
          const found = (await gateEvents()).find((e) => e.detail.status === status);
          if (!found) throw new Error(`no ${status} event yet: ${JSON.stringify(await events())}`);
          return found.detail;
        },
        { timeout: 20_000, interval: 100 },
      );
    const violations = () => tab.evaluate(() => (window as unknown as { violations: string[] }).violations);
    return { tab, context, warnings, linkBodies, events, gateEvents, until, violations };
  }

  it("a Human Gate with a sandbox human: pending then completed, the token verifies, legacy events beside, the form field", async () => {
    const human = await sandboxHuman(SandboxBehavior.CONFIRM);
    const w = await open({ gate: "plain", "svc-user-id": human, "partner-user-id": "buyer-1" });
    const completed = await w.until("completed");
    const claims = await verifyIndependently(mesh, completed.token as string, now);
    expect(claims).toMatchObject({
      request_id: completed.request_id,
      verified: true,
      organization_id: partner.organizationId,
    });
    // Every status change in order, each as svc:gate-status then the two old names with the same detail.
    const events = await w.events();
    expect(events.map((e) => `${e.type} ${e.detail.status}`)).toEqual([
      "svc:gate-status pending",
      "census-status pending",
      "multipass-status pending",
      "svc:gate-status completed",
      "census-status completed",
      "multipass-status completed",
    ]);
    const [pending] = events;
    expect(pending!.detail).toEqual({
      status: "pending",
      request_id: completed.request_id,
      token: null,
      expires_at: new Date(now.getTime() + 300_000).toISOString(),
    });
    expect(events[4]!.detail).toEqual(completed);
    expect(completed).toMatchObject({ status: "completed", expires_at: expect.any(String) });
    expect(completed.via).toBeUndefined();
    // The presence ceremony of a pre-check that did not pass.
    expect(w.linkBodies).toHaveLength(2);
    expect(w.linkBodies[1]).toMatchObject({ parent_request_id: expect.stringMatching(/^req_/) });

    // The token in the hidden field of the enclosing form (light DOM), and nowhere else on the page.
    expect(await w.tab.inputValue("form input[name='svc-verify-token']")).toBe(completed.token);
    const kept = await w.tab.evaluate(() => ({
      cookie: document.cookie,
      local: localStorage.length,
      session: sessionStorage.length,
      shadow: document.querySelector("svc-verify")?.shadowRoot?.innerHTML ?? "",
    }));
    expect(kept).toMatchObject({ cookie: "", local: 0, session: 0 });
    expect(kept.shadow).not.toContain(completed.token);
    expect(await w.tab.locator("svc-verify").getByRole("status").textContent()).toBe("Verified. You can continue.");
    await w.tab.getByRole("button", { name: "Pay" }).click();
    await vi.waitFor(() => expect(submitted.some((body) => body.includes(String(completed.token)))).toBe(true));
    // Under the strict CSP: styles applied through the constructable stylesheet, nothing refused.
    expect(await w.violations()).toEqual([]);
    await w.context.close();
  });

  it("after the sunset on the page's clock only svc:gate-status fires", async () => {
    const human = await sandboxHuman(SandboxBehavior.CONFIRM);
    const w = await open({ gate: "plain", "svc-user-id": human }, { pageNow: Date.UTC(2027, 0, 15) });
    await w.until("completed");
    expect((await w.events()).map((e) => e.type)).toEqual(["svc:gate-status", "svc:gate-status"]);
    await w.context.close();
    const before = await open(
      { gate: "plain", "svc-user-id": await sandboxHuman(SandboxBehavior.CONFIRM) },
      { pageNow: Date.UTC(2027, 0, 14, 23, 59, 59) },
    );
    await before.until("completed");
    expect(await before.events()).toHaveLength(6);
    await before.context.close();
  });

  it("an Age Gate reports age_verdict in the detail", async () => {
    const w = await open({ gate: "adults", "svc-user-id": await sandboxHuman(SandboxBehavior.CONFIRM, 20) });
    const completed = await w.until("completed");
    expect(completed.age_verdict).toBe("over");
    expect((await verifyIndependently(mesh, completed.token as string, now)).age_over).toBe(true);
    // An Age Gate never passes by Recent Presence, so there is no pre-check.
    expect(w.linkBodies).toHaveLength(1);
    await w.context.close();
  });

  it("Recent Presence: a returning human passes at once with via precheck, token null and no webhook", async () => {
    const human = await sandboxHuman(SandboxBehavior.CONFIRM);
    const first = await open({ gate: "plain", "svc-user-id": human });
    const confirmed = await first.until("completed");
    await first.context.close();
    const again = await open({ gate: "plain", "svc-user-id": human });
    const pass = await again.until("pass");
    expect(pass).toEqual({
      status: "pass",
      request_id: expect.stringMatching(/^req_[0-9a-f]{32}$/),
      token: null,
      expires_at: new Date(now.getTime() + 60_000).toISOString(),
      via: "precheck",
    });
    expect((await again.gateEvents()).map((e) => e.detail.status)).toEqual(["pass"]);
    expect(again.linkBodies).toHaveLength(1);
    expect(await again.tab.inputValue("form input[name='svc-verify-token']")).toBe("");
    await again.context.close();
    // The first confirmation's webhook arrives; a later ceremony's too; none ever for the pass.
    const later = await open({ gate: "adults", "svc-user-id": await sandboxHuman(SandboxBehavior.CONFIRM, 30) });
    const laterDone = await later.until("completed");
    await later.context.close();
    await vi.waitFor(
      () => {
        for (const id of [confirmed.request_id, laterDone.request_id])
          expect(webhooks.some((w) => w.request_id === id)).toBe(true);
      },
      { timeout: 20_000, interval: 100 },
    );
    expect(webhooks.filter((w) => w.request_id === pass.request_id)).toEqual([]);
  });

  it("notarize and the old enroll ask for the offer only when the gate's switch is on", async () => {
    const offered = await open({
      gate: "secure",
      enroll: "",
      "partner-user-ref": "acct-42",
      "svc-user-id": await sandboxHuman(SandboxBehavior.CONFIRM),
    });
    const secured = await offered.until("completed");
    // Securing an account always runs a ceremony: no pre-check.
    expect(offered.linkBodies).toEqual([expect.objectContaining({ notarize: true, partner_user_ref: "acct-42" })]);
    expect((await verifyIndependently(mesh, secured.token as string, now)).trusted).toBe(true);
    expect(offered.warnings.filter((w) => w.includes('"enroll"'))).toHaveLength(1);
    await offered.context.close();

    for (const attribute of ["notarize", "enroll"]) {
      const off = await open({
        gate: "plain",
        [attribute]: "",
        "partner-user-ref": `acct-${attribute}`,
        "svc-user-id": await sandboxHuman(SandboxBehavior.CONFIRM),
      });
      const done = await off.until("completed");
      for (const body of off.linkBodies) expect(body.notarize).toBeUndefined();
      expect((await verifyIndependently(mesh, done.token as string, now)).trusted).toBe(false);
      await off.context.close();
    }
  });

  it("warns once per unknown or retired attribute, and accepts scope and link-on-verify", async () => {
    const w = await open({
      scope: "plain",
      "link-on-verify": "true",
      colour: "red",
      "data-step": "2",
      "svc-user-id": await sandboxHuman(SandboxBehavior.SILENT),
    });
    await w.until("pending");
    expect(w.warnings.filter((text) => text.startsWith("<svc-verify>"))).toEqual([
      '<svc-verify>: attribute "link-on-verify" is accepted and has no effect since 3.0; remove it.',
      '<svc-verify>: unknown attribute "colour" is ignored.',
    ]);
    await w.context.close();
  });

  it("a page on an origin the site key does not allow sees a clear message", async () => {
    const w = await open({ gate: "plain" }, { origin: otherOrigin });
    const message = w.tab.getByRole("alert");
    await message.waitFor();
    expect(await message.textContent()).toBe(
      `This website (${otherOrigin}) is not allowed to use this site key. The site owner must add it to the key's allowed origins.`,
    );
    expect(await w.events()).toEqual([]);
    await w.context.close();
  });

  it("desktop shows the QR code, a phone the app link, both with the web flow; German; axe finds nothing serious; screenshots", async () => {
    mkdirSync(screenshots, { recursive: true });
    const shapes = [
      { name: "desktop", viewport: { width: 1280, height: 800 } },
      { name: "phone", viewport: { width: 390, height: 844 } },
    ];
    for (const shape of shapes)
      for (const dark of [false, true]) {
        const w = await open(
          { gate: "plain", theme: dark ? "dark" : "auto", "svc-user-id": await sandboxHuman(SandboxBehavior.SILENT) },
          { viewport: shape.viewport, dark },
        );
        const pending = await w.until("pending");
        const root = w.tab.locator("svc-verify");
        const here = root.getByRole("link", { name: "Continue in this browser" });
        expect(await here.getAttribute("href")).toMatch(new RegExp(`/flow/${pending.request_id}#t=`));
        if (shape.name === "desktop") {
          const qr = root.getByRole("img", { name: "QR code to open the check in the app" });
          await vi.waitFor(async () =>
            expect(await qr.evaluate((img: HTMLImageElement) => img.naturalWidth)).toBeGreaterThan(0),
          );
          expect(await root.getByRole("link", { name: "Open the app" }).count()).toBe(0);
        } else {
          expect(await root.getByRole("link", { name: "Open the app" }).getAttribute("href")).toMatch(
            /^svc:\/\/verify\//,
          );
        }
        expect(await root.getByRole("status").textContent()).toBe("Waiting for your confirmation…");
        // Keyboard: Tab reaches the element's links.
        await w.tab.keyboard.press("Tab");
        expect(await w.tab.evaluate(() => document.activeElement?.tagName)).toBe("SVC-VERIFY");
        await w.tab.evaluate(axe.source);
        const found = await w.tab.evaluate(async () => {
          const run = await (window as unknown as { axe: typeof axe }).axe.run(document);
          return run.violations.map((v) => ({ id: v.id, impact: v.impact }));
        });
        expect(found.filter((v) => v.impact === "serious" || v.impact === "critical")).toEqual([]);
        expect(await w.violations()).toEqual([]);
        await w.tab.screenshot({ path: `${screenshots}${shape.name}-${dark ? "dark" : "light"}.png` });
        await w.context.close();
      }

    const german = await open({ gate: "plain", lang: "de", "svc-user-id": await sandboxHuman(SandboxBehavior.SILENT) });
    await german.until("pending");
    await german.tab.locator("svc-verify").getByRole("link", { name: "In diesem Browser fortfahren" }).waitFor();
    await german.context.close();
  }, 120_000);

  it("the status long-poll answers as soon as the ceremony completes, and pending when a short wait ends", async () => {
    const api = partnerApi(mesh);
    const grant = async () =>
      result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token as string;
    const silent = result(
      await api.post(
        "/sdk/create-verification-link",
        { gate: "plain", svc_user_id: await sandboxHuman(SandboxBehavior.SILENT) },
        await grant(),
      ),
    );
    let started = performance.now();
    const held = result(
      await api.get("/verification/status", { request_id: silent.request_id, wait_seconds: 1 }, partner.devSecret),
      true,
    );
    expect(held.status).toBe("pending");
    expect(performance.now() - started).toBeGreaterThanOrEqual(950);

    // A wait held on a pending request while the person opens it in the app and confirms with the passkey.
    const person = await appPerson();
    const link = result(
      await api.post("/sdk/create-verification-link", { gate: "plain", svc_user_id: person.svcUserId }, await grant()),
    );
    started = performance.now();
    const waiting = api.get(
      "/verification/status",
      { request_id: link.request_id, wait_seconds: 25 },
      partner.devSecret,
    );
    const opened = result(await person.app("/requests/open", { request_id: link.request_id }));
    result(
      await person.app("/requests/confirm", {
        request_id: link.request_id,
        ceremony_id: opened.ceremony_id,
        response: person.authenticator.assert(opened.options, person.passkeyOrigin),
      }),
    );
    const confirmedAt = performance.now();
    const done = result(await waiting, true);
    expect(done).toMatchObject({ status: "completed", token: expect.any(String) });
    // Woken by gate's notification, not by the end of its 25 s.
    expect(performance.now() - confirmedAt).toBeLessThan(2000);
    expect(performance.now() - started).toBeLessThan(10_000);
  });
});

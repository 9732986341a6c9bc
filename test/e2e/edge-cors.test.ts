import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { KeyType } from "@svc/proto/console/v1/console_pb.js";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchHeadlessChromium } from "../harness/headless-browser.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { dataError, newGate, newPartner, partnerApi } from "./gate-support.ts";

/**
 * CORS through the real gateway: preflights, the headers of actual answers for site keys from allowed
 * and other origins and for secret keys, and a real browser on a partner's page calling the API with
 * its site key and reading the rate-limit and deprecation headers.
 */
const exposed = "RateLimit, RateLimit-Policy, Deprecation, Sunset, Link, Idempotent-Replayed";

/** The CORS headers of an answer, by lower-case name. */
const corsHeaders = (response: Response) =>
  Object.fromEntries(
    [
      "access-control-allow-origin",
      "access-control-allow-methods",
      "access-control-allow-headers",
      "access-control-max-age",
      "access-control-expose-headers",
      "access-control-allow-credentials",
      "vary",
    ].flatMap((name) => {
      const value = response.headers.get(name);
      return value === null ? [] : [[name, value]];
    }),
  );

describe("CORS for browser calls with a site key", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;
  let browser: Browser;
  /** The partner's page; `localhost` on the same port is another origin, one the key does not allow. */
  const shop: Server = createServer((_req, res) =>
    res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>shop</title>"),
  );
  let shopOrigin: string;
  let otherOrigin: string;
  /** A site key for the shop's page, with the tier's default limits. */
  let siteKey: string;

  beforeAll(async () => {
    await new Promise<void>((resolve) => shop.listen(0, "127.0.0.1", resolve));
    const port = (shop.address() as AddressInfo).port;
    shopOrigin = `http://127.0.0.1:${port}`;
    otherOrigin = `http://localhost:${port}`;
    // Before the rename sunset, so an old name earns the deprecation headers.
    mesh = await startTestMesh("edge_cors", { only: ["signing", "gate"], clockAt: "2026-12-01T10:00:00Z" });
    api = partnerApi(mesh);
    partner = await newPartner(mesh, "Cors shop");
    await newGate(mesh, partner.organizationId, { key: "checkout" });
    ({ key: siteKey } = await mesh.console.createKey({
      organizationId: partner.organizationId,
      environment: Environment.DEVELOPMENT,
      type: KeyType.SITE,
      allowedOrigins: [shopOrigin],
    }));
    browser = await launchHeadlessChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await mesh?.stop();
    shop.close();
  });

  /** `send` is the unchecked `fetch` for the probes of what the API has no operation for, which no document lists. */
  const preflight = (path: string, origin: string, method = "POST", send: typeof fetch = mesh.fetch) =>
    send(`${mesh.gatewayUrl}/v1${path}`, {
      method: "OPTIONS",
      headers: {
        origin,
        "access-control-request-method": method,
        "access-control-request-headers": "authorization,content-type,x-svc-include-ratelimit",
      },
    });
  const remaining = (header: string | null, bucket: string) =>
    Number(new RegExp(`"${bucket}";r=(\\d+)`).exec(header ?? "")?.[1]);

  describe("a preflight", () => {
    it("is answered for any origin with the methods, the headers a page may send and a max-age", async () => {
      for (const origin of [shopOrigin, "https://anyone.example"]) {
        const answer = await preflight("/sdk/create-session", origin);
        expect(answer.status).toBe(204);
        expect(corsHeaders(answer)).toEqual({
          "access-control-allow-origin": origin,
          "access-control-allow-methods": "POST",
          "access-control-allow-headers": "Authorization, Content-Type, x-svc-include-ratelimit, Idempotency-Key",
          "access-control-max-age": "7200",
          vary: "Origin",
        });
        expect(await answer.text()).toBe("");
      }
      expect(
        (await preflight("/sdk/partner-config", shopOrigin, "GET")).headers.get("access-control-allow-methods"),
      ).toBe("GET");
      expect((await preflight("/verification/status", shopOrigin, "GET")).status).toBe(204);
      expect((await preflight("/sdk/revoke-verification", shopOrigin)).status).toBe(204);
    });

    it("is refused where neither a site key nor a grant token is accepted: those operations are for servers", async () => {
      expect((await preflight("/sdk/create-verification-link", shopOrigin)).status).toBe(204);
      for (const path of ["/sdk/logout", "/sdk/verify-token"]) {
        const answer = await preflight(path, shopOrigin, "POST", fetch);
        expect(answer.status, path).toBe(405);
        expect(answer.headers.get("access-control-allow-origin")).toBeNull();
        await answer.body?.cancel();
      }
      expect((await preflight("/sdk/nowhere", shopOrigin, "POST", fetch)).status).toBe(404);
    });

    it("is not counted by the rate limiter, neither for the key's client IP nor as a request without a credential", async () => {
      const call = () =>
        mesh.fetch(`${mesh.gatewayUrl}/v1/sdk/partner-config?gate=checkout`, {
          headers: { authorization: `Bearer ${siteKey}`, origin: shopOrigin },
        });
      const anonymous = () =>
        mesh.fetch(`${mesh.gatewayUrl}/v1/sdk/verify-token`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: '{"token":"a.b.c"}',
        });
      const before = await call();
      const anonymousBefore = await anonymous();
      // More preflights than the key's per_ip bucket holds (20 a minute).
      for (let i = 0; i < 25; i++)
        expect(
          (await preflight(i % 2 ? "/sdk/create-session" : "/sdk/partner-config", shopOrigin, i % 2 ? "POST" : "GET"))
            .status,
        ).toBe(204);
      const after = await call();
      const anonymousAfter = await anonymous();
      expect(after.status).toBe(200);
      expect(remaining(after.headers.get("ratelimit"), "per_ip")).toBe(
        remaining(before.headers.get("ratelimit"), "per_ip") - 1,
      );
      expect(remaining(anonymousAfter.headers.get("ratelimit"), "per_minute")).toBe(
        remaining(anonymousBefore.headers.get("ratelimit"), "per_minute") - 1,
      );
      await Promise.all([before, after, anonymousBefore, anonymousAfter].map((answer) => answer.body?.cancel()));
    });
  });

  describe("an actual answer", () => {
    it("names the origin and exposes the rate-limit and deprecation headers when the site key allows the origin", async () => {
      const response = await mesh.fetch(`${mesh.gatewayUrl}/v1/sdk/partner-config?scope=checkout`, {
        headers: { authorization: `Bearer ${siteKey}`, origin: shopOrigin },
      });
      expect(response.headers.get("access-control-allow-origin")).toBe(shopOrigin);
      expect(response.headers.get("access-control-expose-headers")).toBe(exposed);
      expect(response.headers.get("vary")).toBe("Origin");
      expect(response.headers.get("access-control-allow-credentials")).toBeNull();
      // Idempotent-Replayed comes only with the replay of a POST's Idempotency-Key.
      for (const name of exposed.split(", ").filter((n) => n !== "Idempotent-Replayed"))
        expect(response.headers.get(name), name).not.toBeNull();
      expect((await response.json()).data.data).toMatchObject({ gate: "checkout", scope: "checkout" });
    });

    it("keeps a refusal of another origin as the spec's data.error 403, without the headers that would let the page read it", async () => {
      const reply = await api.post("/sdk/create-session", {}, siteKey, { origin: otherOrigin });
      expect(dataError(reply)).toEqual({
        statusCode: 403,
        message: `origin ${otherOrigin} is not allowed for this site key`,
      });
      const response = await mesh.fetch(`${mesh.gatewayUrl}/v1/sdk/create-session`, {
        method: "POST",
        headers: { authorization: `Bearer ${siteKey}`, origin: otherOrigin },
      });
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
      expect(response.headers.get("access-control-expose-headers")).toBeNull();
      await response.body?.cancel();
    });

    it("has no CORS headers for a secret key, even when an Origin is sent", async () => {
      const response = await mesh.fetch(`${mesh.gatewayUrl}/v1/sdk/create-session`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${partner.devSecret}`,
          origin: shopOrigin,
          "content-type": "application/json",
        },
        body: "{}",
      });
      expect((await response.json()).data.data.anchor_grant_token).toMatch(/^svcs_/);
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
      expect(response.headers.get("vary")).toBeNull();
    });

    it("names the origin on a 400 after authentication, so the page can read what was wrong", async () => {
      // A present but malformed gate key (an empty one) is an InputValidationError, not gate_required.
      const response = await mesh.fetch(`${mesh.gatewayUrl}/v1/sdk/partner-config?gate=`, {
        headers: { authorization: `Bearer ${siteKey}`, origin: shopOrigin },
      });
      expect(response.status).toBe(400);
      expect(response.headers.get("access-control-allow-origin")).toBe(shopOrigin);
      expect((await response.json()).code).toBe("InputValidationError");
    });
  });

  describe("in a browser", () => {
    /** Runs `fetch` in a page of `origin`; what the page's script can read, or the error it gets. */
    async function fromPage(
      origin: string,
      path: string,
      init: { method?: string; credential: string; body?: unknown; headers?: Record<string, string> },
    ) {
      const page = await browser.newPage();
      try {
        await page.goto(`${origin}/`);
        return await page.evaluate(
          async ({ url, init }) => {
            try {
              const response = await fetch(url, {
                method: init.method ?? "GET",
                headers: {
                  authorization: `Bearer ${init.credential}`,
                  ...(init.body === undefined ? {} : { "content-type": "application/json" }),
                  ...init.headers,
                },
                body: init.body === undefined ? undefined : JSON.stringify(init.body),
              });
              const headers = Object.fromEntries(
                ["RateLimit", "RateLimit-Policy", "Deprecation", "Sunset", "Link"].map((name) => [
                  name,
                  response.headers.get(name),
                ]),
              );
              return { status: response.status, body: await response.json(), headers };
            } catch (error) {
              return { error: String(error) };
            }
          },
          { url: `${mesh.gatewayUrl}/v1${path}`, init },
        );
      } finally {
        await page.close();
      }
    }

    it("a page of an allowed origin creates a session and reads the rate-limit headers", async () => {
      const outcome = await fromPage(shopOrigin, "/sdk/create-session", {
        method: "POST",
        credential: siteKey,
        body: { partner_user_id: "browser-user" },
      });
      expect(outcome).toMatchObject({
        status: 200,
        body: { data: { data: { anchor_grant_token: expect.stringMatching(/^svcs_/) } } },
      });
      expect(outcome.headers).toMatchObject({
        RateLimit: expect.stringContaining('"per_ip";r='),
        "RateLimit-Policy": expect.stringContaining('"per_minute";q=120;w=60'),
      });
    });

    it("a page sending an old name and the rate-limit opt-in reads the deprecation headers", async () => {
      const outcome = await fromPage(shopOrigin, "/sdk/partner-config?scope=checkout", {
        credential: siteKey,
        headers: { "x-svc-include-ratelimit": "true" },
      });
      expect(outcome.body).toMatchObject({
        data: { data: { gate: "checkout" } },
        _deprecation: expect.any(Object),
        _rateLimit: expect.any(Object),
      });
      expect(outcome.headers).toMatchObject({
        Deprecation: "true",
        Sunset: "Fri, 15 Jan 2027 00:00:00 GMT",
        Link: expect.stringContaining('rel="deprecation"'),
      });
    });

    it("a page spends the grant token its site key got on create-verification-link, the widget's flow", async () => {
      const session = await fromPage(shopOrigin, "/sdk/create-session", {
        method: "POST",
        credential: siteKey,
        body: { partner_user_id: "widget-user" },
      });
      const grant = (session as { body: { data: { data: { anchor_grant_token: string } } } }).body.data.data
        .anchor_grant_token;
      const outcome = await fromPage(shopOrigin, "/sdk/create-verification-link", {
        method: "POST",
        credential: grant,
        body: { gate: "checkout" },
      });
      expect(outcome).toMatchObject({
        status: 200,
        body: { data: { data: { request_id: expect.stringMatching(/^req_[0-9a-f]{32}$/), gate: "checkout" } } },
      });
    });

    it("a page of another origin, or one holding a secret key, reads nothing", async () => {
      expect(
        await fromPage(otherOrigin, "/sdk/create-session", { method: "POST", credential: siteKey, body: {} }),
      ).toEqual({ error: expect.stringContaining("TypeError") });
      expect(
        await fromPage(shopOrigin, "/sdk/create-session", { method: "POST", credential: partner.devSecret, body: {} }),
      ).toEqual({ error: expect.stringContaining("TypeError") });
    });
  });
});

import jsqr from "jsqr";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchHeadlessChromium } from "../harness/headless-browser.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { newGate, newPartner, partnerApi, result } from "./gate-support.ts";

/**
 * `qr_code_url` through the real mesh: an SVG image the gateway serves, which a browser renders and an
 * independent decoder (jsQR) reads back as the request's `deep_link`; never cached; an address of
 * another form is a plain 404.
 */
describe("the QR code of a verification request", () => {
  let mesh: TestMesh;
  let browser: Browser;
  let link: { request_id: string; deep_link: string; qr_code_url: string };

  beforeAll(async () => {
    mesh = await startTestMesh("gate_qr", { only: ["signing", "gate"] });
    // Links name the public origin: make it this gateway's, so they can be followed.
    await mesh.restart("gateway", { GATEWAY_PUBLIC_ORIGIN: mesh.gatewayUrl });
    const api = partnerApi(mesh);
    const partner = await newPartner(mesh, "Kiosk");
    await newGate(mesh, partner.organizationId, { key: "kiosk" });
    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token;
    link = result(await api.post("/sdk/create-verification-link", { gate: "kiosk" }, grant));
    browser = await launchHeadlessChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await mesh?.stop();
  });

  /** The image as a browser draws it: RGBA pixels from a canvas on the gateway's origin. */
  async function rendered(url: string) {
    const page = await browser.newPage();
    try {
      await page.goto(`${mesh.gatewayUrl}/healthz`);
      return await page.evaluate(async (src) => {
        const image = new Image();
        image.src = src;
        await image.decode();
        const canvas = document.createElement("canvas");
        canvas.width = image.naturalWidth;
        canvas.height = image.naturalHeight;
        const context = canvas.getContext("2d")!;
        context.drawImage(image, 0, 0);
        const pixels = context.getImageData(0, 0, canvas.width, canvas.height);
        return { width: pixels.width, height: pixels.height, data: Array.from(pixels.data) };
      }, url);
    } finally {
      await page.close();
    }
  }

  it("is an image of the gateway's that carries the same secret as the deep link", () => {
    const secret = new URL(link.deep_link).searchParams.get("t");
    expect(link.qr_code_url).toBe(`${mesh.gatewayUrl}/v1/qr/${link.request_id}.svg?t=${secret}`);
  });

  it("is served as SVG, never cached", async () => {
    const response = await mesh.fetch(link.qr_code_url);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("image/svg+xml");
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(await response.text()).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*>.*<\/svg>$/);
    const head = await mesh.fetch(link.qr_code_url, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
  });

  it("decodes, as a browser renders it, to exactly the deep link", async () => {
    const image = await rendered(link.qr_code_url);
    expect(image.width).toBeGreaterThanOrEqual(200);
    // jsqr is CommonJS: its decoder is the module's `default`.
    const decoded = jsqr.default(Uint8ClampedArray.from(image.data), image.width, image.height);
    expect(decoded?.data).toBe(link.deep_link);
  });

  it("shows in a page of another origin", async () => {
    const page = await browser.newPage();
    try {
      await page.setContent(`<img id="qr" src="${link.qr_code_url}">`);
      const width = await page.evaluate(async () => {
        const image = document.getElementById("qr") as HTMLImageElement;
        await image.decode();
        return image.naturalWidth;
      });
      expect(width).toBeGreaterThan(0);
    } finally {
      await page.close();
    }
  });

  it("answers an address of another form with a plain 404, and takes only GET", async () => {
    const secret = new URL(link.deep_link).searchParams.get("t")!;
    // The last two addresses and the POST are of no operation the document lists: they go unchecked.
    for (const [address, send] of [
      [`/v1/qr/${link.request_id}.svg`, mesh.fetch],
      [`/v1/qr/${link.request_id}.svg?t=not%20a%20secret`, mesh.fetch],
      [`/v1/qr/req_0000.svg?t=${secret}`, mesh.fetch],
      [`/v1/qr/${link.request_id}.png?t=${secret}`, fetch],
      ["/v1/qr/", fetch],
    ] as const) {
      const response = await send(`${mesh.gatewayUrl}${address}`);
      expect(response.status, address).toBe(404);
      expect(await response.json()).toEqual({ error: "not_found", message: expect.any(String) });
    }
    const post = await fetch(link.qr_code_url, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    await post.body?.cancel();
  });
});

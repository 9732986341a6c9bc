import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { deepLink, qrCodeTarget, requestLinks } from "../src/operations/gate-links.ts";
import { qrCodeImage } from "../src/operations/qr-code.ts";

/**
 * The person's links of a request: `qr_code_url` names exactly the request and secret of `deep_link`,
 * so its image shows the deep link and nothing more; an address of another form names nothing.
 * (The served image, decoded: test/e2e/gate-qr-code.test.ts.)
 */
const origin = "https://api.svc.test";
const requestId = `req_${"0123456789abcdef".repeat(2)}`;
const secret = "Ab3".repeat(11);

const addressOf = (url: string) => {
  const parsed = new URL(url);
  return { path: parsed.pathname.slice("/v1".length), query: parsed.searchParams };
};

describe("qr_code_url", () => {
  test("is an SVG image address below {base_url} with the flow secret in its query, not in the fragment", () => {
    const links = requestLinks(origin, requestId, secret);
    expect(links).toEqual({
      deep_link: `svc://verify/${requestId}?t=${secret}`,
      web_url: `${origin}/flow/${requestId}#t=${secret}`,
      qr_code_url: `${origin}/v1/qr/${requestId}.svg?t=${secret}`,
    });
  });

  test("names the deep link's request and secret, for any request and secret gate issues", () => {
    const hex = fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: 32, maxLength: 32 });
    const base62 = fc.string({
      unit: fc.constantFrom(..."0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
      minLength: 32,
      maxLength: 32,
    });
    fc.assert(
      fc.property(hex, base62, (id, flowSecret) => {
        const links = requestLinks(origin, `req_${id}`, flowSecret);
        const { path, query } = addressOf(links.qr_code_url);
        const target = qrCodeTarget(path, query)!;
        expect(deepLink(target.requestId, target.flowSecret)).toBe(links.deep_link);
      }),
    );
  });

  test("an address of another form names nothing, so it has no image", () => {
    const good = addressOf(requestLinks(origin, requestId, secret).qr_code_url);
    expect(qrCodeImage(good.path, good.query)?.headers).toMatchObject({
      "content-type": "image/svg+xml",
      "cache-control": "no-store",
    });
    const forged = [
      [`/qr/${requestId}.svg`, ""],
      [`/qr/${requestId}.svg`, `t=${secret}&t=${secret}`],
      [`/qr/${requestId}.svg`, "t=short"],
      [`/qr/${requestId}.svg`, `t=${secret}%0A`],
      [`/qr/${requestId}.svg`, `t=${"a".repeat(129)}`],
      [`/qr/${requestId}`, `t=${secret}`],
      [`/qr/${requestId}.png`, `t=${secret}`],
      [`/qr/${requestId.toUpperCase()}.svg`, `t=${secret}`],
      [`/qr/req_123.svg`, `t=${secret}`],
      [`/qr/../flow/${requestId}.svg`, `t=${secret}`],
      [`/flow/${requestId}.svg`, `t=${secret}`],
    ] as const;
    for (const [path, query] of forged) {
      expect(qrCodeTarget(path, new URLSearchParams(query)), `${path}?${query}`).toBeUndefined();
      expect(qrCodeImage(path, new URLSearchParams(query))).toBeUndefined();
    }
  });
});

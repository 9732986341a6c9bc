import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchHeadlessChromium } from "../../../test/harness/headless-browser.ts";
import { canonicalJson } from "../src/canonical-json.ts";
import { canonicalDigest } from "../src/card-digest.ts";

/**
 * What a person's passkey signs must be computed in the browser exactly as the server computes it. The
 * same hostile cards, as the JSON text both sides receive, go to the trust layer's digest here and to the
 * web app's own module (`gateway/web-app/gen/canonical-json.js`, the file the gateway serves at
 * /app/assets/) in Chromium, which digests the text with `crypto.subtle`. Text and digest must match; a
 * card that has no canonical form must be refused on both sides.
 */
const webAppGen = new URL("../../../gateway/web-app/gen/", import.meta.url);

const action = (fields: Record<string, unknown>) => ({
  summary_title: "Pay invoice 2231",
  category: "payments",
  ...fields,
});
const card = (payload: unknown, fields: Record<string, unknown> = {}) =>
  JSON.stringify({ ...action(fields), adaptive_card_payload: payload });
const nested = (levels: number, leaf: string): string =>
  levels === 0 ? leaf : `{"type":"Container","items":[${nested(levels - 1, leaf)}]}`;

const hostileCards: string[] = [
  card({ type: "AdaptiveCard", body: [{ type: "TextBlock", text: "Amount: EUR 120.00" }] }),
  // Numbers: the ECMAScript forms around the exponent switch, -0, binary fractions, the extremes.
  '{"summary_title":"n","category":"c","numbers":[-0,0,1e21,1e20,1e-7,1e-6,0.30000000000000004,5e-324,1.7976931348623157e308,9007199254740993,-1.5e-9,4.50,2e-3,333333333.33333329]}',
  '{"summary_title":"sum","category":"c","adaptive_card_payload":{"total":0.1,"parts":[0.2,-0.0,100,1E+2,0.000001]}}',
  // Escapes: every control character, DEL, the line and paragraph separators, quotes and backslashes.
  card({ text: Array.from({ length: 32 }, (_, code) => String.fromCharCode(code)).join("") }),
  card({ text: "\u007f\u2028\u2029\"\\/'<>&\u200b\u202e\ufeff" }),
  '{"summary_title":"\\u0050\\u0061y \\ud83d\\ude00","category":"\\u00e9\\u0301","adaptive_card_payload":{"t":"\\uFFFF\\uE000\\uD7FF"}}',
  // Key order by UTF-16 code units: non-BMP keys (high surrogates) sort before U+E000..U+FFFF.
  card({ "\ufb33": 1, "\ud83d\ude00": 2, "\ue000": 3, "\u20ac": 4, "\r": 5, "1": 6, "\u0080": 7, "\u00f6": 8, "": 9 }),
  card({ "\u{10ffff}": "max", "\u{1f600}": "grin", "\u{1d11e}": "clef", "\uffff": "last BMP" }),
  // Array-index keys, which JavaScript objects list first whatever their order, and __proto__.
  '{"summary_title":"k","category":"c","adaptive_card_payload":{"b":1,"10":2,"2":3,"a":4,"01":5,"4294967295":6,"-1":7}}',
  '{"summary_title":"p","category":"c","adaptive_card_payload":{"__proto__":{"polluted":true},"constructor":1,"toString":2}}',
  // Deep nesting, as far as the trust layer's depth limit and well past it.
  `{"summary_title":"deep","category":"c","adaptive_card_payload":{"type":"AdaptiveCard","body":[${nested(12, '{"type":"TextBlock","text":"leaf"}')}]}}`,
  `{"summary_title":"deeper","category":"c","adaptive_card_payload":${"[".repeat(400)}1${"]".repeat(400)}}`,
  // Empty and odd containers, literals.
  '{"summary_title":"e","category":"c","adaptive_card_payload":{"a":[],"b":{},"c":[[]],"d":[{}],"e":null,"f":true,"g":false}}',
  // Refused on both sides: lone surrogates (in a value, in a key) and a number JSON cannot hold.
  '{"summary_title":"\\ud800","category":"c"}',
  '{"summary_title":"t","category":"c","adaptive_card_payload":{"\\udfff":1}}',
  '{"summary_title":"t","category":"c","adaptive_card_payload":{"n":1e400}}',
];

/** Any code point, and now and then half of a surrogate pair alone. */
const anyUnit = fc.oneof(
  { weight: 60, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) },
  { weight: 1, arbitrary: fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit)) },
);
/** Arbitrary JSON text with such strings as keys and values, on a fixed seed. */
const arbitraryCards = fc.sample(fc.json({ stringUnit: anyUnit, maxDepth: 6 }), { seed: 8785, numRuns: 300 });

type Outcome = { text: string; digest: string } | { refused: string };

function onServer(json: string): Outcome {
  try {
    const text = canonicalJson(JSON.parse(json));
    return { text, digest: canonicalDigest(text) };
  } catch (error) {
    return { refused: (error as Error).name };
  }
}

describe("the card digest, on the server and in the web app in Chromium", () => {
  let server: Server;
  let browser: Browser;
  let origin: string;

  beforeAll(async () => {
    server = createServer(async (request, response) => {
      const name = /^\/([a-z0-9-]+\.js)$/.exec(request.url ?? "")?.[1];
      if (name === undefined) {
        response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<!doctype html><title>t</title>");
        return;
      }
      const script = await readFile(new URL(name, webAppGen), "utf8").catch(() => undefined);
      if (script === undefined) response.writeHead(404).end();
      else response.writeHead(200, { "content-type": "text/javascript; charset=utf-8" }).end(script);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchHeadlessChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  async function inChromium(cards: string[]): Promise<Outcome[]> {
    const page = await browser.newPage();
    try {
      await page.goto(`${origin}/`);
      await page.addScriptTag({
        type: "module",
        content: 'import { canonicalJson } from "/canonical-json.js"; globalThis.canonicalJson = canonicalJson;',
      });
      await page.waitForFunction(() => "canonicalJson" in globalThis);
      return await page.evaluate(async (jsons) => {
        const { canonicalJson } = globalThis as unknown as { canonicalJson: (value: unknown) => string };
        const base64url = (bytes: ArrayBuffer) =>
          btoa(String.fromCharCode(...new Uint8Array(bytes)))
            .replaceAll("+", "-")
            .replaceAll("/", "_")
            .replace(/=+$/, "");
        const outcomes = [];
        for (const json of jsons) {
          try {
            const text: string = canonicalJson(JSON.parse(json));
            const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
            outcomes.push({ text, digest: base64url(digest) });
          } catch (error) {
            outcomes.push({ refused: (error as Error).name });
          }
        }
        return outcomes;
      }, cards);
    } finally {
      await page.close();
    }
  }

  it("the main script imports the module this test runs", async () => {
    const main = await readFile(new URL("main.js", webAppGen), "utf8");
    expect(main).toMatch(/^import \{ canonicalJson \} from "\.\/canonical-json\.js";$/m);
  });

  it("writes and digests every hostile card alike, and refuses the same ones", async () => {
    const server = hostileCards.map(onServer);
    expect(await inChromium(hostileCards)).toEqual(server);
    // The table holds cards of both kinds, and -0 and 1e21 are written as RFC 8785 says.
    expect(server.filter((outcome) => "refused" in outcome)).toEqual([
      { refused: "TypeError" },
      { refused: "TypeError" },
      { refused: "TypeError" },
    ]);
    expect(server[1]).toMatchObject({
      text: expect.stringContaining('"numbers":[0,0,1e+21,100000000000000000000,1e-7'),
    });
  });

  it("writes and digests arbitrary JSON alike (300 values on a fixed seed)", async () => {
    const server = arbitraryCards.map(onServer);
    expect(await inChromium(arbitraryCards)).toEqual(server);
    // The sample reaches both outcomes, so neither side can pass by refusing everything.
    expect(server.some((outcome) => "refused" in outcome)).toBe(true);
    expect(server.filter((outcome) => "digest" in outcome).length).toBeGreaterThan(200);
  });
});

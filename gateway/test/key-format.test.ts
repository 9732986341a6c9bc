import { describe, expect, test } from "vitest";
import { normalizeOrigin } from "../src/credentials/directory.ts";
import { apiKeyTypeOf, displayPrefix, generateKey, hashInput, parseKey } from "../src/credentials/key-format.ts";

const secret = "Ab3dEf6hIj9lMn2pQr5tUv8xYz1bCd4f";

describe("API key forms", () => {
  test.each([
    ["svc_dev_", "secret", "development"],
    ["svc_production_", "secret", "production"],
    ["svc_prod_", "secret", "production"],
    ["pk_test_", "site", "development"],
    ["pk_live_", "site", "production"],
  ] as const)("%s is a %s key of %s", (prefix, type, environment) => {
    expect(parseKey(`${prefix}${secret}`)).toEqual({ type, environment, secret });
    expect(apiKeyTypeOf(`${prefix}anything`)).toBe(type);
  });

  test("svc_prod_ and svc_production_ are the same key", () => {
    const short = parseKey(`svc_prod_${secret}`)!;
    const long = parseKey(`svc_production_${secret}`)!;
    expect(hashInput(short)).toBe(hashInput(long));
    expect(displayPrefix(short)).toBe("svc_production_Ab3d");
  });

  test("the same random part is a different key in another type or environment", () => {
    const inputs = [`svc_dev_${secret}`, `svc_production_${secret}`, `pk_test_${secret}`, `pk_live_${secret}`].map(
      (k) => hashInput(parseKey(k)!),
    );
    expect(new Set(inputs).size).toBe(4);
  });

  test.each([
    ["too short", `svc_dev_${secret.slice(1)}`],
    ["too long", `svc_dev_${secret}x`],
    ["not base62", `svc_dev_${secret.slice(1)}-`],
    ["an agent key", `svc_agent_Bot__${secret}`],
    ["a grant token", `svcs_${secret}`],
    ["upper-case prefix", `SVC_DEV_${secret}`],
    ["no prefix", secret],
  ])("refuses %s", (_label, text) => {
    expect(parseKey(text)).toBeUndefined();
  });

  test("agent keys and grant tokens are not API keys by prefix either", () => {
    expect(apiKeyTypeOf(`svc_agent_Bot__${secret}`)).toBeUndefined();
    expect(apiKeyTypeOf(`svcs_${secret}`)).toBeUndefined();
  });

  test("generated keys parse back, with the issued prefix", () => {
    for (const [type, environment, prefix] of [
      ["secret", "development", "svc_dev_"],
      ["secret", "production", "svc_production_"],
      ["site", "development", "pk_test_"],
      ["site", "production", "pk_live_"],
    ] as const) {
      const { key, parsed } = generateKey(type, environment);
      expect(key.startsWith(prefix)).toBe(true);
      expect(key).toHaveLength(prefix.length + 32);
      expect(parseKey(key)).toEqual(parsed);
      expect(displayPrefix(parsed)).toBe(key.slice(0, prefix.length + 4));
    }
    expect(generateKey("secret", "development").key).not.toBe(generateKey("secret", "development").key);
  });
});

describe("allowed origins", () => {
  test.each([
    ["https://shop.example", "https://shop.example"],
    ["http://localhost:3000", "http://localhost:3000"],
    ["HTTPS://Shop.Example:443", "https://shop.example"],
    ["https://shop.example:8443", "https://shop.example:8443"],
  ])("%s is the origin %s", (text, origin) => {
    expect(normalizeOrigin(text)).toBe(origin);
  });

  test.each([
    "https://shop.example/",
    "https://shop.example/path",
    "https://shop.example?x=1",
    "https://user@shop.example",
    "ftp://shop.example",
    "shop.example",
    "*",
    "null",
    "https://",
  ])("%s is refused", (text) => {
    expect(normalizeOrigin(text)).toBeUndefined();
  });
});

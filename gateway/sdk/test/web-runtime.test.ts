import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { es256Key, keySetServer } from "./key-server.ts";

/**
 * On a runtime without Node's built-in modules (an edge runtime), the verifier checks signatures with Web Crypto and
 * decodes with `atob`: the same answers as on Node. The SDK is loaded afresh with `process.getBuiltinModule` hidden.
 */

const issuer = "https://api.svc.test";
const organizationId = "org_7f3a";
const issuedAt = Date.parse("2026-11-28T10:00:00Z");
const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");

let key: Awaited<ReturnType<typeof es256Key>>;
let server: Awaited<ReturnType<typeof keySetServer>>;
let verifier: InstanceType<typeof import("../src/index.ts").Verifier>;

beforeAll(async () => {
  key = await es256Key("k1");
  server = await keySetServer([key.jwk]);
  const getBuiltinModule = process.getBuiltinModule;
  vi.resetModules();
  Object.assign(process, { getBuiltinModule: undefined });
  try {
    const { Verifier } = await import("../src/index.ts");
    verifier = new Verifier({ issuer, jwksUrl: server.url, now: () => issuedAt + 5_000 });
  } finally {
    Object.assign(process, { getBuiltinModule });
  }
});
afterAll(() => server.close());

const claims = (nonce: string) => ({
  iss: issuer,
  request_id: "req_0123456789abcdef0123456789abcdef",
  verified: true,
  organization_id: organizationId,
  audience: organizationId,
  nonce,
  issued_at: issuedAt / 1000,
  expires_at: issuedAt / 1000 + 120,
  exp: issuedAt / 1000 + 120,
  trusted: false,
});

describe("verifyAttestation without node:crypto and node:buffer", () => {
  test("accepts a token of the key set, then refuses it as replayed", async () => {
    const token = await key.sign(claims("w1"));
    expect(await verifier.verifyAttestation(token, { organizationId })).toMatchObject({ valid: true });
    expect(await verifier.verifyAttestation(token, { organizationId })).toMatchObject({ reason: "replayed" });
  });

  test("refuses a tampered payload, a critical extension, alg none and garbage", async () => {
    const [header, , signature] = (await key.sign(claims("w2"))).split(".");
    const tampered = `${header}.${b64({ ...claims("w2"), verified: false })}.${signature}`;
    expect(await verifier.verifyAttestation(tampered, { organizationId })).toEqual({
      valid: false,
      reason: "bad_signature",
    });
    const critical = await key.sign(claims("w3"), { crit: ["b64"], b64: true });
    expect(await verifier.verifyAttestation(critical, { organizationId })).toMatchObject({ reason: "bad_signature" });
    const unsecured = `${b64({ alg: "none", kid: "k1" })}.${b64(claims("w4"))}.`;
    expect(await verifier.verifyAttestation(unsecured, { organizationId })).toMatchObject({
      reason: "unsupported_algorithm",
    });
    expect(await verifier.verifyAttestation(`${header}.%%%.${signature}`, { organizationId })).toMatchObject({
      reason: "malformed",
    });
  });
});

import { ManualClock } from "@svc/platform";
import { CredentialKind, Environment } from "@svc/proto/common/v1/caller_pb.js";
import { describe, expect, test } from "vitest";
import { apiKeyResolvers, authenticate } from "../src/credentials/authenticate.ts";
import type { ApiKey } from "../src/credentials/entities.ts";
import type { CredentialResolver } from "../src/credentials/resolver.ts";
import { bearerCredential } from "../src/http/credential.ts";
import type { AuthPolicy } from "../src/http/route.ts";

const clock = new ManualClock("2026-10-20T12:00:00Z");
const random = "Ab3dEf6hIj9lMn2pQr5tUv8xYz1bCd4f";

function keyRow(overrides: Partial<ApiKey>): ApiKey {
  return {
    id: "5d0c3c1e-0000-4000-8000-000000000001",
    organizationId: "0b6f7a52-3a3c-4c1e-9d7e-2f1f5b0c9a11",
    environment: "development",
    type: "secret",
    keyHash: Buffer.alloc(32),
    displayPrefix: "svc_dev_Ab3d",
    allowedOrigins: [],
    allowedGates: ["checkout"],
    createdAt: clock.now(),
    expiresAt: null,
    revokedAt: null,
    ...overrides,
  } as ApiKey;
}

/** The directory's lookup, by the presented text (the real one hashes; tested against Postgres elsewhere). */
const keys = new Map<string, ApiKey>([
  [`svc_dev_${random}`, keyRow({})],
  [`svc_production_${random}`, keyRow({ id: "5d0c3c1e-0000-4000-8000-000000000002", environment: "production" })],
  [`svc_dev_revoked${random.slice(7)}`, keyRow({ revokedAt: clock.now() })],
  [`svc_dev_expired${random.slice(7)}`, keyRow({ expiresAt: new Date(clock.now().getTime() + 1000) })],
  [
    `pk_test_${random}`,
    keyRow({
      id: "5d0c3c1e-0000-4000-8000-000000000003",
      type: "site",
      allowedOrigins: ["https://shop.example"],
      allowedGates: [],
    }),
  ],
  [
    `pk_test_revoked${random.slice(7)}`,
    keyRow({ type: "site", allowedOrigins: ["https://shop.example"], revokedAt: clock.now() }),
  ],
]);
const directory = { findKey: async (credential: string) => keys.get(credential) };
const resolvers = apiKeyResolvers(directory, clock);

const secretOrSite: AuthPolicy = { accepts: ["secret_key", "site_key"] };
const check = (authorization: string | undefined, policy: AuthPolicy = secretOrSite, origin?: string) =>
  authenticate(resolvers, policy, { authorization, origin });

describe("bearer credential", () => {
  test.each([
    ["Bearer abc", "abc"],
    ["bearer abc", "abc"],
    ["Bearer   abc  ", "abc"],
  ])("%j carries %j", (header, credential) => {
    expect(bearerCredential(header)).toBe(credential);
  });

  test.each([undefined, "", "abc", "svc_dev_x", "Basic abc", "Bearer", "Bearer ", "Bearerabc", "Bearer a b"])(
    "%j carries none",
    (header) => {
      expect(bearerCredential(header)).toBeUndefined();
    },
  );
});

describe("authenticate", () => {
  test("a secret key becomes the caller", async () => {
    const result = await check(`Bearer svc_dev_${random}`);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.credential.kind).toBe("secret_key");
    expect(result.credential.allowedGates).toEqual(["checkout"]);
    const { caller } = result.credential;
    expect([caller.organizationId, caller.environment, caller.credentialId, caller.credentialKind]).toEqual([
      "0b6f7a52-3a3c-4c1e-9d7e-2f1f5b0c9a11",
      Environment.DEVELOPMENT,
      "5d0c3c1e-0000-4000-8000-000000000001",
      CredentialKind.SECRET_KEY,
    ]);
  });

  test("the production environment comes from the key", async () => {
    const result = await check(`Bearer svc_production_${random}`);
    expect(result.ok && result.credential.caller.environment).toBe(Environment.PRODUCTION);
  });

  test("a key without the Bearer prefix is refused as missing", async () => {
    expect(await check(`svc_dev_${random}`)).toMatchObject({ ok: false, failure: "missing_bearer" });
    expect(await check(undefined)).toMatchObject({ ok: false, failure: "missing_bearer" });
    expect(await check(`Token svc_dev_${random}`)).toMatchObject({ ok: false, failure: "missing_bearer" });
  });

  test.each([
    ["an unknown key", `svc_dev_${random.replace("A", "B")}`, "invalid_key"],
    ["a key of the wrong length", "svc_dev_short", "invalid_key"],
    ["a revoked key", `svc_dev_revoked${random.slice(7)}`, "revoked_key"],
    ["an unknown site key", `pk_test_${random.replace("A", "B")}`, "invalid_site_key"],
    ["a revoked site key", `pk_test_revoked${random.slice(7)}`, "revoked_site_key"],
    ["a form nobody issues", "abc.def", "unrecognized_credential"],
  ])("%s is refused", async (_label, credential, failure) => {
    expect(await check(`Bearer ${credential}`, secretOrSite, "https://shop.example")).toMatchObject({
      ok: false,
      failure,
    });
  });

  test("a key stops working at its expiry", async () => {
    const at = new ManualClock(clock.now());
    const expiring = authenticate(apiKeyResolvers(directory, at), secretOrSite, {
      authorization: `Bearer svc_dev_expired${random.slice(7)}`,
      origin: undefined,
    });
    expect((await expiring).ok).toBe(true);
    at.advance(1000);
    const expired = await authenticate(apiKeyResolvers(directory, at), secretOrSite, {
      authorization: `Bearer svc_dev_expired${random.slice(7)}`,
      origin: undefined,
    });
    expect(expired).toMatchObject({ ok: false, failure: "expired_key", message: "the API key has expired" });
  });

  test("a site key needs an allowed Origin", async () => {
    const allowed = await check(`Bearer pk_test_${random}`, secretOrSite, "https://shop.example");
    expect(
      allowed.ok && [allowed.credential.kind, allowed.credential.origin, allowed.credential.caller.credentialKind],
    ).toEqual(["site_key", "https://shop.example", CredentialKind.SITE_KEY]);
    expect(await check(`Bearer pk_test_${random}`)).toMatchObject({ ok: false, failure: "origin_required" });
    expect(await check(`Bearer pk_test_${random}`, secretOrSite, "https://evil.example")).toMatchObject({
      ok: false,
      failure: "origin_not_allowed",
    });
    expect(await check(`Bearer pk_test_${random}`, secretOrSite, "https://shop.example:8443")).toMatchObject({
      ok: false,
      failure: "origin_not_allowed",
    });
  });

  test("a kind the route does not take is refused before any lookup", async () => {
    let looked = false;
    const watching = apiKeyResolvers(
      {
        findKey: async () => {
          looked = true;
          return undefined;
        },
      },
      clock,
    );
    const result = await authenticate(
      watching,
      { accepts: ["secret_key"] },
      { authorization: `Bearer pk_test_${random}`, origin: "https://shop.example" },
    );
    expect(result).toEqual({
      ok: false,
      failure: "credential_not_accepted",
      message: "this operation takes a secret API key, not a site key",
    });
    expect(looked).toBe(false);
  });

  test("resolvers of other services' credentials plug in by prefix", async () => {
    const grants: CredentialResolver = {
      kind: "grant_token",
      recognizes: (c) => c.startsWith("svcs_"),
      resolve: async () => ({ ok: false, failure: "invalid_key", message: "grant token invalid, expired or used" }),
    };
    const result = await authenticate(
      [...resolvers, grants],
      { accepts: ["grant_token"] },
      { authorization: `Bearer svcs_${random}`, origin: undefined },
    );
    expect(result).toMatchObject({ ok: false, message: "grant token invalid, expired or used" });
    const refused = await authenticate(
      [...resolvers, grants],
      { accepts: ["grant_token"] },
      { authorization: `Bearer svc_dev_${random}`, origin: undefined },
    );
    expect(refused).toMatchObject({ ok: false, failure: "credential_not_accepted" });
  });
});

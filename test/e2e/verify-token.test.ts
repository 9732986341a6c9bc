import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createInternalClient } from "@svc/platform";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { createRemoteJWKSet, customFetch, decodeProtectedHeader, jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";

/**
 * Issue 2's vertical end to end: tokens minted by the signing service, checked through the public
 * gateway, and verified independently with jose against the key set the gateway serves.
 */
const afterReplayCutoff = "2026-11-20T12:00:00Z";
const beforeReplayCutoff = "2026-11-14T12:00:00Z";
const issuer = "http://127.0.0.1:8080";

describe("verify-token and the key set through the gateway", () => {
  let mesh: TestMesh;
  let signing: ReturnType<typeof createInternalClient<typeof SigningService>>;
  const organizationId = crypto.randomUUID();

  beforeAll(async () => {
    // Time only moves forward in this file: a key is unpublished before the instant it was published.
    mesh = await startTestMesh("verify", { only: ["signing"], clockAt: beforeReplayCutoff });
    signing = createInternalClient(SigningService, mesh.urls.signing!);
  });
  afterAll(() => mesh?.stop());

  /** The instant the mesh's clock reads; only ever moved forward. */
  let now = new Date(beforeReplayCutoff);
  const moveClock = (to: Date | string) => {
    now = new Date(to);
    mesh.setClock(now);
  };

  let sequence = 0;
  const mint = async (fields: { audience?: string; trusted?: boolean } = {}) => {
    const requestId = `req_${(++sequence).toString(16).padStart(32, "0")}`;
    const { token } = await signing.signAttestation({
      requestId,
      verified: true,
      organizationId,
      verifiedAt: timestampFromDate(now),
      audience: fields.audience,
      trusted: fields.trusted ?? false,
      trustedSince: fields.trusted ? timestampFromDate(new Date("2026-10-01T00:00:00Z")) : undefined,
      lastPassAt: fields.trusted ? timestampFromDate(now) : undefined,
    });
    return { token, requestId };
  };
  const verify = async (body: unknown) => {
    const response = await mesh.fetch(`${mesh.gatewayUrl}/v1/sdk/verify-token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(200);
    return (await response.json()).data.data;
  };

  it("before 15 November 2026 a second check was flagged but still valid", async () => {
    const { token } = await mint();
    await verify({ token });
    expect(await verify({ token })).toMatchObject({ valid: true, replayed: true, verdict: "pass" });
    moveClock(afterReplayCutoff);
  });

  it("a valid token verifies once through the gateway and independently with jose", async () => {
    const { token, requestId } = await mint({ trusted: true });
    const result = await verify({ token });
    expect(result).toMatchObject({ valid: true, verdict: "pass", replayed: false });
    expect(result.reason).toBeUndefined();
    expect(result.claims).toMatchObject({
      request_id: requestId,
      verified: true,
      organization_id: organizationId,
      trusted: true,
      trusted_since: "2026-10-01T00:00:00.000Z",
    });

    const keySet = createRemoteJWKSet(new URL(`${mesh.gatewayUrl}/.well-known/jwks.json`), {
      [customFetch]: mesh.fetch,
    });
    const { payload, protectedHeader } = await jwtVerify(token, keySet, {
      issuer,
      algorithms: ["ES256"],
      currentDate: new Date(afterReplayCutoff),
    });
    expect(protectedHeader.alg).toBe("ES256");
    expect(payload.expires_at).toBe((payload.issued_at as number) + 120);
  });

  it("a second check is flagged as a replay and, since 15 November 2026, is invalid", async () => {
    const { token } = await mint();
    expect(await verify({ token })).toMatchObject({ valid: true, replayed: false });
    const second = await verify({ token });
    expect(second).toMatchObject({ valid: false, replayed: true, reason: "replayed" });
    expect(second.verdict).toBeUndefined();
    expect(second.claims.organization_id).toBe(organizationId);
  });

  it("a token issued for one organization is invalid for another audience", async () => {
    const { token } = await mint({ audience: organizationId });
    expect(await verify({ token, audience: crypto.randomUUID() })).toMatchObject({
      valid: false,
      reason: "audience_mismatch",
    });
    const { token: unbound } = await mint();
    expect(await verify({ token: unbound, audience: crypto.randomUUID() })).toMatchObject({
      valid: false,
      reason: "audience_mismatch",
    });
    const { token: own } = await mint({ audience: organizationId });
    expect(await verify({ token: own, audience: organizationId })).toMatchObject({ valid: true });
  });

  it("a tampered payload, alg none and a wrong issuer are invalid with their reasons", async () => {
    const { token } = await mint();
    const [header, payload, signature] = token.split(".");
    const claims = JSON.parse(Buffer.from(payload!, "base64url").toString());
    const forged = Buffer.from(JSON.stringify({ ...claims, organization_id: "someone-else" })).toString("base64url");
    const tampered = await verify({ token: `${header}.${forged}.${signature}` });
    expect(tampered).toMatchObject({ valid: false, reason: "bad_signature" });
    expect(tampered.claims).toBeUndefined();

    const none = Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url");
    expect(await verify({ token: `${none}.${payload}.` })).toMatchObject({
      valid: false,
      reason: "unsupported_algorithm",
    });

    await mesh.restart("signing", { SIGNING_ISSUER: "https://impostor.example" });
    const { token: foreign } = await mint();
    await mesh.restart("signing", { SIGNING_ISSUER: issuer });
    expect(await verify({ token: foreign })).toMatchObject({ valid: false, reason: "wrong_issuer" });
  });

  it("an expired token is invalid and says when it expired", async () => {
    const { token } = await mint();
    const expiresAt = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()).expires_at as number;
    moveClock(new Date(new Date(afterReplayCutoff).getTime() + 121_000));
    const result = await verify({ token });
    expect(result).toMatchObject({
      valid: false,
      reason: "expired",
      expired_at: new Date(expiresAt * 1000).toISOString(),
    });
    expect(result.claims.request_id).toMatch(/^req_/);
  });

  it("serves the key set outside the envelope with the spec's cache header", async () => {
    const response = await mesh.fetch(`${mesh.gatewayUrl}/.well-known/jwks.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("public, max-age=300");
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    const body = await response.json();
    expect(Object.keys(body)).toEqual(["keys"]);
    expect(body.keys[0]).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig" });
    expect(body.keys[0].d).toBeUndefined();
  });

  it("a rotation publishes the next key first and keeps earlier tokens verifiable", async () => {
    const before = await mint();
    const oldKid = decodeProtectedHeader(before.token).kid;
    const rotation = await mesh.console.rotateSigningKeys({});
    expect(rotation.kid).not.toBe(oldKid);
    // One key-set cache lifetime after the rotation, read from the mesh's clock.
    expect(Number(rotation.signsFrom!.seconds) - Math.floor(new Date(afterReplayCutoff).getTime() / 1000)).toBe(
      121 + 300,
    );

    // Published at once, signing only after one key-set cache lifetime.
    const published = (await (await mesh.fetch(`${mesh.gatewayUrl}/.well-known/jwks.json`)).json()).keys.map(
      (k: { kid: string }) => k.kid,
    );
    expect(published).toEqual(expect.arrayContaining([oldKid, rotation.kid]));
    expect(decodeProtectedHeader((await mint()).token).kid).toBe(oldKid);
    expect(await verify({ token: before.token })).toMatchObject({ valid: true });

    const activation = new Date(timestampDate(rotation.signsFrom!).getTime() + 1000);
    moveClock(activation);
    const after = await mint();
    expect(decodeProtectedHeader(after.token).kid).toBe(rotation.kid);
    const keySet = createRemoteJWKSet(new URL(`${mesh.gatewayUrl}/.well-known/jwks.json`), {
      cacheMaxAge: 0,
      [customFetch]: mesh.fetch,
    });
    await expect(jwtVerify(after.token, keySet, { issuer, currentDate: activation })).resolves.toBeDefined();
    const stillPublished = (await (await mesh.fetch(`${mesh.gatewayUrl}/.well-known/jwks.json`)).json()).keys.map(
      (k: { kid: string }) => k.kid,
    );
    expect(stillPublished).toContain(oldKid);
  });

  it("bad input is a 400 InputValidationError that names the field, never a crash", async () => {
    const missing = await mesh.fetch(`${mesh.gatewayUrl}/v1/sdk/verify-token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(missing.status).toBe(400);
    const body = await missing.json();
    expect(body).toMatchObject({ code: "InputValidationError", input: {} });
    expect(body.errors[0].propertyPath).toBe("token");

    const malformed = await mesh.fetch(`${mesh.gatewayUrl}/v1/sdk/verify-token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{not json",
    });
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).code).toBe("InputValidationError");

    expect(await verify({ token: "not-a-token" })).toMatchObject({ valid: false, reason: "malformed" });
  });
});

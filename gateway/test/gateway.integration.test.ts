import { randomBytes, randomUUID } from "node:crypto";
import { toBinary } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { type Database, ManualClock, openDatabase, openStatementPool } from "@svc/platform";
import { CredentialKind, Environment } from "@svc/proto/common/v1/caller_pb.js";
import { KeyType, ListKeysResponseSchema } from "@svc/proto/console/v1/console_pb.js";
import { KeyState } from "@svc/proto/signing/v1/signing_pb.js";
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { apiKeyResolvers, authenticate } from "../src/credentials/authenticate.ts";
import { CredentialDirectory } from "../src/credentials/directory.ts";
import { entities } from "../src/credentials/entities.ts";
import { idempotencyKeyLifetimeMs } from "../src/idempotency/idempotency-key.ts";
import { idempotencyLeaseMs } from "../src/idempotency/idempotency-stage.ts";
import { IdempotencyStore, sweepExpiredKeys } from "../src/idempotency/idempotency-store.ts";
import { migrations } from "../src/migrations/index.ts";
import { type RunningGateway, startGateway } from "../src/server.ts";
import { closedPort, issuer, memoryLogger, startTestMesh, type TestMesh } from "./support.ts";

const clock = new ManualClock("2026-10-20T12:00:00Z");
let mesh: TestMesh;

beforeAll(async () => {
  mesh = await startTestMesh("gateway", clock);
});
afterAll(() => mesh?.stop());

const base64url = (json: unknown) => Buffer.from(JSON.stringify(json)).toString("base64url");
const decodeSegment = (segment: string) => JSON.parse(Buffer.from(segment, "base64url").toString("utf8"));

async function signToken(organizationId: string, requestId = `req_${"a".repeat(32)}`): Promise<string> {
  const signed = await mesh.signing.signAttestation({
    requestId,
    verified: true,
    organizationId,
    verifiedAt: timestampFromDate(clock.now()),
  });
  return signed.token;
}

const verifyToken = async (body: unknown, headers: Record<string, string> = {}, gatewayUrl = mesh.gateway.url) => {
  const response = await fetch(`${gatewayUrl}/v1/sdk/verify-token`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return {
    status: response.status,
    json: await response.json(),
    replayed: response.headers.get("idempotent-replayed"),
  };
};

const connectCode = async (call: Promise<unknown>): Promise<Code | undefined> => {
  try {
    await call;
    return undefined;
  } catch (error) {
    return error instanceof ConnectError ? error.code : undefined;
  }
};

describe("console service", () => {
  test("creates an organization and keys of every form, shown once and listed without secrets", async () => {
    const { organizationId } = await mesh.console.createOrganization({ name: "Acme" });
    expect(organizationId).toMatch(/^[0-9a-f-]{36}$/);

    const secret = await mesh.console.createKey({
      organizationId,
      environment: Environment.DEVELOPMENT,
      type: KeyType.SECRET,
      allowedGates: ["checkout"],
    });
    expect(secret.key).toMatch(/^svc_dev_[A-Za-z0-9]{32}$/);
    expect(secret.displayPrefix).toBe(secret.key.slice(0, 12));
    const production = await mesh.console.createKey({
      organizationId,
      environment: Environment.PRODUCTION,
      type: KeyType.SECRET,
    });
    expect(production.key).toMatch(/^svc_production_[A-Za-z0-9]{32}$/);
    const site = await mesh.console.createKey({
      organizationId,
      environment: Environment.PRODUCTION,
      type: KeyType.SITE,
      allowedOrigins: ["https://Shop.Example", "https://shop.example"],
    });
    expect(site.key).toMatch(/^pk_live_[A-Za-z0-9]{32}$/);
    const test_ = await mesh.console.createKey({
      organizationId,
      environment: Environment.DEVELOPMENT,
      type: KeyType.SITE,
      allowedOrigins: ["http://localhost:3000"],
    });
    expect(test_.key).toMatch(/^pk_test_/);

    // Keys made in the same instant have no order among themselves.
    const listed = await mesh.console.listKeys({ organizationId });
    const keys = [...listed.keys].sort(
      (a, b) =>
        [secret, production, site, test_].findIndex((k) => k.keyId === a.keyId) -
        [secret, production, site, test_].findIndex((k) => k.keyId === b.keyId),
    );
    expect(
      keys.map((k) => [k.keyId, k.type, k.environment, k.displayPrefix, k.allowedOrigins, k.allowedGates, k.revoked]),
    ).toEqual([
      [secret.keyId, KeyType.SECRET, Environment.DEVELOPMENT, secret.displayPrefix, [], ["checkout"], false],
      [production.keyId, KeyType.SECRET, Environment.PRODUCTION, production.displayPrefix, [], [], false],
      [site.keyId, KeyType.SITE, Environment.PRODUCTION, site.displayPrefix, ["https://shop.example"], [], false],
      [test_.keyId, KeyType.SITE, Environment.DEVELOPMENT, test_.displayPrefix, ["http://localhost:3000"], [], false],
    ]);
    expect(timestampDate(keys[0]!.createdAt!)).toEqual(clock.now());
    const wire = Buffer.from(toBinary(ListKeysResponseSchema, listed)).toString("latin1");
    for (const { key } of [secret, production, site, test_]) expect(wire).not.toContain(key.slice(12));
  });

  test("revokes a key once; revoking again keeps the first time", async () => {
    const { organizationId } = await mesh.console.createOrganization({ name: "Revoker" });
    const { keyId } = await mesh.console.createKey({
      organizationId,
      environment: Environment.DEVELOPMENT,
      type: KeyType.SECRET,
    });
    const first = await mesh.console.revokeKey({ keyId });
    expect(timestampDate(first.revokedAt!)).toEqual(clock.now());
    clock.advance(5000);
    const again = await mesh.console.revokeKey({ keyId });
    expect(timestampDate(again.revokedAt!)).toEqual(timestampDate(first.revokedAt!));
    expect((await mesh.console.listKeys({ organizationId })).keys[0]!.revoked).toBe(true);
  });

  test("refuses what is not a valid key request", async () => {
    const { organizationId } = await mesh.console.createOrganization({ name: "Strict" });
    const dev = Environment.DEVELOPMENT;
    const cases: [string, () => Promise<unknown>, Code][] = [
      ["empty name", () => mesh.console.createOrganization({ name: "  " }), Code.InvalidArgument],
      [
        "site key without origin",
        () => mesh.console.createKey({ organizationId, environment: dev, type: KeyType.SITE }),
        Code.InvalidArgument,
      ],
      [
        "origin with a path",
        () =>
          mesh.console.createKey({
            organizationId,
            environment: dev,
            type: KeyType.SITE,
            allowedOrigins: ["https://a.example/app"],
          }),
        Code.InvalidArgument,
      ],
      [
        "origin without scheme",
        () =>
          mesh.console.createKey({
            organizationId,
            environment: dev,
            type: KeyType.SITE,
            allowedOrigins: ["a.example"],
          }),
        Code.InvalidArgument,
      ],
      [
        "secret key with origins",
        () =>
          mesh.console.createKey({
            organizationId,
            environment: dev,
            type: KeyType.SECRET,
            allowedOrigins: ["https://a.example"],
          }),
        Code.InvalidArgument,
      ],
      ["no environment", () => mesh.console.createKey({ organizationId, type: KeyType.SECRET }), Code.InvalidArgument],
      ["no type", () => mesh.console.createKey({ organizationId, environment: dev }), Code.InvalidArgument],
      [
        "gate key with a space",
        () => mesh.console.createKey({ organizationId, environment: dev, type: KeyType.SECRET, allowedGates: ["a b"] }),
        Code.InvalidArgument,
      ],
      [
        "expiry in the past",
        () =>
          mesh.console.createKey({
            organizationId,
            environment: dev,
            type: KeyType.SECRET,
            expiresAt: timestampFromDate(new Date(clock.now().getTime() - 1)),
          }),
        Code.InvalidArgument,
      ],
      [
        "organization id not a uuid",
        () => mesh.console.createKey({ organizationId: "acme", environment: dev, type: KeyType.SECRET }),
        Code.InvalidArgument,
      ],
      [
        "unknown organization",
        () =>
          mesh.console.createKey({
            organizationId: "0b6f7a52-3a3c-4c1e-9d7e-2f1f5b0c9a11",
            environment: dev,
            type: KeyType.SECRET,
          }),
        Code.NotFound,
      ],
      [
        "list of unknown organization",
        () => mesh.console.listKeys({ organizationId: "0b6f7a52-3a3c-4c1e-9d7e-2f1f5b0c9a11" }),
        Code.NotFound,
      ],
      [
        "revoke unknown key",
        () => mesh.console.revokeKey({ keyId: "0b6f7a52-3a3c-4c1e-9d7e-2f1f5b0c9a11" }),
        Code.NotFound,
      ],
    ];
    for (const [label, call, code] of cases) expect([label, await connectCode(call())]).toEqual([label, code]);
  });
});

describe("credential directory against Postgres", () => {
  let orm: Database;
  let directory: CredentialDirectory;
  const authClock = new ManualClock(clock.now());
  const accepts = { accepts: ["secret_key", "site_key"] } as const;
  const check = (credential: string, origin?: string) =>
    authenticate(apiKeyResolvers(directory, authClock), accepts, { authorization: `Bearer ${credential}`, origin });

  beforeAll(async () => {
    orm = await openDatabase({
      url: mesh.database.url,
      schema: "gateway",
      entities,
      migrations,
      logger: memoryLogger(),
    });
    directory = new CredentialDirectory({
      orm,
      pepper: Buffer.from(mesh.env.GATEWAY_KEY_PEPPER!, "base64"),
      clock: authClock,
    });
  });
  afterAll(() => orm?.close(true));

  test("a key the console issued authenticates as its organization, environment and id", async () => {
    const { organizationId } = await mesh.console.createOrganization({ name: "Auth" });
    const { key, keyId } = await mesh.console.createKey({
      organizationId,
      environment: Environment.DEVELOPMENT,
      type: KeyType.SECRET,
    });
    const result = await check(key);
    expect(
      result.ok && [
        result.credential.caller.organizationId,
        result.credential.caller.environment,
        result.credential.caller.credentialId,
        result.credential.caller.credentialKind,
      ],
    ).toEqual([organizationId, Environment.DEVELOPMENT, keyId, CredentialKind.SECRET_KEY]);
    expect(await check(key.slice(0, -1) + (key.endsWith("a") ? "b" : "a"))).toMatchObject({
      ok: false,
      failure: "invalid_key",
    });
  });

  test("a production key is accepted in its svc_prod_ spelling too", async () => {
    const { organizationId } = await mesh.console.createOrganization({ name: "Prod" });
    const { key, keyId } = await mesh.console.createKey({
      organizationId,
      environment: Environment.PRODUCTION,
      type: KeyType.SECRET,
    });
    const short = key.replace(/^svc_production_/, "svc_prod_");
    expect(short).not.toBe(key);
    for (const spelling of [key, short]) {
      const result = await check(spelling);
      expect(result.ok && [result.credential.caller.credentialId, result.credential.caller.environment]).toEqual([
        keyId,
        Environment.PRODUCTION,
      ]);
    }
    // The random part under another environment's prefix is another key.
    expect(await check(key.replace(/^svc_production_/, "svc_dev_"))).toMatchObject({
      ok: false,
      failure: "invalid_key",
    });
  });

  test("revoked and expired keys are refused", async () => {
    const { organizationId } = await mesh.console.createOrganization({ name: "Lifecycle" });
    const revoked = await mesh.console.createKey({
      organizationId,
      environment: Environment.DEVELOPMENT,
      type: KeyType.SECRET,
    });
    expect((await check(revoked.key)).ok).toBe(true);
    await mesh.console.revokeKey({ keyId: revoked.keyId });
    expect(await check(revoked.key)).toMatchObject({ ok: false, failure: "revoked_key" });

    const expiresAt = new Date(clock.now().getTime() + 3_600_000);
    const expiring = await mesh.console.createKey({
      organizationId,
      environment: Environment.DEVELOPMENT,
      type: KeyType.SECRET,
      expiresAt: timestampFromDate(expiresAt),
    });
    authClock.set(new Date(expiresAt.getTime() - 1));
    expect((await check(expiring.key)).ok).toBe(true);
    authClock.set(expiresAt);
    expect(await check(expiring.key)).toMatchObject({ ok: false, failure: "expired_key" });
  });

  test("a site key works only from its allowed origins", async () => {
    const { organizationId } = await mesh.console.createOrganization({ name: "Browser" });
    const { key } = await mesh.console.createKey({
      organizationId,
      environment: Environment.PRODUCTION,
      type: KeyType.SITE,
      allowedOrigins: ["https://shop.example"],
    });
    const allowed = await check(key, "https://shop.example");
    expect(allowed.ok && [allowed.credential.kind, allowed.credential.caller.environment]).toEqual([
      "site_key",
      Environment.PRODUCTION,
    ]);
    expect(await check(key)).toMatchObject({ ok: false, failure: "origin_required" });
    expect(await check(key, "https://other.example")).toMatchObject({ ok: false, failure: "origin_not_allowed" });
  });
});

describe("POST /v1/sdk/verify-token", () => {
  const orgA = "0b6f7a52-3a3c-4c1e-9d7e-2f1f5b0c9a11";
  const orgB = "7c1d9e0f-5b4a-4e3d-8c2b-1a0f9e8d7c6b";

  test("a valid token passes once, then reads replayed but valid before 15 November 2026", async () => {
    const token = await signToken(orgA, `req_${"1".repeat(32)}`);
    const first = await verifyToken({ token });
    expect(first.status).toBe(200);
    expect(first.json.data.data).toMatchObject({ valid: true, verdict: "pass", replayed: false });
    expect(first.json.data.data).not.toHaveProperty("reason");
    expect(first.json.data.data).not.toHaveProperty("expired_at");
    expect(first.json.data.data.claims).toMatchObject({
      request_id: `req_${"1".repeat(32)}`,
      organization_id: orgA,
      verified: true,
      iss: issuer,
    });

    const second = await verifyToken({ token });
    expect(second.json.data.data).toMatchObject({ valid: true, verdict: "pass", replayed: true });
  });

  test("the token verifies on its own against the published key set", async () => {
    const token = await signToken(orgA);
    const keySet = createRemoteJWKSet(new URL(`${mesh.gateway.url}/.well-known/jwks.json`));
    const { payload, protectedHeader } = await jwtVerify(token, keySet, {
      issuer,
      algorithms: ["ES256"],
      currentDate: clock.now(),
    });
    expect(protectedHeader.alg).toBe("ES256");
    expect(payload).toMatchObject({ request_id: `req_${"a".repeat(32)}`, organization_id: orgA });
  });

  test("an audience binds the token to one organization", async () => {
    const token = await signToken(orgA);
    const wrong = await verifyToken({ token, audience: orgB });
    expect(wrong.json.data.data).toMatchObject({ valid: false, reason: "audience_mismatch", replayed: false });
    expect(wrong.json.data.data).not.toHaveProperty("verdict");
    expect(wrong.json.data.data.claims).toMatchObject({ organization_id: orgA });
    expect((await verifyToken({ token, audience: orgA })).json.data.data).toMatchObject({
      valid: true,
      verdict: "pass",
    });
  });

  test("a tampered payload fails the signature and shows no claims", async () => {
    const [header, payload, signature] = (await signToken(orgA)).split(".");
    const forged = base64url({ ...decodeSegment(payload!), organization_id: orgB });
    const { json } = await verifyToken({ token: `${header}.${forged}.${signature}` });
    expect(json.data.data).toEqual({ valid: false, reason: "bad_signature", replayed: false });
  });

  test("alg none is refused", async () => {
    const token = await signToken(orgA);
    const { kid } = decodeProtectedHeader(token);
    const unsigned = `${base64url({ alg: "none", typ: "JWT", kid })}.${token.split(".")[1]}.`;
    const { json } = await verifyToken({ token: unsigned });
    expect(json.data.data).toEqual({ valid: false, reason: "unsupported_algorithm", replayed: false });
  });

  test("text that is no token is a normal invalid result", async () => {
    const { status, json } = await verifyToken({ token: "not-a-token" });
    expect(status).toBe(200);
    expect(json.data.data).toEqual({ valid: false, reason: "malformed", replayed: false });
  });

  test("an expired token says when it expired and still shows its claims", async () => {
    const token = await signToken(orgA);
    const { exp } = decodeSegment(token.split(".")[1]!);
    clock.advance(121_000);
    const { json } = await verifyToken({ token });
    expect(json.data.data).toMatchObject({
      valid: false,
      reason: "expired",
      expired_at: new Date(exp * 1000).toISOString(),
      replayed: false,
    });
    expect(json.data.data.claims).toMatchObject({ organization_id: orgA });
  });

  test("from 15 November 2026 a second check is invalid with reason replayed", async () => {
    clock.set("2026-11-16T09:00:00Z");
    const token = await signToken(orgA);
    expect((await verifyToken({ token })).json.data.data).toMatchObject({
      valid: true,
      verdict: "pass",
      replayed: false,
    });
    const second = (await verifyToken({ token })).json.data.data;
    expect(second).toMatchObject({ valid: false, reason: "replayed", replayed: true });
    expect(second).not.toHaveProperty("verdict");
    expect(second.claims).toMatchObject({ organization_id: orgA });
  });

  test("bad input is an HTTP 400 InputValidationError", async () => {
    const malformed = await verifyToken("{");
    expect(malformed.status).toBe(400);
    expect(malformed.json).toMatchObject({ code: "InputValidationError", errors: [{ propertyPath: "" }] });

    const missing = await verifyToken({ audience: orgA });
    expect(missing.status).toBe(400);
    expect(missing.json).toEqual({
      code: "InputValidationError",
      message: "Input validation failed: token is required",
      input: { audience: orgA },
      errors: [{ propertyPath: "token", invalidValue: null, message: "token is required" }],
    });

    for (const body of [{ token: "" }, { token: 42 }, { token: "x".repeat(8193) }, { token: "t", audience: 7 }]) {
      const { status, json } = await verifyToken(body);
      expect([JSON.stringify(body).slice(0, 40), status]).toEqual([JSON.stringify(body).slice(0, 40), 400]);
      expect(json.errors).toHaveLength(1);
    }
  });

  test("takes no credential: an Authorization header is ignored", async () => {
    const token = await signToken(orgA);
    const response = await fetch(`${mesh.gateway.url}/v1/sdk/verify-token`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "garbage" },
      body: JSON.stringify({ token }),
    });
    expect((await response.json()).data.data.valid).toBe(true);
  });
});

describe("public key set", () => {
  test("is plain JSON outside the envelope, cacheable for 300 seconds, with public keys only", async () => {
    const response = await fetch(`${mesh.gateway.url}/.well-known/jwks.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("public, max-age=300");
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    const { keys } = await response.json();
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) {
      expect(Object.keys(key).sort()).toEqual(["alg", "crv", "kid", "kty", "use", "x", "y"]);
      expect(key).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig" });
    }
  });

  test("a rotated key is served the moment signing publishes it, before it signs", async () => {
    const before = (await (await fetch(`${mesh.gateway.url}/.well-known/jwks.json`)).json()).keys.map(
      (k: { kid: string }) => k.kid,
    );
    const rotated = await mesh.console.rotateSigningKeys({});
    expect(rotated.keys.find((k) => k.kid === rotated.kid)?.state).toBe(KeyState.PENDING);
    expect(timestampDate(rotated.signsFrom!).getTime()).toBeGreaterThan(clock.now().getTime());
    expect(before).not.toContain(rotated.kid);

    const refreshed = (await (await fetch(`${mesh.gateway.url}/.well-known/jwks.json`)).json()).keys.map(
      (k: { kid: string }) => k.kid,
    );
    expect(refreshed).toContain(rotated.kid);
    expect(refreshed).toEqual(expect.arrayContaining(before));
  });

  test("/healthz and /readyz report the gateway ready", async () => {
    expect((await fetch(`${mesh.gateway.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${mesh.gateway.url}/readyz`);
    expect([ready.status, await ready.json()]).toEqual([200, { status: "ready", service: "gateway" }]);
  });
});

describe("a gateway whose signing service is down", () => {
  let lonely: RunningGateway;
  let signingPort: number;
  const logged = memoryLogger();
  beforeAll(async () => {
    signingPort = await closedPort();
    lonely = await startGateway({
      env: { ...mesh.env, GATEWAY_SIGNING_URL: `http://127.0.0.1:${signingPort}` },
      clock,
      logger: logged,
    });
  });
  afterAll(() => lonely?.stop());

  test("answers the key set with 503 jwks_unavailable when it has no copy", async () => {
    const response = await fetch(`${lonely.url}/.well-known/jwks.json`);
    expect(response.status).toBe(503);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(await response.json()).toEqual({ keys: [], error: "jwks_unavailable" });
  });

  test("answers verify-token with data.error 502, and is not ready", async () => {
    // A well-formed token: its key and its ledger entry are signing's to give (text that is no token is
    // answered `malformed` without asking anyone).
    const token = await signToken("0b6f7a52-3a3c-4c1e-9d7e-2f1f5b0c9a12", `req_${"6".repeat(32)}`);
    const response = await fetch(`${lonely.url}/v1/sdk/verify-token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token }),
    });
    expect(response.status).toBe(200);
    expect((await response.json()).data.error).toEqual({
      statusCode: 502,
      message: "a service behind the gateway did not answer; retry with backoff",
    });
    // The partner reads only "retry"; the operator's log says which service failed, and how.
    const failure = logged.entries.find((entry) => entry.msg === "a service behind the gateway failed");
    expect(failure).toMatchObject({ level: "warn", operation: "verifyToken", error_status: 502 });
    expect(String(failure?.error)).toContain(`127.0.0.1:${signingPort}`);
    const ready = await fetch(`${lonely.url}/readyz`);
    expect(ready.status).toBe(503);
    expect((await ready.json()).error).toMatch(/^signing unreachable/);
  });

  test("a 502 under an Idempotency-Key is not its answer: the retry runs, on any replica, and that answer is replayed", async () => {
    const token = await signToken("0b6f7a52-3a3c-4c1e-9d7e-2f1f5b0c9a11", `req_${"7".repeat(32)}`);
    const key = { "Idempotency-Key": "retry-after-502" };
    const failures = () => logged.entries.filter((entry) => entry.msg === "a service behind the gateway failed").length;
    const before = failures();
    for (let i = 1; i <= 2; i++) {
      const failed = await verifyToken({ token }, key, lonely.url);
      expect(failed.json.data.error.statusCode).toBe(502);
      expect(failed.replayed).toBeNull();
      expect(failures()).toBe(before + i);
    }
    // The same key on the healthy replica, which shares the key table: it runs and answers.
    const answered = await verifyToken({ token }, key);
    expect(answered.json.data.data).toMatchObject({ valid: true, replayed: false });
    expect(answered.replayed).toBeNull();
    // The replica whose signing is down now replays that answer without asking signing.
    const replayed = await verifyToken({ token }, key, lonely.url);
    expect(replayed.json).toEqual(answered.json);
    expect(replayed.replayed).toBe("true");
    expect(failures()).toBe(before + 2);
  });
});

describe("Idempotency-Key", () => {
  const org = "2a4c6e80-1b3d-4f5a-8c7e-9d0b1a2c3e4f";
  const key = (value: string) => ({ "Idempotency-Key": value });

  test("verify-token: the same key and body replay the first answer; without the key the check runs again", async () => {
    const token = await signToken(org, `req_${"2".repeat(32)}`);
    const first = await verifyToken({ token }, key("order-1"));
    expect(first.json.data.data).toMatchObject({ valid: true, verdict: "pass", replayed: false });
    expect(first.replayed).toBeNull();
    const replay = await verifyToken({ token }, key("order-1"));
    expect(replay.status).toBe(200);
    expect(replay.json).toEqual(first.json);
    expect(replay.replayed).toBe("true");
    // The key spelled in JSON another way is the same validated request.
    const respelled = await verifyToken(`{ "token" : ${JSON.stringify(token)} }`, key("order-1"));
    expect(respelled.json).toEqual(first.json);
    expect((await verifyToken({ token })).json.data.data).toMatchObject({ valid: false, replayed: true });
    // What is kept names neither the key nor the answer: the row is a keyed hash and a sealed answer.
    const db = new pg.Client({ connectionString: mesh.database.url });
    await db.connect();
    try {
      const { rows } = await db.query(`select * from gateway.idempotency_keys`);
      const text = JSON.stringify(rows.map((row) => Object.values(row).map(String)));
      expect(rows.length).toBeGreaterThan(0);
      for (const secret of ["order-1", token, `req_${"2".repeat(32)}`]) expect(text).not.toContain(secret);
      for (const row of rows)
        for (const value of Object.values(row))
          if (Buffer.isBuffer(value))
            for (const secret of ["order-1", `req_${"2".repeat(32)}`]) expect(value.includes(secret)).toBe(false);
    } finally {
      await db.end();
    }
  });

  test("the same key with a different request is data.error 409 idempotency_key_reused", async () => {
    const token = await signToken(org, `req_${"3".repeat(32)}`);
    await verifyToken({ token }, key("order-2"));
    const reused = await verifyToken({ token, audience: org }, key("order-2"));
    expect(reused.status).toBe(200);
    expect(reused.json.data.error).toEqual({
      statusCode: 409,
      code: "idempotency_key_reused",
      message: "this Idempotency-Key was used with a different request",
    });
  });

  test("verify-token keys are scoped to the token: another token with the same key runs on its own", async () => {
    const one = await signToken(org, `req_${"4".repeat(32)}`);
    const two = await signToken(org, `req_${"5".repeat(32)}`);
    const first = await verifyToken({ token: one }, key("shared"));
    const second = await verifyToken({ token: two }, key("shared"));
    expect(second.replayed).toBeNull();
    expect(second.json.data.data.claims.request_id).toBe(`req_${"5".repeat(32)}`);
    expect(first.json.data.data.claims.request_id).toBe(`req_${"4".repeat(32)}`);
  });

  test("a key is kept 24 hours by the clock, then the same key runs the operation anew", async () => {
    const at = clock.now();
    try {
      const token = await signToken(org, `req_${"6".repeat(32)}`);
      const first = await verifyToken({ token }, key("daily"));
      clock.set(new Date(at.getTime() + 24 * 3600_000 - 1000));
      expect(await verifyToken({ token }, key("daily"))).toMatchObject({ json: first.json, replayed: "true" });
      clock.set(new Date(at.getTime() + 24 * 3600_000));
      const fresh = await verifyToken({ token }, key("daily"));
      expect(fresh.replayed).toBeNull();
      // It ran now: the token, valid at first, has long expired.
      expect(fresh.json.data.data).toMatchObject({ valid: false, reason: "expired" });
    } finally {
      clock.set(at);
    }
  });

  test("a key outside 1-255 printable ASCII is HTTP 400 InputValidationError naming the header", async () => {
    for (const bad of ["", "x".repeat(256), "caf\u00e9"]) {
      const response = await fetch(`${mesh.gateway.url}/v1/sdk/verify-token`, {
        method: "POST",
        headers: { "content-type": "application/json", "Idempotency-Key": JSON.parse(`"${bad}"`) },
        body: JSON.stringify({ token: "a.b.c" }),
      }).catch(() => undefined);
      // fetch itself refuses a header value outside Latin-1, so only the ones it sends are checked.
      if (!response) continue;
      expect(response.status).toBe(400);
      const body = await response.json();
      expect(body).toMatchObject({ code: "InputValidationError", input: { token: "a.b.c" } });
      expect(body.errors).toEqual([
        {
          propertyPath: "Idempotency-Key",
          invalidValue: JSON.parse(`"${bad}"`).slice(0, 255),
          message: "Idempotency-Key must be 1 to 255 printable ASCII characters",
        },
      ]);
    }
  });
});

test("production refuses to start without its own key pepper", async () => {
  await expect(
    startGateway({ env: { SVC_DEPLOYMENT: "production", GATEWAY_PORT: "0" }, logger: memoryLogger() }),
  ).rejects.toThrow(/GATEWAY_KEY_PEPPER is required in production/);
});

describe("the Idempotency-Key table against Postgres", () => {
  // Later than the running gateway's clock: its own sweep (every minute) works on this table, and must find none
  // of these keys expired.
  const at = new Date("2030-10-20T12:00:00Z");
  const later = (ms: number) => new Date(at.getTime() + ms);
  const digest = (text: string) => Buffer.from(text.padEnd(32, "."));
  let pool: ReturnType<typeof openStatementPool>;
  let store: IdempotencyStore;
  beforeAll(() => {
    pool = openStatementPool({ url: mesh.database.url, schema: "gateway", max: 2, logger: memoryLogger() });
    store = new IdempotencyStore(pool);
  });
  afterAll(() => pool?.end());

  const claim = (keyHash: Buffer, request: string, now: Date, claimId = randomUUID()) =>
    store.claim({
      keyHash,
      digest: digest(request),
      claimId,
      now,
      leaseUntil: new Date(now.getTime() + idempotencyLeaseMs),
      expiresAt: new Date(now.getTime() + idempotencyKeyLifetimeMs),
    });

  test("one claim runs; a duplicate meanwhile is told in_use until the lease of a dead runner ends", async () => {
    const keyHash = randomBytes(32);
    const first = await claim(keyHash, "a", at);
    expect(first.kind).toBe("run");
    const racing = await Promise.all([claim(keyHash, "a", later(1)), claim(keyHash, "a", later(1))]);
    expect(racing.map((c) => c.kind)).toEqual(["in_use", "in_use"]);
    expect((await claim(keyHash, "b", later(1))).kind).toBe("reused");
    // The first runner's replica died: after its lease, one retry takes the key over.
    const takeover = await claim(keyHash, "a", later(idempotencyLeaseMs));
    expect(takeover.kind).toBe("run");
    // The dead runner's late write is fenced off; the one that holds the claim stores the answer.
    if (first.kind !== "run" || takeover.kind !== "run") throw new Error("expected claims");
    await store.finish(keyHash, first.claimId, Buffer.from("dead"));
    await store.finish(keyHash, takeover.claimId, Buffer.from("takeover"));
    expect(await claim(keyHash, "a", later(idempotencyLeaseMs + 1))).toEqual({
      kind: "replay",
      sealed: Buffer.from("takeover"),
    });
  });

  test("a released key stays bound to its request and runs again; an expired key is free for any request", async () => {
    const keyHash = randomBytes(32);
    const first = await claim(keyHash, "a", at);
    if (first.kind !== "run") throw new Error("expected a claim");
    await store.release(keyHash, first.claimId);
    expect((await claim(keyHash, "b", later(1))).kind).toBe("reused");
    const retry = await claim(keyHash, "a", later(2));
    if (retry.kind !== "run") throw new Error("expected a claim");
    await store.finish(keyHash, retry.claimId, Buffer.from("a 404"));
    // Retaking a key kept its first use's expiry: 24 hours after `at`, not after the retry.
    expect((await claim(keyHash, "b", later(idempotencyKeyLifetimeMs - 1))).kind).toBe("reused");
    expect((await claim(keyHash, "b", later(idempotencyKeyLifetimeMs))).kind).toBe("run");
  });

  test("the sweep deletes expired keys only, at most a batch at a time", async () => {
    const sweepAt = new Date("2031-01-01T00:00:00Z");
    await pool.query(`delete from idempotency_keys`);
    for (let i = 0; i < 5; i++)
      await claim(randomBytes(32), "a", new Date(sweepAt.getTime() - idempotencyKeyLifetimeMs));
    const fresh = randomBytes(32);
    await claim(fresh, "a", sweepAt);
    expect(await sweepExpiredKeys(pool, sweepAt, 3)).toBe(3);
    expect(await sweepExpiredKeys(pool, sweepAt, 3)).toBe(2);
    expect(await sweepExpiredKeys(pool, sweepAt, 3)).toBe(0);
    const { rows } = await pool.query(`select key_hash from idempotency_keys`);
    expect(rows.map((r) => r.key_hash)).toEqual([fresh]);
  });
});

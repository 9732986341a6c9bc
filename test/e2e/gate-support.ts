import { createClient } from "@connectrpc/connect";
import { AccountConsoleService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { KeyType } from "@svc/proto/console/v1/console_pb.js";
import { GateConsoleService, GateType } from "@svc/proto/gate/v1/gate_pb.js";
import { createRemoteJWKSet, customFetch, type JWTPayload, jwtVerify } from "jose";
import { expect, vi } from "vitest";
import { SoftwareAuthenticator } from "../harness/software-passkey.ts";
import type { TestMesh } from "../harness/test-mesh.ts";

/** `iss` of every token in a test mesh: the gateway's default public origin. */
export const issuer = "http://127.0.0.1:8080";

export interface Reply {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: a JSON reply, read by each test's assertions in the shape that test expects.
  body: any;
}

/**
 * The public API of one mesh, called the way a partner's server or browser would; every answer is held to
 * the OpenAPI document (`mesh.fetch`).
 */
export function partnerApi(mesh: TestMesh) {
  const call = async (
    method: "GET" | "POST",
    path: string,
    input: Record<string, unknown>,
    credential?: string,
    headers: Record<string, string> = {},
  ): Promise<Reply> => {
    const auth: Record<string, string> = credential === undefined ? {} : { authorization: `Bearer ${credential}` };
    const url = new URL(`${mesh.gatewayUrl}/v1${path}`);
    if (method === "GET") for (const [k, v] of Object.entries(input)) url.searchParams.set(k, String(v));
    const init: RequestInit = {
      method,
      headers: {
        ...auth,
        ...headers,
        ...(method === "POST" ? { "content-type": "application/json" } : ({} as Record<string, string>)),
      },
    };
    if (method === "POST") init.body = JSON.stringify(input);
    const response = await mesh.fetch(url, init);
    return { status: response.status, body: await response.json() };
  };
  return {
    post: (path: string, body: Record<string, unknown>, credential?: string, headers?: Record<string, string>) =>
      call("POST", path, body, credential, headers),
    get: (path: string, query: Record<string, unknown>, credential?: string, headers?: Record<string, string>) =>
      call("GET", path, query, credential, headers),
  };
}

/** `data.error` of an answered request (HTTP 200), asserting the envelope. */
export function dataError(reply: Reply) {
  expect(reply.status).toBe(200);
  expect(reply.body.data.error).toBeDefined();
  return reply.body.data.error as { statusCode: number; message: string; code?: string };
}

/** `data.data` (or flat `data`) of a successful answer. */
export function result(reply: Reply, flat = false) {
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  expect(reply.body.data.error, JSON.stringify(reply.body.data.error)).toBeUndefined();
  return flat ? reply.body.data : reply.body.data.data;
}

export const gateConsole = (mesh: TestMesh) => createClient(GateConsoleService, mesh.consoleTransport());

/** Buckets a test raises: these files make far more calls per key than a partner's tier allows. */
const raisedBuckets = ["per_minute", "hourly", "daily", "per_ip"];

/** An organization with keys in both environments (limits raised), ready to call the API. */
export async function newPartner(mesh: TestMesh, name = "Partner") {
  const { organizationId } = await mesh.console.createOrganization({ name });
  const key = async (
    environment: Environment,
    type: KeyType,
    extra: { allowedOrigins?: string[]; allowedGates?: string[] } = {},
  ) => {
    const created = await mesh.console.createKey({
      organizationId,
      environment,
      type,
      allowedOrigins: extra.allowedOrigins ?? [],
      allowedGates: extra.allowedGates ?? [],
    });
    for (const bucket of raisedBuckets) {
      // A bucket the key's tier does not have is refused; the others are raised.
      await mesh.console.setKeyLimits({ keyId: created.keyId, bucket, limit: 1_000_000 }).catch(() => undefined);
    }
    return created.key;
  };
  return {
    organizationId,
    devSecret: await key(Environment.DEVELOPMENT, KeyType.SECRET),
    prodSecret: await key(Environment.PRODUCTION, KeyType.SECRET),
    devSite: await key(Environment.DEVELOPMENT, KeyType.SITE, { allowedOrigins: ["https://shop.example"] }),
    key,
  };
}

/**
 * A new sandbox human that confirms answers a `notarize` request for `reference` on the partner's `login`
 * gate; the human and the request's status record once it is `completed`.
 */
export async function confirmedNotarizeRequest(mesh: TestMesh, partner: { devSecret: string }, reference: string) {
  const api = partnerApi(mesh);
  const { svcUserId } = await createClient(AccountConsoleService, mesh.consoleTransport()).createSandboxHuman({
    environment: Environment.DEVELOPMENT,
    behavior: SandboxBehavior.CONFIRM,
  });
  const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token as string;
  const link = result(
    await api.post(
      "/sdk/create-verification-link",
      { gate: "login", svc_user_id: svcUserId, partner_user_ref: reference, notarize: true },
      grant,
    ),
  );
  const record = await vi.waitFor(
    async () => {
      const status = result(
        await api.get("/verification/status", { request_id: link.request_id }, partner.devSecret),
        true,
      );
      if (status.status !== "completed") throw new Error(`still ${status.status}`);
      return status;
    },
    { timeout: 15_000, interval: 100 },
  );
  return { svcUserId, record };
}

export async function newGate(
  mesh: TestMesh,
  organizationId: string,
  gate: { key: string; environment?: Environment; age?: number; status?: string; notarizeOffer?: boolean },
) {
  const response = await gateConsole(mesh).createGate({
    organizationId,
    environment: gate.environment ?? Environment.DEVELOPMENT,
    key: gate.key,
    type: gate.age === undefined ? GateType.HUMAN : GateType.AGE,
    ageThreshold: gate.age,
    status: gate.status ?? "active",
    notarizeOffer: gate.notarizeOffer ?? false,
  });
  return response.gate!;
}

/** Verifies an attestation token independently, with jose against the key set the gateway serves. */
export async function verifyIndependently(mesh: TestMesh, token: string, at: Date): Promise<JWTPayload> {
  const keySet = createRemoteJWKSet(new URL(`${mesh.gatewayUrl}/.well-known/jwks.json`), {
    cacheMaxAge: 0,
    [customFetch]: mesh.fetch,
  });
  const { payload, protectedHeader } = await jwtVerify(token, keySet, {
    issuer,
    algorithms: ["ES256"],
    currentDate: at,
  });
  expect(protectedHeader.alg).toBe("ES256");
  return payload;
}

/**
 * A real person of the app API (a session of the mesh's development identity provider, not a sandbox
 * human) with a passkey made for `origin`: their id, authenticator and app API caller.
 */
export async function signedInPerson(mesh: TestMesh, origin: string) {
  const api = partnerApi(mesh);
  const { sessionToken } = await mesh.console.mintDevSession({
    issuer: mesh.devIdpIssuer,
    subject: `person-${crypto.randomUUID()}`,
  });
  const authenticator = SoftwareAuthenticator.create();
  const app = (path: string, body: Record<string, unknown> = {}) => api.post(`/app${path}`, body, sessionToken);
  const begun = result(await app("/passkeys/begin-registration", { origin }));
  result(
    await app("/passkeys/finish-registration", {
      ceremony_id: begun.ceremony_id,
      response: authenticator.register(begun.options, origin),
    }),
  );
  const me = result(await api.get("/app/me", {}, sessionToken));
  return { svcUserId: me.svc_user_id as string, authenticator, app };
}

import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createInternalClient } from "@svc/platform";
import { AccountConsoleService, AccountService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { KeyType } from "@svc/proto/console/v1/console_pb.js";
import { WebhookConsoleService } from "@svc/proto/webhook/v1/webhook_pb.js";
import {
  AuthenticationError,
  ConflictError,
  InvalidRequestError,
  NotFoundError,
  RateLimitError,
  Svc,
  SvcError,
  type SvcOptions,
  TrustLayerError,
} from "@svc/sdk";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { typesOf } from "../../gateway/sdk/scripts/generate-types.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { svcctlJson } from "./agent-support.ts";
import { issuer, newGate, newPartner } from "./gate-support.ts";

/**
 * The real mesh driven through the built `@svc/sdk` package, as a partner and an agent would use it: its types
 * match the document the gateway serves, a gate request verified by a sandbox human checks offline and with
 * verify-token, the list pages, `agents.ask` with humans that approve, deny and stay silent, a webhook from
 * webhook-dispatch verifies, a create whose answer was lost is replayed, and each refusal has its class.
 */

const action = { summary_title: "Pay €12.50 to Acme", category: "payments" };

describe("the SDK against the mesh", () => {
  let mesh: TestMesh;
  let partner: Awaited<ReturnType<typeof newPartner>>;
  let svc: Svc;
  let svcctl: ReturnType<typeof svcctlJson>;

  /** A client of the mesh whose every answer is held to the document (`mesh.fetch`). */
  const client = (apiKey: string, options: Partial<SvcOptions> = {}) =>
    new Svc({ apiKey, baseUrl: `${mesh.gatewayUrl}/v1`, issuer, fetch: mesh.fetch, ...options });

  const sandboxHuman = async (behavior: "confirm" | "decline" | "silent") =>
    (await svcctl(["human", "create", "--env", "development", "--behavior", behavior])).svc_user_id as string;

  beforeAll(async () => {
    // A test counts what the expire sweep expired: agentlink's timed sweep must not take the card first.
    mesh = await startTestMesh("sdk", { env: { AGENTLINK_SWEEP_EVERY: "1h" } });
    svcctl = svcctlJson(mesh);
    partner = await newPartner(mesh, "SDK partner");
    await newGate(mesh, partner.organizationId, { key: "signup" });
    svc = client(partner.devSecret);
  });
  afterAll(async () => {
    await mesh?.stop();
  });

  it("was generated from exactly the document the gateway serves", async () => {
    const served = await (await mesh.fetch(`${mesh.gatewayUrl}/v1/openapi.json`)).json();
    const generated = readFileSync(new URL("../../gateway/sdk/src/gen/openapi.ts", import.meta.url), "utf8");
    expect(await typesOf(served), "the SDK's types drifted: run npm run build:sdk").toBe(generated);
  });

  it("reads the environment from the key's prefix", () => {
    expect(svc.environment).toBe("development");
    expect(new Svc({ apiKey: partner.prodSecret }).environment).toBe("production");
  });

  it("creates a session and a link, waits for the sandbox human, and verifies the token offline and with verify-token", async () => {
    const session = await svc.sessions.create({ partner_user_id: "user-verified" });
    expect(session.anchor_grant_token).toMatch(/^svcs_/);
    expect(session.response).toMatchObject({ status: 200, idempotentReplayed: false, attempts: 1 });
    const link = await svc.verifications.createLink({
      grantToken: session.anchor_grant_token as string,
      gate: "signup",
      svc_user_id: await sandboxHuman("confirm"),
    });
    expect(link.request_id).toMatch(/^req_[0-9a-f]{32}$/);
    const record = await vi.waitFor(
      async () => {
        const status = await svc.verifications.status({ request_id: link.request_id as string, wait_seconds: 5 });
        if (status.status !== "completed") throw new Error(`still ${status.status}`);
        return status;
      },
      { timeout: 20_000, interval: 100 },
    );
    const token = record.token as string;
    const offline = await svc.verifyAttestation(token, {
      organizationId: partner.organizationId,
      requestId: link.request_id as string,
      maxAgeSeconds: 120,
    });
    expect(offline).toMatchObject({
      valid: true,
      claims: { request_id: link.request_id, organization_id: partner.organizationId, verified: true },
    });
    expect(await svc.verifyAttestation(token, { organizationId: "org_someone_else" })).toMatchObject({
      valid: false,
    });
    const online = await svc.tokens.verify({ token, audience: partner.organizationId });
    expect(online).toMatchObject({ valid: true, verdict: "pass", claims: { request_id: link.request_id } });
    expect(await svc.tokens.verify({ token })).toMatchObject({ valid: false, reason: "replayed" });
  });

  /** An account of the partner's secured for `reference` by a new sandbox human, `minutesAgo`; its handle. */
  const secured = async (reference: string, minutesAgo: number) => {
    const { svcUserId } = await createClient(AccountConsoleService, mesh.consoleTransport()).createSandboxHuman({
      environment: Environment.DEVELOPMENT,
      behavior: SandboxBehavior.CONFIRM,
    });
    const account = createInternalClient(AccountService, mesh.urls.account as string);
    const { handle } = await account.secureAccount({
      organizationId: partner.organizationId,
      environment: Environment.DEVELOPMENT,
      partnerUserRef: reference,
      svcUserId,
      at: timestampFromDate(new Date(Date.now() - minutesAgo * 60_000)),
    });
    return handle;
  };

  it("walks the secured accounts over more than one page, and gives one page with total", async () => {
    const handles: string[] = [];
    for (const [index, reference] of ["ref-a", "ref-b", "ref-c"].entries())
      handles.push(await secured(reference, 3 - index));
    const page = await svc.securedAccounts.list({ status: "active", limit: 2 }).page();
    expect(page).toMatchObject({ total: 3, environment: "development", limit: 2 });
    expect(page.rows).toHaveLength(2);
    const walked: string[] = [];
    for await (const row of svc.securedAccounts.list({ status: "active", limit: 2 })) walked.push(row.handle as string);
    expect(walked).toEqual([...handles].reverse());
  });

  it("reports a changed sign-in detail: the reference's active link ends, and a repeat is harmless", async () => {
    const handle = await secured("ref-changed", 1);
    const reported = await svc.securedAccounts.reportCredentialChange({ platform_user_ref: "ref-changed" });
    expect(reported).toEqual({ unlinked: true, handle });
    expect(reported.response).toMatchObject({ status: 200, idempotentReplayed: false, attempts: 1 });
    const page = await svc.securedAccounts.list({ platform_user_ref: "ref-changed" }).page();
    expect(page.rows).toEqual([
      expect.objectContaining({
        handle,
        status: "unlinked",
        unlinked_by: "platform",
        unlink_reason: "credential_changed",
      }),
    ]);
    expect(await svc.securedAccounts.reportCredentialChange({ platform_user_ref: "ref-changed" })).toEqual({
      unlinked: false,
    });
    const blank = await svc.securedAccounts
      .reportCredentialChange({ platform_user_ref: " " })
      .catch((error: unknown) => error);
    expect(blank).toBeInstanceOf(InvalidRequestError);
    expect((blank as InvalidRequestError).violations[0]).toMatchObject({ propertyPath: "platform_user_ref" });
    const agentKeyRefused = await client(await agentKey("Report_Bot"))
      .securedAccounts.reportCredentialChange({ platform_user_ref: "ref-changed" })
      .catch((error: unknown) => error);
    expect(agentKeyRefused).toBeInstanceOf(AuthenticationError);
  });

  it("reads a gate's configuration, revokes a pending request and logs an unused grant token out", async () => {
    expect(await svc.partnerConfig.get({ gate: "signup" })).toMatchObject({
      gate: "signup",
      organization: { id: partner.organizationId },
    });
    const session = await svc.sessions.create({ partner_user_id: "user-revoked" });
    await svc.verifications.createLink({ grantToken: session.anchor_grant_token as string, gate: "signup" });
    expect(await svc.verifications.revoke({ gate: "signup", partner_user_id: "user-revoked" })).toMatchObject({
      success: true,
      revoked_count: 1,
    });
    const unused = await svc.sessions.create({ partner_user_id: "user-logged-out" });
    expect(await svc.sessions.logout({ anchor_grant_token: unused.anchor_grant_token as string })).toEqual({
      success: true,
      revoked: true,
    });
    const refused = await svc.verifications
      .createLink({ grantToken: unused.anchor_grant_token as string, gate: "signup" })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AuthenticationError);
  });

  describe("agents", () => {
    let agent: Svc;

    beforeAll(async () => {
      agent = client(await agentKey("Sdk_Bot"));
    });

    it("binds a human and asks them: an approval comes back with its verified proof", async () => {
      const human = await sandboxHuman("confirm");
      const session = await agent.agents.bind();
      await svcctl(["human", "claim", "--human", human, "--code", session.link_code as string]);
      const binding = await agent.agents.checkBinding({ link_code: session.link_code as string });
      expect(binding).toMatchObject({ status: "claimed", opaque_id: expect.any(String) });
      const answer = await agent.agents.ask({ opaque_id: binding.opaque_id as string, action });
      expect(answer).toMatchObject({
        status: "approved",
        verdict: "approve",
        proof: expect.any(String),
        claims: { jti: answer.requestId, sub: binding.opaque_id, amr: ["sandbox"] },
      });
      expect(await agent.verifyProof(answer.proof as string, { card: { action } })).toMatchObject({ valid: true });
      const changed = { action: { ...action, summary_title: "Pay €12.60 to Acme" } };
      expect(await agent.verifyProof(answer.proof as string, { card: changed })).toMatchObject({
        valid: false,
        reason: "card_mismatch",
      });
    });

    it("asks several people at once: the quorum's one proof holds every counted decision", async () => {
      const opaqueIds: string[] = [];
      // Six svcctl runs (create, claim) for three sandbox humans: longer than the default timeout.
      for (const behavior of ["confirm", "silent", "confirm"] as const) {
        const session = await agent.agents.bind();
        await svcctl([
          "human",
          "claim",
          "--human",
          await sandboxHuman(behavior),
          "--code",
          session.link_code as string,
        ]);
        opaqueIds.push(
          (await agent.agents.checkBinding({ link_code: session.link_code as string })).opaque_id as string,
        );
      }
      const answer = await agent.agents.ask({ approvers: opaqueIds, quorum: { approve: 2 }, action });
      expect(answer).toMatchObject({
        status: "approved",
        verdict: "approve",
        claims: {
          jti: answer.requestId,
          sub: opaqueIds[2],
          quorum: { approve: 2, deny: 1 },
          decisions: [
            { sub: opaqueIds[0], verdict: "approve", amr: ["sandbox"] },
            { sub: opaqueIds[2], verdict: "approve", amr: ["sandbox"] },
          ],
        },
      });
      const refused = agent.agents.ask({
        approvers: [opaqueIds[0] as string, opaqueIds[0] as string],
        quorum: { approve: 1 },
        action,
      });
      await expect(refused).rejects.toMatchObject({ code: "duplicate_approver" });
    }, 90_000);

    it("a denial comes back with its verified proof", async () => {
      const answer = await agent.agents.ask({ svc_user_id: await sandboxHuman("decline"), action });
      expect(answer).toMatchObject({ status: "denied", verdict: "denied", claims: { verdict: "denied" } });
    });

    it("a silent human's card is cancelled when the caller aborts", async () => {
      const controller = new AbortController();
      const requestId = crypto.randomUUID();
      const asked = agent.agents.ask(
        { request_id: requestId, svc_user_id: await sandboxHuman("silent"), action },
        { signal: controller.signal },
      );
      await vi.waitFor(async () => expect(await agent.agents.checkStatus({ request_id: requestId })).toBeDefined());
      controller.abort(new Error("the user closed the chat"));
      await expect(asked).rejects.toThrow("the user closed the chat");
      expect(await agent.agents.checkStatus({ request_id: requestId })).toMatchObject({ status: "cancelled" });
      const again = await agent.agents.cancel({ request_id: requestId });
      expect(again).toMatchObject({ already_resolved: true });
    });

    it("refuses a card the trust layer rejects with a TrustLayerError and an unknown proposal with a NotFoundError", async () => {
      const rejected = await agent.agents
        .inquire({
          request_id: crypto.randomUUID(),
          svc_user_id: await sandboxHuman("silent"),
          action: { ...action, summary_title: "Pay\u202Eevil" },
        })
        .catch((error: unknown) => error);
      expect(rejected).toBeInstanceOf(TrustLayerError);
      expect(rejected).toMatchObject({ statusCode: 422, code: "trust_layer_rejected", retryable: false });
      expect((rejected as TrustLayerError).violations.length).toBeGreaterThan(0);
      const missing = crypto.randomUUID();
      const unknown = await agent.agents.checkStatus({ request_id: missing }).catch((error: unknown) => error);
      expect(unknown).toBeInstanceOf(NotFoundError);
      expect(unknown).toMatchObject({ statusCode: 404, requestId: missing });
    });
  });

  it("verifies a webhook webhook-dispatch delivered", async () => {
    const received: { body: string; headers: IncomingMessage["headers"] }[] = [];
    const receiver = await listen((request, body) => {
      received.push({ body, headers: request.headers });
      return { status: 204 };
    });
    try {
      const webhooks = createClient(WebhookConsoleService, mesh.consoleTransport());
      const { secret } = await webhooks.addEndpoint({
        organizationId: partner.organizationId,
        url: `${receiver.url}/hooks`,
        types: ["agents_ask.resolution.confirmed"],
      });
      const hookBot = client(await agentKey("Hook_Bot"));
      const answer = await hookBot.agents.ask({ svc_user_id: await sandboxHuman("confirm"), action });
      await vi.waitFor(() => expect(received.length).toBeGreaterThan(0), { timeout: 15_000 });
      const delivery = received[0]!;
      const event = svc.webhooks.verify(delivery.body, delivery.headers as Record<string, string>, secret);
      if (event.type !== "agents_ask.resolution.confirmed") throw new Error(`got ${event.type}`);
      expect(event).toMatchObject({ request_id: answer.requestId, outcome: "confirmed" });
      expect(() =>
        svc.webhooks.verify(`${delivery.body} `, delivery.headers as Record<string, string>, secret),
      ).toThrow(SvcError);
    } finally {
      await receiver.close();
    }
  });

  it("retries a create whose answer was lost, and the gateway replays it with the same Idempotency-Key", async () => {
    let dropped = 0;
    const seen: string[] = [];
    const proxy = await listen(async (request, body, socket) => {
      const upstream = await mesh.fetch(`${mesh.gatewayUrl}${request.url}`, {
        method: request.method,
        headers: request.headers as Record<string, string>,
        ...(request.method === "POST" && { body }),
      });
      const text = await upstream.text();
      seen.push(String(request.headers["idempotency-key"]));
      if (request.url === "/v1/sdk/create-session" && dropped++ === 0) {
        socket.destroy();
        return undefined;
      }
      return {
        status: upstream.status,
        body: text,
        headers: { "idempotent-replayed": upstream.headers.get("idempotent-replayed") ?? "" },
      };
    });
    try {
      const behindProxy = client(partner.devSecret, { baseUrl: `${proxy.url}/v1` });
      const session = await behindProxy.sessions.create({ partner_user_id: "user-replayed" });
      expect(session.response).toMatchObject({ idempotentReplayed: true, attempts: 2 });
      expect(seen).toHaveLength(2);
      expect(seen[0]).toBe(seen[1]);
      expect(seen[0]).toBe(session.response.idempotencyKey);
    } finally {
      await proxy.close();
    }
  });

  it("refuses with one class per refusal: AuthenticationError, InvalidRequestError, ConflictError, RateLimitError", async () => {
    const stranger = client("svc_dev_not_a_key_of_ours");
    const unauthenticated = await stranger.sessions.create().catch((error: unknown) => error);
    expect(unauthenticated).toBeInstanceOf(AuthenticationError);
    expect(unauthenticated).toMatchObject({ statusCode: 401 });

    const invalid = await svc.securedAccounts
      .list({ limit: 1000 })
      .page()
      .catch((error: unknown) => error);
    expect(invalid).toBeInstanceOf(InvalidRequestError);
    expect(invalid).toMatchObject({ statusCode: 400, code: "InputValidationError" });
    expect((invalid as InvalidRequestError).violations[0]).toMatchObject({ propertyPath: "limit" });

    const pending = async () =>
      svc.verifications.createLink({
        grantToken: (await svc.sessions.create({ partner_user_id: "user-pending" })).anchor_grant_token as string,
        gate: "signup",
      });
    await pending();
    const conflict = await pending().catch((error: unknown) => error);
    expect(conflict).toBeInstanceOf(ConflictError);
    expect(conflict).toMatchObject({ statusCode: 409 });

    const limited = await mesh.console.createKey({
      organizationId: partner.organizationId,
      environment: Environment.DEVELOPMENT,
      type: KeyType.SECRET,
      allowedOrigins: [],
      allowedGates: [],
    });
    await mesh.console.setKeyLimits({ keyId: limited.keyId, bucket: "per_minute", limit: 1 });
    // The development burst window is 10 s, aligned to the epoch. The clock stands 9 s into one, so the
    // refusal says retry_in 1; the fetch below moves the mesh's clock into the next window once it has
    // carried the refusal, and the SDK's retry after retry_in is the one that passes.
    const windowStart = Math.floor(Date.now() / 10_000) * 10_000;
    mesh.setClock(new Date(windowStart + 9_000));
    const sent: { at: number; status: number; body: { data?: { error?: { retry_in?: number } } } }[] = [];
    const countingFetch: typeof fetch = async (input, init) => {
      const answer = await mesh.fetch(input, init);
      const body = await answer.clone().json();
      sent.push({ at: performance.now(), status: answer.status, body });
      if (answer.status === 403) mesh.setClock(new Date(windowStart + 10_500));
      return answer;
    };
    try {
      const patient = client(limited.key, { timeoutMs: 25_000, fetch: countingFetch });
      await patient.sessions.create();
      const session = await patient.sessions.create();
      expect(session.anchor_grant_token).toMatch(/^svcs_/);
      expect(session.response.attempts).toBe(2);
      const [, refused, retried] = sent;
      expect(refused?.status).toBe(403);
      expect(refused?.body.data?.error?.retry_in).toBe(1);
      expect(retried?.status).toBe(200);
      expect((retried?.at ?? 0) - (refused?.at ?? 0)).toBeGreaterThanOrEqual(950);
    } finally {
      mesh.setClock(null);
    }

    // A production key's refusal is not retried: it throws, saying when the minute's window opens again.
    const production = await mesh.console.createKey({
      organizationId: partner.organizationId,
      environment: Environment.PRODUCTION,
      type: KeyType.SECRET,
      allowedOrigins: [],
      allowedGates: [],
    });
    await mesh.console.setKeyLimits({ keyId: production.keyId, bucket: "per_minute", limit: 1 });
    mesh.setClock(new Date(Math.floor(Date.now() / 60_000) * 60_000 + 1_000));
    try {
      const strict = client(production.key);
      await strict.sessions.create();
      const refused = await strict.sessions.create().catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(RateLimitError);
      expect(refused).toMatchObject({ statusCode: 403, code: "RATE_LIMITED", retryable: false });
      expect((refused as RateLimitError).retryIn).toBeGreaterThan(0);
    } finally {
      mesh.setClock(null);
    }
  });

  it("a silent human's card comes back expired once its ttl_at passes, with no proof", async () => {
    const agent = client(await agentKey("Patient_Bot"));
    const requestId = crypto.randomUUID();
    const asked = agent.agents.ask({
      request_id: requestId,
      svc_user_id: await sandboxHuman("silent"),
      action,
      ttl_seconds: 60,
    });
    const { ttl_at } = await vi.waitFor(() => agent.agents.checkStatus({ request_id: requestId }));
    mesh.setClock(new Date(Date.parse(ttl_at as string) + 1_000));
    try {
      expect((await svcctl(["agent", "sweep", "--limit", "1000"])).expired_count).toBeGreaterThanOrEqual(1);
      expect(await asked).toMatchObject({ requestId, status: "expired", verdict: null, proof: null });
    } finally {
      mesh.setClock(null);
    }
  });

  async function agentKey(name: string) {
    const registered = await svcctl([
      ...["agent", "register", "--org", partner.organizationId, "--env", "development", "--name", name],
      ...["--category", "payments"],
    ]);
    return registered.agent_key as string;
  }
});

type Handler = (
  request: IncomingMessage,
  body: string,
  socket: IncomingMessage["socket"],
) =>
  | { status: number; body?: string; headers?: Record<string, string> }
  | undefined
  | Promise<{ status: number; body?: string; headers?: Record<string, string> } | undefined>;

/** A plain HTTP server on 127.0.0.1: a webhook receiver, or a proxy that may drop an answer (undefined). */
async function listen(handle: Handler) {
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", async () => {
      const answer = await handle(request, Buffer.concat(chunks).toString("utf8"), request.socket);
      if (answer === undefined) return;
      const headers = Object.fromEntries(Object.entries(answer.headers ?? {}).filter(([, value]) => value !== ""));
      response.writeHead(answer.status, { "content-type": "application/json", ...headers }).end(answer.body ?? "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

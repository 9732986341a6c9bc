import { createHash, randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createClient } from "@connectrpc/connect";
import { WebhookConsoleService } from "@svc/proto/webhook/v1/webhook_pb.js";
import { createRemoteJWKSet, customFetch, decodeProtectedHeader, jwtVerify } from "jose";
import pg from "pg";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { SoftwareAuthenticator } from "../harness/software-passkey.ts";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { dataError, issuer, partnerApi, result } from "./gate-support.ts";

/**
 * The person's side of Agents Ask through the gateway against the real mesh: the queued cards a signed-in
 * person sees, the passkey challenge that commits to their decisions, confirm with a software passkey,
 * proofs checked independently with jose (card_digest recomputed from what the app received), the
 * resolution webhooks, all-or-nothing batches, retries by ceremony_id, and sandbox humans answering.
 */
const start = new Date(Date.now() + 60_000);

/** RFC 8785 for the JSON these cards hold (strings, integers, booleans, null, arrays, objects), written here independently. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object")
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(",")}}`;
  return JSON.stringify(value);
}
const sha256url = (...parts: (Buffer | string)[]) => {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return hash.digest("base64url");
};

interface Delivery {
  body: Record<string, unknown>;
}

describe("agents ask: the person confirms, the service signs proofs", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let organizationId: string;
  let receiver: ReturnType<typeof createServer>;
  const deliveries: Delivery[] = [];
  const callbacks: { headers: Record<string, string>; raw: string }[] = [];
  let now = start;
  const moveClock = (ms: number) => {
    now = new Date(now.getTime() + ms);
    mesh.setClock(now);
  };

  const svcctl = async (args: string[]): Promise<Record<string, string>> => {
    const { code, stdout, stderr } = await runSvcctl(mesh, args);
    if (code !== 0) throw new Error(stderr);
    return JSON.parse(stdout);
  };

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const raw = Buffer.concat(chunks).toString();
        if (req.url === "/callback") callbacks.push({ headers: req.headers as Record<string, string>, raw });
        else deliveries.push({ body: JSON.parse(raw) });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    mesh = await startTestMesh("agents_confirm", { clockAt: start });
    api = partnerApi(mesh);
    organizationId = (await mesh.console.createOrganization({ name: "Confirmers" })).organizationId;
    const webhooks = createClient(WebhookConsoleService, mesh.consoleTransport());
    await webhooks.addEndpoint({
      organizationId,
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
      types: ["agents_ask.resolution.confirmed", "agents_ask.resolution.denied"],
    });
  });
  afterAll(async () => {
    await mesh?.stop();
    receiver?.close();
  });

  /** A fresh agent per test: each has its own rate limits. */
  const newAgent = async (name: string) =>
    (
      await svcctl([
        ...["agent", "register", "--org", organizationId, "--env", "development", "--name", name],
        ...["--category", "payments"],
      ])
    ).agent_key as string;

  /** A person with the app: a development-IdP session and a registered software passkey. */
  async function person() {
    const { sessionToken } = await mesh.console.mintDevSession({
      issuer: mesh.devIdpIssuer,
      subject: `person-${randomUUID()}`,
    });
    const authenticator = SoftwareAuthenticator.create();
    const post = (path: string, body: Record<string, unknown> = {}) => api.post(path, body, sessionToken);
    const begun = result(await post("/app/passkeys/begin-registration"));
    result(
      await post("/app/passkeys/finish-registration", {
        ceremony_id: begun.ceremony_id,
        response: authenticator.register(begun.options, issuer),
      }),
    );
    const svcUserId = result(await api.get("/app/me", {}, sessionToken)).svc_user_id as string;
    const cards = async () => result(await api.get("/agentlink/cards", {}, sessionToken)).cards as Card[];
    /** confirm-challenge, the passkey's assertion over it, confirm. */
    const decide = async (decisions: Decision[], extra: Record<string, unknown> = {}) => {
      const challenge = result(await post("/agentlink/confirm-challenge", { decisions }));
      return post("/agentlink/confirm", {
        decisions,
        passkey_assertion: {
          challenge_id: challenge.challenge_id,
          response: authenticator.assert(challenge.options, issuer),
        },
        ...extra,
      });
    };
    return { svcUserId, sessionToken, authenticator, post, cards, decide };
  }

  interface Card {
    id: string;
    request_id: string;
    agent: { id: string; name: string };
    summary_title: string;
    category: string;
    summary_detail: Record<string, unknown> | null;
    trusted_account_id: string | null;
    adaptive_card_payload: Record<string, unknown> | null;
    card_digest: string;
    warnings: unknown[];
  }
  type Decision = { card_id: string; verdict: "approve" | "denied" };

  const inquire = async (agentKey: string, target: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    const requestId = randomUUID();
    const queued = result(
      await api.post(
        "/agentlink/inquire",
        {
          request_id: requestId,
          action: { summary_title: "Pay invoice 2231", category: "payments" },
          ...target,
          ...extra,
        },
        agentKey,
      ),
    );
    return { requestId, cardId: queued.card_id as string };
  };
  const status = async (agentKey: string, requestId: string) =>
    result(await api.get("/agentlink/check-status", { request_id: requestId }, agentKey));
  const keySet = () =>
    createRemoteJWKSet(new URL(`${mesh.gatewayUrl}/.well-known/jwks.json`), {
      cacheMaxAge: 0,
      [customFetch]: mesh.fetch,
    });

  it("binds, shows the card, and signs a proof bound to exactly what the person saw", async () => {
    const agentKey = await newAgent("Pay_Bot");
    const alice = await person();
    const code = result(await api.post("/agent/bind-session", {}, agentKey)).link_code;
    result(await alice.post("/app/agent-bindings/claim", { link_code: code }));
    const opaqueId = result(await api.get("/agent/check-binding", { link_code: code }, agentKey)).opaque_id as string;

    const trustedAccountId = randomUUID();
    const adaptiveCard = {
      type: "AdaptiveCard",
      version: "1.5",
      body: [{ type: "TextBlock", text: "Invoice 2231 from Acme Supplies, due 1 December", wrap: true }],
    };
    const { requestId, cardId } = await inquire(
      agentKey,
      { opaque_id: opaqueId },
      {
        action: {
          summary_title: "Pay invoice 2231",
          category: "payments",
          summary_detail: { label: "Amount", value: "EUR 120.00" },
          trusted_account_id: trustedAccountId,
        },
        adaptive_card_payload: adaptiveCard,
      },
    );

    const [card, ...others] = await alice.cards();
    expect(others).toEqual([]);
    // Every field of the spec's card table at the top level, with id; card_digest and warnings besides.
    expect(card).toEqual({
      id: cardId,
      card_id: cardId,
      request_id: requestId,
      agent: { id: expect.any(String), name: "Pay_Bot", display_name: "Pay_Bot", avatar_asset: null },
      summary_title: "Pay invoice 2231",
      summary_detail: { label: "Amount", value: "EUR 120.00" },
      category: "payments",
      trusted_account_id: trustedAccountId,
      adaptive_card_payload: adaptiveCard,
      status: "queued",
      ttl_at: new Date(now.getTime() + 600_000).toISOString(),
      created_at: now.toISOString(),
      card_digest: expect.any(String),
      warnings: [],
      // A card to this person alone: no quorum.
      quorum: null,
    });
    // What the app received, hashed independently, is what the service stored and will sign.
    const { summary_title, category, summary_detail, trusted_account_id, adaptive_card_payload } = card!;
    const seen = canonical({ summary_title, category, summary_detail, trusted_account_id, adaptive_card_payload });
    expect(sha256url(seen)).toBe(card!.card_digest);

    const decisions: Decision[] = [{ card_id: cardId, verdict: "approve" }];
    const challenge = result(await alice.post("/agentlink/confirm-challenge", { decisions }));
    const document = canonical([{ card_id: cardId, verdict: "approve", card_digest: card!.card_digest }]);
    expect(challenge.decisions_json).toBe(document);
    expect(challenge.options.challenge).toBe(sha256url(Buffer.from(challenge.nonce, "base64url"), document));
    expect(challenge.options.userVerification).toBe("required");

    const confirmed = result(
      await alice.post("/agentlink/confirm", {
        decisions,
        passkey_assertion: {
          challenge_id: challenge.challenge_id,
          response: alice.authenticator.assert(challenge.options, issuer),
        },
      }),
    );
    expect(confirmed).toEqual({
      ceremony_id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      signed_at: expect.any(String),
      resolutions: [{ request_id: requestId, card_id: cardId, token: expect.stringMatching(/^eyJ/) }],
    });
    const token = confirmed.resolutions[0].token as string;

    // Offline, with jose against the served key set: no exp, long after it was signed.
    const { payload } = await jwtVerify(token, keySet(), {
      issuer,
      algorithms: ["ES256"],
      currentDate: new Date(now.getTime() + 400 * 24 * 3600_000),
    });
    expect(payload).toEqual({
      iss: issuer,
      jti: requestId,
      iat: new Date(confirmed.signed_at).getTime() / 1000,
      verdict: "approve",
      ceremony_id: confirmed.ceremony_id,
      card_id: cardId,
      agent_id: card!.agent.id,
      sub: opaqueId,
      card_digest: sha256url(seen),
      amr: ["passkey"],
    });
    expect(decodeProtectedHeader(token).kid).toEqual(expect.any(String));

    expect(await status(agentKey, requestId)).toEqual({
      status: "approved",
      ttl_at: expect.any(String),
      resolved_at: confirmed.signed_at,
      ceremony_id: confirmed.ceremony_id,
      resolution_jwt: token,
      verdict: "approve",
      delivered: false,
      callback_attempts: 0,
    });
    expect(await alice.cards()).toEqual([]);
    // A proof is evidence, not an attestation: verify-token refuses it.
    expect(result(await api.post("/sdk/verify-token", { token }))).toMatchObject({
      valid: false,
      reason: "not_an_attestation",
    });

    const event = await vi.waitFor(
      () => {
        const found = deliveries.find((d) => d.body.request_id === requestId);
        if (!found) throw new Error("no resolution webhook yet");
        return found.body;
      },
      { timeout: 15_000, interval: 100 },
    );
    expect(event).toEqual({
      type: "agents_ask.resolution.confirmed",
      request_id: requestId,
      resolution_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      outcome: "confirmed",
      proof_token: token,
      metadata: {
        card_id: cardId,
        ceremony_id: confirmed.ceremony_id,
        agent_id: card!.agent.id,
        agent_name: "Pay_Bot",
      },
    });

    // A repeat of the same confirm after it applied: 409, the card is no longer queued.
    expect(dataError(await alice.post("/agentlink/confirm-challenge", { decisions })).statusCode).toBe(409);
    expect(dataError(await alice.post("/agentlink/confirm", { decisions })).statusCode).toBe(409);
  });

  it("twenty decisions with one bad card apply nothing; then all twenty share one iat and ceremony_id", async () => {
    const agentKey = await newAgent("Batch_Bot");
    const bob = await person();
    const carol = await person();
    const cards: { requestId: string; cardId: string }[] = [];
    for (let i = 0; i < 20; i += 1) cards.push(await inquire(agentKey, { svc_user_id: bob.svcUserId }));
    const decisions: Decision[] = cards.map(({ cardId }, i) => ({
      card_id: cardId,
      verdict: i % 2 === 0 ? "approve" : "denied",
    }));
    const stillQueued = async () =>
      expect((await bob.cards()).map((c) => c.id).sort()).toEqual(cards.map((c) => c.cardId).sort());

    // Another person's card in the batch: 404 (at the challenge already), nothing applied.
    const carolsCard = await inquire(agentKey, { svc_user_id: carol.svcUserId });
    const withCarols = [...decisions.slice(0, 19), { card_id: carolsCard.cardId, verdict: "approve" as const }];
    expect(dataError(await bob.post("/agentlink/confirm-challenge", { decisions: withCarols })).statusCode).toBe(404);
    expect(dataError(await bob.post("/agentlink/confirm", { decisions: withCarols })).statusCode).toBe(404);
    await stillQueued();

    // A cancelled card: 409; an expired card: 410. Nothing applied either time.
    const cancelled = await inquire(agentKey, { svc_user_id: bob.svcUserId });
    result(await api.post("/agentlink/cancel", { request_id: cancelled.requestId }, agentKey));
    const withCancelled = [...decisions.slice(0, 19), { card_id: cancelled.cardId, verdict: "approve" as const }];
    expect(dataError(await bob.post("/agentlink/confirm-challenge", { decisions: withCancelled })).statusCode).toBe(
      409,
    );
    const shortLived = await inquire(agentKey, { svc_user_id: bob.svcUserId }, { ttl_seconds: 60 });
    const withShortLived = [...decisions.slice(0, 19), { card_id: shortLived.cardId, verdict: "denied" as const }];
    const challenge = result(await bob.post("/agentlink/confirm-challenge", { decisions: withShortLived }));
    moveClock(61_000);
    const late = await bob.post("/agentlink/confirm", {
      decisions: withShortLived,
      passkey_assertion: {
        challenge_id: challenge.challenge_id,
        response: bob.authenticator.assert(challenge.options, issuer),
      },
    });
    expect(dataError(late)).toMatchObject({ statusCode: 410, message: expect.stringContaining("expired") });
    await stillQueued();

    const ceremonyId = randomUUID();
    const confirmed = result(await bob.decide(decisions, { ceremony_id: ceremonyId }));
    expect(confirmed.ceremony_id).toBe(ceremonyId);
    expect(confirmed.resolutions.map((r: { card_id: string }) => r.card_id)).toEqual(decisions.map((d) => d.card_id));
    const proofs = await Promise.all(
      confirmed.resolutions.map(
        async (r: { token: string }) =>
          (await jwtVerify(r.token, keySet(), { issuer, algorithms: ["ES256"], currentDate: now })).payload,
      ),
    );
    expect(new Set(proofs.map((p) => p.iat))).toEqual(new Set([new Date(confirmed.signed_at).getTime() / 1000]));
    expect(new Set(proofs.map((p) => p.ceremony_id))).toEqual(new Set([ceremonyId]));
    expect(proofs.map((p) => p.verdict)).toEqual(decisions.map((d) => d.verdict));
    expect(proofs.every((p) => p.sub === undefined && (p.amr as string[])[0] === "passkey")).toBe(true);
    expect((await status(agentKey, cards[1]!.requestId)).status).toBe("denied");
    expect(await bob.cards()).toEqual([]);

    // Retrying the same confirm with its ceremony_id returns the same resolutions, never new ones.
    const retried = result(await bob.post("/agentlink/confirm", { decisions, ceremony_id: ceremonyId }));
    expect(retried).toEqual(confirmed);
    // The same ceremony_id for other decisions is a conflict.
    const flipped = decisions.map((d) => ({ ...d, verdict: d.verdict === "approve" ? "denied" : "approve" }));
    expect(
      dataError(await bob.post("/agentlink/confirm", { decisions: flipped, ceremony_id: ceremonyId })).statusCode,
    ).toBe(409);
  });

  it("an assertion over other decisions, or none, confirms nothing; another person's session sees none of the cards", async () => {
    const agentKey = await newAgent("Guard_Bot");
    const dave = await person();
    const erin = await person();
    const { requestId, cardId } = await inquire(agentKey, { svc_user_id: dave.svcUserId });

    const challenge = result(
      await dave.post("/agentlink/confirm-challenge", { decisions: [{ card_id: cardId, verdict: "approve" }] }),
    );
    // The passkey signed "approve"; the confirm says "denied": refused, nothing applied.
    const swapped = dataError(
      await dave.post("/agentlink/confirm", {
        decisions: [{ card_id: cardId, verdict: "denied" }],
        passkey_assertion: {
          challenge_id: challenge.challenge_id,
          response: dave.authenticator.assert(challenge.options, issuer),
        },
      }),
    );
    expect(swapped).toMatchObject({ statusCode: 403, message: expect.stringContaining("passkey assertion") });
    // No assertion at all from a real person: refused.
    expect(
      dataError(await dave.post("/agentlink/confirm", { decisions: [{ card_id: cardId, verdict: "approve" }] }))
        .statusCode,
    ).toBe(400);
    expect((await status(agentKey, requestId)).status).toBe("queued");

    expect(await erin.cards()).toEqual([]);
    expect(
      dataError(
        await erin.post("/agentlink/confirm-challenge", { decisions: [{ card_id: cardId, verdict: "approve" }] }),
      ).statusCode,
    ).toBe(404);

    // Malformed input never reaches agentlink.
    for (const decisions of [[], Array.from({ length: 21 }, () => ({ card_id: cardId, verdict: "approve" }))]) {
      expect((await dave.post("/agentlink/confirm", { decisions })).body.code).toBe("InputValidationError");
    }
    expect(
      (await dave.post("/agentlink/confirm", { decisions: [{ card_id: cardId, verdict: "maybe" }] })).body.code,
    ).toBe("InputValidationError");
    // A partner's or agent's credential is not a person's session.
    expect(dataError(await api.get("/agentlink/cards", {}, agentKey)).statusCode).toBe(401);

    // A long-poll held for the card answers as soon as the person decides: before a 1-second long-poll
    // started after the confirm ends (without the wake it would answer only at its 25 s end).
    const checkStatus = (query: Record<string, unknown>, headers?: Record<string, string>) =>
      api.get("/agentlink/check-status", query, agentKey, headers);
    const held = checkStatus({ request_id: requestId, wait_seconds: 25 });
    await expect
      .poll(async () => {
        const reply = await checkStatus({ request_id: requestId }, { "x-svc-include-ratelimit": "true" });
        const inFlight = reply.body._rateLimit.buckets.in_flight;
        return inFlight.limit - inFlight.remaining - 1;
      })
      .toBe(1);
    const denied = result(await dave.decide([{ card_id: cardId, verdict: "denied" }]));
    const other = await inquire(agentKey, { svc_user_id: erin.svcUserId });
    const later = checkStatus({ request_id: other.requestId, wait_seconds: 1 });
    expect(await Promise.race([held.then(() => "held"), later.then(() => "later")])).toBe("held");
    expect(result(await held)).toMatchObject({
      status: "denied",
      verdict: "denied",
      resolution_jwt: denied.resolutions[0].token,
      ceremony_id: denied.ceremony_id,
    });
    expect(result(await later).status).toBe("queued");
  });

  it("confirm-challenge refuses an origin that is not the service's own with a 400 and begins nothing", async () => {
    const agentKey = await newAgent("Origin_Bot");
    const frank = await person();
    const { requestId, cardId } = await inquire(agentKey, { svc_user_id: frank.svcUserId });
    const decisions: Decision[] = [{ card_id: cardId, verdict: "approve" }];
    const db = new pg.Client({ connectionString: mesh.env.SVC_DATABASE_URL });
    await db.connect();
    const assertionsBegun = async () =>
      Number(
        (
          await db.query(
            "select count(*) from account.passkey_ceremony where kind = 'assertion' and svc_user_id = $1",
            [frank.svcUserId],
          )
        ).rows[0].count,
      );
    try {
      for (const origin of ["https://attacker.example", "http://127.0.0.1.attacker.example:8080", "not a url"]) {
        const refused = await frank.post("/agentlink/confirm-challenge", { decisions, origin });
        expect(refused.status).toBe(400);
        expect(refused.body).toMatchObject({
          code: "InputValidationError",
          input: { decisions, origin },
          errors: [
            {
              propertyPath: "origin",
              invalidValue: origin,
              message: `origin must be this service's own origin (on 127.0.0.1), not ${origin}`,
            },
          ],
        });
        expect(refused.body.errors).toHaveLength(1);
      }
      expect(await assertionsBegun()).toBe(0);

      // The service's own origin, and no origin at all, each begin one challenge the passkey can answer.
      const own = result(await frank.post("/agentlink/confirm-challenge", { decisions, origin: issuer }));
      expect(own.options.rpId).toBe("127.0.0.1");
      result(await frank.post("/agentlink/confirm-challenge", { decisions }));
      expect(await assertionsBegun()).toBe(2);
      const confirmed = result(
        await frank.post("/agentlink/confirm", {
          decisions,
          passkey_assertion: {
            challenge_id: own.challenge_id,
            response: frank.authenticator.assert(own.options, issuer),
          },
        }),
      );
      expect(confirmed.resolutions).toHaveLength(1);
      expect((await status(agentKey, requestId)).status).toBe("approved");
    } finally {
      await db.end();
    }
  });

  it("sandbox humans answer by their behaviour through the same path, with amr sandbox; the agent's callback gets the proof", async () => {
    const registered = await svcctl([
      ...["agent", "register", "--org", organizationId, "--env", "development", "--name", "Sandbox_Bot"],
      ...["--category", "payments", "--callback-url"],
      `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/callback`,
    ]);
    const agentKey = registered.agent_key as string;
    const sandboxHuman = async (behavior: string) =>
      (await svcctl(["human", "create", "--env", "development", "--behavior", behavior])).svc_user_id as string;
    const approving = await inquire(agentKey, { svc_user_id: await sandboxHuman("confirm") });
    const denying = await inquire(agentKey, { svc_user_id: await sandboxHuman("decline") });
    const silent = await inquire(agentKey, { svc_user_id: await sandboxHuman("silent") });

    const settled = (requestId: string) =>
      vi.waitFor(
        async () => {
          const state = await status(agentKey, requestId);
          if (state.status === "queued") throw new Error("still queued");
          return state;
        },
        { timeout: 10_000, interval: 100 },
      );
    const approved = await settled(approving.requestId);
    expect(approved).toMatchObject({ status: "approved", verdict: "approve" });
    const { payload } = await jwtVerify(approved.resolution_jwt, keySet(), { issuer, currentDate: now });
    expect(payload).toMatchObject({ verdict: "approve", amr: ["sandbox"], card_id: approving.cardId });
    expect(await settled(denying.requestId)).toMatchObject({ status: "denied", verdict: "denied" });
    // The silent one never answers; by the time the others did, it is still queued.
    expect((await status(agentKey, silent.requestId)).status).toBe("queued");

    // The approval reaches the agent's callback, signed with its own secret, carrying the same proof.
    const callback = await vi.waitFor(
      () => {
        const found = callbacks.find((c) => JSON.parse(c.raw).request_id === approving.requestId);
        if (!found) throw new Error("no callback yet");
        return found;
      },
      { timeout: 15_000, interval: 100 },
    );
    const body = new Webhook(registered.callback_secret as string).verify(callback.raw, callback.headers);
    expect(body).toMatchObject({
      type: "agents_ask.resolution.confirmed",
      outcome: "confirmed",
      proof_token: approved.resolution_jwt,
    });
    await expect
      .poll(async () => (await status(agentKey, approving.requestId)).delivered, { timeout: 10_000 })
      .toBe(true);
  });
});

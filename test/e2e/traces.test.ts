import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { type ReceivedSpan, spanKind, startOtlpReceiver } from "../harness/otlp-receiver.ts";
import { startPushService, type TestPushService } from "../harness/push-service.ts";
import { SoftwareAuthenticator } from "../harness/software-passkey.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { svcctlJson } from "./agent-support.ts";
import { issuer, newGate, newPartner, partnerApi, result } from "./gate-support.ts";

/**
 * With OTEL_EXPORTER_OTLP_ENDPOINT set, one partner call to create-verification-link, the sandbox human's
 * confirmation and the `gate.human_verified` delivery read as one trace: the gateway's operation span at the
 * root, Connect client and server spans between the services, the outbox's event published and consumed over
 * NATS, and the delivery's HTTP span under the consumer's.
 */
describe("one trace from a partner's call to the webhook", () => {
  let mesh: TestMesh;
  let otlp: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let hooks: Server;
  /** Requests the partner's webhook endpoint and the agent's callback received, by path. */
  const received: string[] = [];
  let trace: ReceivedSpan[];
  let root: ReceivedSpan;
  let agentTrace: ReceivedSpan[];
  let agentRoot: ReceivedSpan;
  let hooksUrl: string;
  let organizationId: string;
  let partnerSecret: string;
  /** The push service of the person's phone, and the VAPID key the app serves, read by the test that subscribes. */
  let pushService: TestPushService;
  let vapidKey = "";

  const parentIn = (spans: ReceivedSpan[], span: ReceivedSpan) => spans.find((s) => s.spanId === span.parentSpanId);
  const parentOf = (span: ReceivedSpan) => parentIn(trace, span);
  const ancestry = (spans: ReceivedSpan[], span: ReceivedSpan): ReceivedSpan[] => {
    const parent = parentIn(spans, span);
    return parent ? [span, ...ancestry(spans, parent)] : [span];
  };
  const deliveredTo = (path: string) =>
    vi.waitFor(
      () => {
        if (!received.includes(path)) throw new Error(`nothing delivered to ${path} yet`);
      },
      { timeout: 30_000, interval: 100 },
    );
  /**
   * The gateway's span of `operation` and its trace, once that trace holds the deliveries' spans, every span's
   * parent and every RPC client span's server span. Each process exports its ended spans every 500 ms, so a
   * parent or a callee's span may arrive after the rest; one that never arrives fails here, listed.
   */
  const tracedOperation = (operation: string, deliveries: number) =>
    vi.waitFor(
      () => {
        const found = otlp.spans.find((s) => s.service === "gateway" && s.name === operation);
        if (!found) throw new Error(`no span of ${operation} yet`);
        const spans = otlp.spans.filter((s) => s.traceId === found.traceId);
        if (spans.filter((s) => s.name === "POST webhook").length < deliveries)
          throw new Error("the deliveries' spans are not all exported yet");
        const orphans = spans.filter((s) => s !== found && parentIn(spans, s) === undefined);
        if (orphans.length > 0)
          throw new Error(`spans whose parent is not in the trace: ${orphans.map((s) => `${s.service}: ${s.name}`)}`);
        const unanswered = spans.filter(
          (s) =>
            s.kind === spanKind.client &&
            s.attributes["rpc.system.name"] === "connectrpc" &&
            !spans.some((child) => child.parentSpanId === s.spanId && child.kind === spanKind.server),
        );
        if (unanswered.length > 0)
          throw new Error(
            `RPC client spans without their server's span: ${unanswered.map((s) => `${s.service}: ${s.name}`)}`,
          );
        return { root: found, spans };
      },
      { timeout: 30_000, interval: 100 },
    );

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    pushService = await startPushService({ vapidPublicKey: async () => vapidKey });
    hooks = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        received.push(req.url ?? "");
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => hooks.listen(0, "127.0.0.1", resolve));
    mesh = await startTestMesh("traces", {
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_TRACES_SAMPLER: "always_on" },
    });
    const api = partnerApi(mesh);
    const svcctl = svcctlJson(mesh);
    const partner = await newPartner(mesh, "Traced");
    await newGate(mesh, partner.organizationId, { key: "login" });
    hooksUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}`;
    organizationId = partner.organizationId;
    partnerSecret = partner.devSecret;
    await svcctl(["webhook", "add", "--org", partner.organizationId, "--url", `${hooksUrl}/hooks`]);
    const human = (await svcctl(["human", "create", "--env", "development", "--behavior", "confirm"]))
      .svc_user_id as string;
    const grant = result(await api.post("/sdk/create-session", { partner_user_id: "traced-user" }, partner.devSecret))
      .anchor_grant_token as string;
    result(
      await api.post(
        "/sdk/create-verification-link",
        { gate: "login", svc_user_id: human, partner_user_ref: "traced-account" },
        grant,
      ),
    );
    await deliveredTo("/hooks");
    ({ root, spans: trace } = await tracedOperation("POST /v1/sdk/create-verification-link", 1));

    // An agent with a callback, bound to a sandbox human who confirms: inquire, the human's confirmation
    // (answered at once by agentlink for a sandbox human), the proof, and the resolution's callback.
    const agent = await svcctl([
      ...["agent", "register", "--org", partner.organizationId, "--env", "development", "--name", "Traced_Bot"],
      ...["--category", "payments", "--callback-url", `${hooksUrl}/callback`],
    ]);
    const agentKey = agent.agent_key as string;
    const person = (await svcctl(["human", "create", "--env", "development", "--behavior", "confirm"]))
      .svc_user_id as string;
    const code = result(await api.post("/agent/bind-session", {}, agentKey)).link_code;
    await svcctl(["human", "claim", "--human", person, "--code", code]);
    const opaqueId = result(await api.get("/agent/check-binding", { link_code: code }, agentKey)).opaque_id;
    result(
      await api.post(
        "/agentlink/inquire",
        { request_id: randomUUID(), action: { summary_title: "Pay", category: "payments" }, opaque_id: opaqueId },
        agentKey,
      ),
    );
    await deliveredTo("/callback");
    ({ root: agentRoot, spans: agentTrace } = await tracedOperation("POST /v1/agentlink/inquire", 3));
  }, 240_000);
  afterAll(async () => {
    await mesh?.stop();
    hooks?.close();
    await otlp?.close();
    await pushService?.stop();
  });

  test("the gateway's operation span is the root of a trace through every service", () => {
    expect(root).toMatchObject({ parentSpanId: "", kind: spanKind.server });
    expect(root.attributes).toMatchObject({
      "http.request.method": "POST",
      "http.route": "/v1/sdk/create-verification-link",
      "http.response.status_code": 200,
    });
    expect(new Set(trace.map((s) => s.service))).toEqual(
      new Set(["gateway", "gate", "account", "signing", "webhook-dispatch"]),
    );
  });

  test("each Connect server span is the child of its caller's client span, named and coded by the RPC conventions", () => {
    const servers = trace.filter((s) => s.kind === spanKind.server && s.attributes["rpc.system.name"] === "connectrpc");
    expect(servers.length).toBeGreaterThan(0);
    for (const server of servers) {
      const client = parentOf(server);
      expect(client, server.name).toMatchObject({ kind: spanKind.client, name: server.name });
      expect(client?.service).not.toBe(server.service);
      expect(server.attributes).toMatchObject({
        "rpc.service": server.name.split("/")[0],
        "rpc.method": server.name.split("/")[1],
        "rpc.response.status_code": "ok",
      });
    }
    expect(servers.map((s) => `${s.service}: ${s.name}`)).toEqual(
      expect.arrayContaining(["gate: svc.gate.v1.GateService/CreateVerificationLink"]),
    );
  });

  test("the delivery descends from the consumer's span, the relay's producer span and the partner's call", () => {
    const delivery = trace.find((s) => s.name === "POST webhook");
    expect(delivery).toMatchObject({ service: "webhook-dispatch", kind: spanKind.client });
    expect(delivery?.attributes).toMatchObject({
      "http.response.status_code": 204,
      "webhook.attempt.outcome": "delivered",
    });
    const chain = ancestry(trace, delivery as ReceivedSpan);
    const subject = `${mesh.env.SVC_EVENT_SUBJECT_PREFIX}.gate.human_verified`;
    expect(chain[1]).toMatchObject({
      service: "webhook-dispatch",
      kind: spanKind.consumer,
      name: `process ${subject}`,
    });
    expect(chain[2]).toMatchObject({ service: "gate", kind: spanKind.producer, name: `send ${subject}` });
    expect(chain[2]?.attributes).toMatchObject({ "messaging.system": "nats", "messaging.destination.name": subject });
    expect(chain.at(-1)).toBe(root);
  });

  test("Postgres spans name the operation alone, never the statement's text or its values", () => {
    const queries = trace.filter(
      (s) => s.attributes["db.system"] === "postgresql" || s.attributes["db.system.name"] === "postgresql",
    );
    expect(queries.length).toBeGreaterThan(0);
    for (const query of queries) {
      for (const key of ["db.statement", "db.query.text"])
        if (key in query.attributes) expect(String(query.attributes[key])).toMatch(/^[a-z]*$/);
      expect(
        Object.keys(query.attributes).filter((key) => key.includes("parameter") || key.includes("values")),
      ).toEqual([]);
    }
  });

  test("an Agents Ask card reads as one trace from inquire through the confirmation and its proof to the agent's callback", () => {
    expect(agentRoot).toMatchObject({ parentSpanId: "", kind: spanKind.server });
    expect(new Set(agentTrace.map((s) => s.service))).toEqual(
      new Set(["gateway", "agentlink", "account", "signing", "webhook-dispatch"]),
    );
    const proof = agentTrace.find(
      (s) => s.service === "signing" && s.name === "svc.signing.v1.SigningService/SignProof",
    );
    expect(proof, "the proof's signing span").toBeDefined();
    expect(parentIn(agentTrace, proof as ReceivedSpan)).toMatchObject({ service: "agentlink", kind: spanKind.client });
    const subject = `${mesh.env.SVC_EVENT_SUBJECT_PREFIX}.agents_ask.resolution.confirmed`;
    const consumed = agentTrace.find((s) => s.kind === spanKind.consumer && s.name === `process ${subject}`);
    expect(consumed?.service).toBe("webhook-dispatch");
    // The resolution goes to the partner's endpoint and to the agent's callback, each under its consumer span.
    const deliveries = agentTrace.filter((s) => s.name === "POST webhook" && s.parentSpanId === consumed?.spanId);
    expect(deliveries).toHaveLength(2);
    const chain = ancestry(agentTrace, deliveries[0] as ReceivedSpan);
    expect(chain[2]).toMatchObject({ service: "agentlink", kind: spanKind.producer, name: `send ${subject}` });
    expect(chain.at(-1)).toBe(agentRoot);
  });

  /** A person with the app: a development-IdP session and a software passkey. */
  async function personWithPasskey() {
    const api = partnerApi(mesh);
    const { sessionToken } = await mesh.console.mintDevSession({
      issuer: mesh.devIdpIssuer,
      subject: `person-${randomUUID()}`,
    });
    const authenticator = SoftwareAuthenticator.create();
    const begun = result(await api.post("/app/passkeys/begin-registration", {}, sessionToken));
    result(
      await api.post(
        "/app/passkeys/finish-registration",
        { ceremony_id: begun.ceremony_id, response: authenticator.register(begun.options, issuer) },
        sessionToken,
      ),
    );
    const svcUserId = result(await api.get("/app/me", {}, sessionToken)).svc_user_id as string;
    return { sessionToken, authenticator, svcUserId };
  }

  test("a real person's web-flow confirm, a later call, continues the request's trace: its attestation, event and delivery join the creating call's, linked to the confirm", async () => {
    const api = partnerApi(mesh);
    const person = await personWithPasskey();
    const grant = result(await api.post("/sdk/create-session", { partner_user_id: "later-user" }, partnerSecret))
      .anchor_grant_token as string;
    const link = result(
      await api.post(
        "/sdk/create-verification-link",
        { gate: "login", svc_user_id: person.svcUserId, partner_user_ref: "later-account" },
        grant,
      ),
    );
    const request = { request_id: link.request_id, t: decodeURIComponent(new URL(link.web_url).hash.slice(3)) };
    const opened = result(await api.post("/flow/requests/open", { ...request, origin: issuer }));
    const confirmed = result(
      await api.post("/flow/requests/confirm", {
        ...request,
        ceremony_id: opened.ceremony_id,
        response: person.authenticator.assert(opened.options, issuer),
      }),
    );
    expect(confirmed.status).toBe("completed");

    const { requestTrace, confirmRoot, resolve } = await vi.waitFor(
      () => {
        const confirmRoot = otlp.spans.find(
          (s) => s.service === "gateway" && s.name === "POST /v1/flow/requests/confirm",
        );
        const resolve = otlp.spans.find(
          (s) => s.name === "gate resolve confirmed" && s.links.some((l) => l.traceId === confirmRoot?.traceId),
        );
        if (!confirmRoot || !resolve) throw new Error("the confirm's spans are not exported yet");
        const requestTrace = otlp.spans.filter((s) => s.traceId === resolve.traceId);
        if (!requestTrace.some((s) => s.name === "POST webhook" && ancestry(requestTrace, s).includes(resolve)))
          throw new Error("the event's delivery span is not exported yet");
        // Each process exports on its own schedule: account's and signing's spans may come after the rest.
        if (new Set(requestTrace.map((s) => s.service)).size < 5) throw new Error("not every service's spans yet");
        if (
          !requestTrace.some(
            (s) => s.name === "svc.signing.v1.SigningService/SignAttestation" && s.service === "signing",
          )
        )
          throw new Error("the attestation's signing span is not exported yet");
        return { requestTrace, confirmRoot, resolve };
      },
      { timeout: 30_000, interval: 100 },
    );
    // The resolution is in the creating call's trace, not the confirm's, and links to the confirm that caused it.
    expect(resolve.traceId).not.toBe(confirmRoot.traceId);
    expect(resolve).toMatchObject({ service: "gate", kind: 1 });
    const createRoot = requestTrace.find((s) => s.parentSpanId === "");
    expect(createRoot).toMatchObject({
      service: "gateway",
      name: "POST /v1/sdk/create-verification-link",
      kind: spanKind.server,
    });
    expect(new Set(requestTrace.map((s) => s.service))).toEqual(
      new Set(["gateway", "gate", "account", "signing", "webhook-dispatch"]),
    );
    const signed = requestTrace.find(
      (s) => s.service === "signing" && s.name === "svc.signing.v1.SigningService/SignAttestation",
    );
    expect(ancestry(requestTrace, signed as ReceivedSpan)).toContain(resolve);
    const subject = `${mesh.env.SVC_EVENT_SUBJECT_PREFIX}.gate.human_verified`;
    const delivery = requestTrace.find(
      (s) => s.name === "POST webhook" && ancestry(requestTrace, s).includes(resolve),
    ) as ReceivedSpan;
    const chain = ancestry(requestTrace, delivery);
    expect(chain.slice(1, 3).map((s) => [s.service, s.name])).toEqual([
      ["webhook-dispatch", `process ${subject}`],
      ["gate", `send ${subject}`],
    ]);
    expect(chain.at(-1)).toBe(createRoot);
  }, 90_000);

  test("a real person's confirm, a later call, continues the card's trace: its push, proof and callback join the inquire's, linked to the confirm", async () => {
    const api = partnerApi(mesh);
    const svcctl = svcctlJson(mesh);
    const agentKey = (
      await svcctl([
        ...["agent", "register", "--org", organizationId, "--env", "development", "--name", "Later_Bot"],
        ...["--category", "payments", "--callback-url", `${hooksUrl}/later-callback`],
      ])
    ).agent_key as string;
    const { sessionToken, authenticator } = await personWithPasskey();
    vapidKey = result(await api.get("/app/push-key", {}, sessionToken)).public_key as string;
    const phone = pushService.subscribe();
    result(await api.post("/app/push-subscriptions", { ...phone }, sessionToken));
    const code = result(await api.post("/agent/bind-session", {}, agentKey)).link_code;
    result(await api.post("/app/agent-bindings/claim", { link_code: code }, sessionToken));
    const opaqueId = result(await api.get("/agent/check-binding", { link_code: code }, agentKey)).opaque_id;
    const queued = result(
      await api.post(
        "/agentlink/inquire",
        { request_id: randomUUID(), action: { summary_title: "Pay", category: "payments" }, opaque_id: opaqueId },
        agentKey,
      ),
    );
    expect((await pushService.next(phone.endpoint)).payload).toMatchObject({ kind: "card", id: queued.card_id });
    const decisions = [{ card_id: queued.card_id, verdict: "approve" }];
    const challenge = result(await api.post("/agentlink/confirm-challenge", { decisions }, sessionToken));
    result(
      await api.post(
        "/agentlink/confirm",
        {
          decisions,
          passkey_assertion: {
            challenge_id: challenge.challenge_id,
            response: authenticator.assert(challenge.options, issuer),
          },
        },
        sessionToken,
      ),
    );
    await deliveredTo("/later-callback");

    const { cardTrace, confirmRoot, resolve } = await vi.waitFor(
      () => {
        const confirmRoot = otlp.spans.find((s) => s.service === "gateway" && s.name === "POST /v1/agentlink/confirm");
        const resolve = otlp.spans.find(
          (s) => s.name === "agents_ask resolve" && s.links.some((link) => link.traceId === confirmRoot?.traceId),
        );
        if (!confirmRoot || !resolve) throw new Error("the confirm's spans are not exported yet");
        const cardTrace = otlp.spans.filter((s) => s.traceId === resolve.traceId);
        const resolutionDeliveries = cardTrace.filter(
          (s) => s.name === "POST webhook" && ancestry(cardTrace, s).includes(resolve),
        );
        // The resolution goes to the organization's endpoint and to the agent's callback.
        if (resolutionDeliveries.length < 2) throw new Error("the resolution's delivery spans are not exported yet");
        // Each process exports on its own schedule: signing's and account's spans may come after the rest.
        if (!cardTrace.some((s) => s.service === "signing" && s.name === "svc.signing.v1.SigningService/SignProof"))
          throw new Error("the proof's signing span is not exported yet");
        const pushed = cardTrace.find((s) => s.name === "POST web push");
        if (!pushed || ancestry(cardTrace, pushed).at(-1)?.parentSpanId !== "")
          throw new Error("the push's spans are not all exported yet");
        return { cardTrace, confirmRoot, resolve };
      },
      { timeout: 30_000, interval: 100 },
    );
    // The resolution is in the inquire's trace, not the confirm's, and links to the confirm that caused it.
    expect(resolve.traceId).not.toBe(confirmRoot.traceId);
    expect(resolve).toMatchObject({ service: "agentlink", kind: 1 });
    expect(resolve.links.some((link) => link.traceId === confirmRoot.traceId)).toBe(true);
    const inquireRoot = cardTrace.find((s) => s.parentSpanId === "");
    expect(inquireRoot).toMatchObject({
      service: "gateway",
      name: "POST /v1/agentlink/inquire",
      kind: spanKind.server,
    });
    // The proof is signed under the card's trace too, and the callback descends from the resolution's event.
    const signProof = cardTrace.find((s) => s.name === "agents_ask sign proof");
    expect(signProof?.service).toBe("agentlink");
    expect(
      cardTrace.some(
        (s) =>
          s.service === "signing" &&
          s.name === "svc.signing.v1.SigningService/SignProof" &&
          ancestry(cardTrace, s).includes(signProof as ReceivedSpan),
      ),
    ).toBe(true);
    // The card's push to the person's phone: sent in account under the trigger's consumer span, which continues
    // agentlink's producer span; the push's span records no endpoint (a capability), only method, status, HTTP
    // version (the harness's push service is plain HTTP/1.1 on loopback) and outcome.
    const pushSubject = `${mesh.env.SVC_EVENT_SUBJECT_PREFIX}_push.trigger`;
    const pushed = cardTrace.find((s) => s.name === "POST web push") as ReceivedSpan;
    expect(pushed).toMatchObject({ service: "account", kind: spanKind.client });
    expect(pushed.attributes).toEqual({
      "http.request.method": "POST",
      "http.response.status_code": 201,
      "network.protocol.version": "1.1",
      "web_push.outcome": "delivered",
    });
    const pushChain = ancestry(cardTrace, pushed);
    expect(pushChain.slice(1, 3).map((s) => [s.service, s.kind, s.name])).toEqual([
      ["account", spanKind.consumer, `process ${pushSubject}`],
      ["agentlink", spanKind.producer, `send ${pushSubject}`],
    ]);
    expect(pushChain.at(-1)).toBe(inquireRoot);
    const subject = `${mesh.env.SVC_EVENT_SUBJECT_PREFIX}.agents_ask.resolution.confirmed`;
    const delivery = cardTrace.find(
      (s) => s.name === "POST webhook" && ancestry(cardTrace, s).some((a) => a.name === `process ${subject}`),
    ) as ReceivedSpan;
    const chain = ancestry(cardTrace, delivery);
    expect(chain.slice(1, 4).map((s) => [s.service, s.name])).toEqual([
      ["webhook-dispatch", `process ${subject}`],
      ["agentlink", `send ${subject}`],
      ["agentlink", "agents_ask resolve"],
    ]);
    expect(chain.at(-1)).toBe(inquireRoot);
  }, 90_000);
});

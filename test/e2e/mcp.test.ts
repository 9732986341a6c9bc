import { createHash, randomUUID } from "node:crypto";
import { request } from "node:http";
import { fileURLToPath } from "node:url";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { createRemoteJWKSet, jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectDocumented } from "../harness/documented-answer.ts";
import { replicaEnvOf, startGatewayReplica } from "../harness/gateway-replica.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { svcctlJson } from "./agent-support.ts";
import { issuer } from "./gate-support.ts";

/**
 * The MCP server at `{api_origin}/mcp` driven by the official MCP client over Streamable HTTP, in the 2026-07-28
 * revision and the 2025-11-25 one: the tools and their schemas, linking a sandbox human, ask_person approved,
 * denied, cancelled and expired (proofs checked with jose, card_digest recomputed here), refusals as isError
 * results (the trust layer's violations, bad arguments), the 401 challenge and the RFC 9728 metadata, the
 * agent's rate limit shared with the JSON routes, two gateway replicas serving one client, and the same tools
 * over stdio from `svcctl mcp --stdio`.
 */

const svcctlBin = fileURLToPath(new URL("../../node_modules/.bin/svcctl", import.meta.url));

const card = { summary_title: "Pay €12.50 to Acme", category: "payments" };

/** RFC 8785 for the JSON of these cards (strings, objects), written here independently. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object")
    return `{${Object.keys(value)
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(",")}}`;
  return JSON.stringify(value);
}
const digestOf = (shown: Record<string, unknown>) => createHash("sha256").update(canonical(shown)).digest("base64url");

type Era = "2026-07-28" | "2025-11-25";
type Structured = Record<string, unknown>;

describe("the MCP server", () => {
  let mesh: TestMesh;
  let svcctl: ReturnType<typeof svcctlJson>;
  let organizationId: string;
  let agentKey: string;
  const clients: Client[] = [];

  const connect = async (key: string, era: Era, fetchVia?: typeof fetch) => {
    const client = new Client(
      { name: "mcp-e2e", version: "1.0.0" },
      era === "2026-07-28" ? { versionNegotiation: { mode: { pin: era } } } : {},
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${mesh.gatewayUrl}/mcp`), {
        authProvider: { token: async () => key },
        fetch: fetchVia ?? mesh.fetch,
      }),
    );
    clients.push(client);
    return client;
  };

  const call = async (client: Client, name: string, args: Record<string, unknown>, onprogress?: () => void) => {
    const answer = await client.callTool({ name, arguments: args }, onprogress ? { onprogress } : undefined);
    return { isError: answer.isError === true, content: answer.structuredContent as Structured };
  };

  const sandboxHuman = async (behavior: "confirm" | "decline" | "silent") =>
    (await svcctl(["human", "create", "--env", "development", "--behavior", behavior])).svc_user_id as string;

  const registerAgent = async (name: string) =>
    (
      await svcctl([
        ...["agent", "register", "--org", organizationId, "--env", "development", "--name", name],
        ...["--category", "payments"],
      ])
    ).agent_key as string;

  /** link_person, the human claims the code, check_link: the person's opaque_id. */
  const link = async (client: Client, human: string) => {
    const started = await call(client, "link_person", {});
    expect(started).toMatchObject({
      isError: false,
      content: {
        link_code: expect.stringMatching(/^[2-9A-HJKMNP-Z]{8}$/),
        link_url: expect.stringMatching(/^svc:\/\/bind\//),
      },
    });
    const code = started.content.link_code as string;
    expect((await call(client, "check_link", { link_code: code })).content).toMatchObject({
      status: "pending",
      opaque_id: null,
    });
    await svcctl(["human", "claim", "--human", human, "--code", code]);
    const claimed = await call(client, "check_link", { link_code: code });
    expect(claimed.content).toMatchObject({ status: "claimed", opaque_id: expect.any(String) });
    return claimed.content.opaque_id as string;
  };

  const keySet = () => createRemoteJWKSet(new URL(`${mesh.gatewayUrl}/.well-known/jwks.json`));

  beforeAll(async () => {
    // A test counts what the expire sweep expired: agentlink's timed sweep must not take the card first.
    mesh = await startTestMesh("mcp", { env: { AGENTLINK_SWEEP_EVERY: "1h" } });
    svcctl = svcctlJson(mesh);
    organizationId = (await mesh.console.createOrganization({ name: "MCP partner" })).organizationId;
    agentKey = await registerAgent("Mcp_Bot");
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await mesh?.stop();
  });

  /** A second gateway process beside the mesh's, on the same database, services and NATS. */
  const secondGateway = () =>
    startGatewayReplica({ ...replicaEnvOf(mesh), GATEWAY_PUBLIC_ORIGIN: issuer }, mesh.consoleToken);

  it.each(["2026-07-28", "2025-11-25"] as const)(
    "lists the six tools in the %s revision, each schema valid JSON Schema",
    async (era) => {
      const client = await connect(agentKey, era);
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual([
        "link_person",
        "check_link",
        "ask_person",
        "check_request",
        "cancel_request",
        "verify_proof",
      ]);
      const ajv = new Ajv2020({ strict: false });
      addFormats.default(ajv);
      for (const tool of tools) {
        expect(tool.description?.length).toBeGreaterThan(80);
        expect(() => ajv.compile(tool.inputSchema), tool.name).not.toThrow();
        expect(tool.outputSchema, tool.name).toBeDefined();
        expect(() => ajv.compile(tool.outputSchema as object), tool.name).not.toThrow();
      }
    },
  );

  it("serves the protected-resource metadata, and answers no key or a bad key with HTTP 401 and the challenge", async () => {
    const document = await (await fetch(`${mesh.gatewayUrl}/v1/openapi.json`)).json();
    const metadata = await fetch(`${mesh.gatewayUrl}/.well-known/oauth-protected-resource`);
    const body = await metadata.json();
    expect(body).toMatchObject({ resource: `${issuer}/mcp`, bearer_methods_supported: ["header"] });
    expectDocumented(document, "GET", "/.well-known/oauth-protected-resource", { status: 200, body });

    const initialize = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "curl", version: "1" } },
    };
    const post = (authorization?: string) =>
      fetch(`${mesh.gatewayUrl}/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...(authorization && { authorization }),
        },
        body: JSON.stringify(initialize),
      });
    const challenge = `Bearer resource_metadata="${issuer}/.well-known/oauth-protected-resource"`;
    const missing = await post();
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toBe(challenge);
    const missingBody = await missing.json();
    expectDocumented(document, "POST", "/mcp", { status: 401, body: missingBody, headers: missing.headers });
    for (const bad of [
      `Bearer svc_agent_Mcp_Bot__${"A".repeat(43)}`,
      "Bearer svc_dev_notanagentkey",
      `Basic ${agentKey}`,
    ]) {
      const refused = await post(bad);
      expect(refused.status, bad).toBe(401);
      expect(refused.headers.get("www-authenticate")).toContain(challenge);
      expect(await refused.json()).toMatchObject({
        error: "invalid_token",
        error_description: expect.stringContaining("agent key"),
      });
    }
    expect((await post(`Bearer svc_agent_Mcp_Bot__${"A".repeat(43)}`)).headers.get("www-authenticate")).toBe(
      `${challenge}, error="invalid_token"`,
    );
    await expect(connect(`svc_agent_Mcp_Bot__${"A".repeat(43)}`, "2025-11-25")).rejects.toThrow();
  });

  it("refuses a body over 64 KiB sent without a length (chunked) with JSON-RPC's 413", async () => {
    const url = new URL(`${mesh.gatewayUrl}/mcp`);
    const answer = await new Promise<{ status: number; body: string }>((resolve) => {
      const sent = request(
        url,
        {
          method: "POST",
          headers: {
            authorization: `Bearer ${agentKey}`,
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            "transfer-encoding": "chunked",
          },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (chunk: Buffer) => chunks.push(chunk));
          response.on("end", () =>
            resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
          );
        },
      );
      // The server answers before the last chunk and stops reading: the writes after that may fail, which is the point.
      sent.on("error", () => {});
      const chunk = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"${"x".repeat(16 * 1024)}`;
      for (let i = 0; i < 8; i++) sent.write(chunk);
      sent.end('"}}');
    });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toMatchObject({ jsonrpc: "2.0", error: { code: -32000 } });
  });

  it("answers a 2025-era POST as Streamable HTTP says: refusals, 202 for a notification", async () => {
    const document = await (await fetch(`${mesh.gatewayUrl}/v1/openapi.json`)).json();
    const post = async (body: unknown, headers: Record<string, string> = {}) => {
      const answer = await fetch(`${mesh.gatewayUrl}/mcp`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${agentKey}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-11-25",
          ...headers,
        },
        body: JSON.stringify(body),
      });
      const text = await answer.text();
      const parsed = text === "" ? undefined : JSON.parse(text);
      expectDocumented(document, "POST", "/mcp", { status: answer.status, body: parsed, headers: answer.headers });
      return { status: answer.status, type: answer.headers.get("content-type"), body: parsed };
    };
    const ping = (id: number) => ({ jsonrpc: "2.0", id, method: "ping" });
    const refused = (code: number, message: string) => ({ jsonrpc: "2.0", error: { code, message }, id: null });

    expect(await post(ping(1))).toEqual({
      status: 200,
      type: "application/json",
      body: { jsonrpc: "2.0", id: 1, result: {} },
    });
    expect(await post({ jsonrpc: "2.0", method: "notifications/initialized" })).toEqual({
      status: 202,
      type: null,
      body: undefined,
    });
    expect(await post(ping(1), { accept: "application/json" })).toEqual({
      status: 406,
      type: "application/json",
      body: refused(-32000, "Not Acceptable: Client must accept both application/json and text/event-stream"),
    });
    expect(await post(ping(1), { "content-type": "text/plain" })).toEqual({
      status: 415,
      type: "application/json",
      body: refused(-32000, "Unsupported Media Type: Content-Type must be application/json"),
    });
    const unsupported = await post(ping(1), { "mcp-protocol-version": "2024-01-01" });
    expect(unsupported).toMatchObject({ status: 400, type: "application/json", body: { error: { code: -32000 } } });
    expect(unsupported.body.error.message).toMatch(/^Bad Request: Unsupported protocol version: 2024-01-01/);
    expect(await post({ jsonrpc: "2.0", id: 2, method: 7 })).toMatchObject({
      status: 400,
      type: "application/json",
      body: { jsonrpc: "2.0", error: { code: -32600 }, id: null },
    });
  });

  it("links a sandbox human, who approves: the proof verifies with jose, over the card as proposed", async () => {
    const client = await connect(agentKey, "2026-07-28");
    const opaqueId = await link(client, await sandboxHuman("confirm"));
    const detail = { label: "Amount", value: "EUR 12.50" };
    let progressed = 0;
    const asked = await call(
      client,
      "ask_person",
      { opaque_id: opaqueId, ...card, summary_detail: detail, wait_seconds: 25 },
      () => {
        progressed++;
      },
    );
    expect(asked).toMatchObject({
      isError: false,
      content: { status: "approved", verdict: "approve", proof: expect.any(String), card_id: expect.any(String) },
    });
    expect(progressed).toBeGreaterThanOrEqual(1);
    const requestId = asked.content.request_id as string;
    const { payload, protectedHeader } = await jwtVerify(asked.content.proof as string, keySet(), { issuer });
    expect(protectedHeader.alg).toBe("ES256");
    expect(payload).toMatchObject({
      jti: requestId,
      verdict: "approve",
      sub: opaqueId,
      card_id: asked.content.card_id,
      card_digest: digestOf({ ...card, summary_detail: detail }),
    });
    expect(asked.content.proof_claims).toEqual(payload);

    const verified = await call(client, "verify_proof", {
      proof: asked.content.proof,
      card: { ...card, summary_detail: detail },
      request_id: requestId,
    });
    expect(verified.content).toMatchObject({ valid: true, reason: null, claims: { jti: requestId } });
    const changed = await call(client, "verify_proof", {
      proof: asked.content.proof,
      card: { ...card, summary_title: "Pay €99 to Acme" },
    });
    expect(changed.content).toMatchObject({ valid: false, reason: "card_mismatch" });
    expect((await call(client, "check_request", { request_id: requestId })).content).toMatchObject({
      status: "approved",
      proof: asked.content.proof,
    });
  });

  it("link_person asks a client that supports URL-mode elicitation to open the link for the person", async () => {
    const client = new Client(
      { name: "mcp-e2e-elicit", version: "1.0.0" },
      { capabilities: { elicitation: { url: {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    const asked: Record<string, unknown>[] = [];
    client.setRequestHandler("elicitation/create", (request) => {
      asked.push(request.params as Record<string, unknown>);
      return { action: "accept" };
    });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${mesh.gatewayUrl}/mcp`), {
        authProvider: { token: async () => agentKey },
      }),
    );
    clients.push(client);
    const started = await call(client, "link_person", {});
    expect(started.isError).toBe(false);
    const code = started.content.link_code as string;
    expect(asked).toEqual([
      expect.objectContaining({
        mode: "url",
        url: `${issuer}/v1/qr/bind/${code}.svg`,
        message: expect.stringContaining(code),
      }),
    ]);
    await svcctl(["human", "claim", "--human", await sandboxHuman("silent"), "--code", code]);
    expect((await call(client, "check_link", { link_code: code })).content).toMatchObject({ status: "claimed" });
  });

  it("a human who declines: denied with its proof, in the 2025-11-25 revision", async () => {
    const client = await connect(agentKey, "2025-11-25");
    const opaqueId = await link(client, await sandboxHuman("decline"));
    const requestId = randomUUID();
    const asked = await call(client, "ask_person", {
      opaque_id: opaqueId,
      ...card,
      request_id: requestId,
      wait_seconds: 25,
    });
    expect(asked.content).toMatchObject({ request_id: requestId, status: "denied", verdict: "denied" });
    const { payload } = await jwtVerify(asked.content.proof as string, keySet(), { issuer });
    expect(payload).toMatchObject({ jti: requestId, verdict: "denied", card_digest: digestOf(card) });
  });

  it("asks several people with a quorum: approved at two approvals, one proof of both decisions", async () => {
    const client = await connect(agentKey, "2026-07-28");
    const approvers = [
      await link(client, await sandboxHuman("confirm")),
      await link(client, await sandboxHuman("confirm")),
      await link(client, await sandboxHuman("decline")),
    ];
    const asked = await call(client, "ask_person", {
      approvers,
      quorum: { approve: 2 },
      ...card,
      wait_seconds: 25,
    });
    expect(asked).toMatchObject({
      isError: false,
      content: { status: "approved", verdict: "approve", quorum: { approve: 2, deny: 1 } },
    });
    const decided = (asked.content.decisions as { opaque_id: string; verdict: string | null }[]).map((d) => [
      d.opaque_id,
      d.verdict,
    ]);
    expect(decided).toEqual([
      [approvers[0], "approve"],
      [approvers[1], "approve"],
      [approvers[2], null],
    ]);
    const { payload } = await jwtVerify(asked.content.proof as string, keySet(), { issuer });
    expect(payload).toMatchObject({ verdict: "approve", card_digest: digestOf(card), quorum: { approve: 2, deny: 1 } });
    expect((payload.decisions as { verdict: string }[]).map((d) => d.verdict)).toEqual(["approve", "approve"]);

    const both = await call(client, "ask_person", {
      opaque_id: approvers[0],
      approvers,
      quorum: { approve: 2 },
      ...card,
    });
    expect(both.isError).toBe(true);
    // Three links and a 25-second hold: on a loaded machine this runs past the 30-second default.
  }, 60_000);

  it("cancels a queued request: cancelled, no proof; a second cancel reports it already resolved", async () => {
    const client = await connect(agentKey, "2026-07-28");
    const opaqueId = await link(client, await sandboxHuman("silent"));
    const asked = await call(client, "ask_person", { opaque_id: opaqueId, ...card });
    expect(asked.content).toMatchObject({ status: "queued", verdict: null, proof: null, proof_claims: null });
    const requestId = asked.content.request_id as string;
    expect(
      (await call(client, "cancel_request", { request_id: requestId, reason: "changed my mind" })).content,
    ).toMatchObject({
      status: "cancelled",
      card_id: asked.content.card_id,
    });
    expect((await call(client, "cancel_request", { request_id: requestId })).content).toMatchObject({
      status: "cancelled",
      already_resolved: true,
    });
    expect((await call(client, "check_request", { request_id: requestId })).content).toMatchObject({
      status: "cancelled",
      proof: null,
    });
  });

  it("a request past its ttl_at comes back expired, with no proof", async () => {
    const client = await connect(agentKey, "2025-11-25");
    const opaqueId = await link(client, await sandboxHuman("silent"));
    const asked = await call(client, "ask_person", { opaque_id: opaqueId, ...card, ttl_seconds: 60 });
    mesh.setClock(new Date(Date.parse(asked.content.ttl_at as string) + 1_000));
    try {
      expect((await svcctl(["agent", "sweep", "--limit", "1000"])).expired_count).toBeGreaterThanOrEqual(1);
      const checked = await call(client, "check_request", { request_id: asked.content.request_id, wait_seconds: 5 });
      expect(checked.content).toMatchObject({ status: "expired", verdict: null, proof: null });
    } finally {
      mesh.setClock(null);
    }
  });

  it("refusals are isError results with the API's data.error: the trust layer's violations, bad arguments, an unknown request", async () => {
    const client = await connect(agentKey, "2026-07-28");
    const opaqueId = await link(client, await sandboxHuman("silent"));
    const requestId = randomUUID();
    const rejected = await call(client, "ask_person", {
      opaque_id: opaqueId,
      ...card,
      summary_title: "Pay\u202Eevil",
      request_id: requestId,
    });
    expect(rejected).toMatchObject({
      isError: true,
      content: { error: { statusCode: 422, code: "trust_layer_rejected" } },
    });
    expect((rejected.content.error as Structured).violations).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: "/action/summary_title" })]),
    );
    const notCreated = await call(client, "check_request", { request_id: requestId });
    expect(notCreated).toMatchObject({ isError: true, content: { error: { statusCode: 404 } } });

    const badArguments = await call(client, "ask_person", {
      opaque_id: opaqueId,
      ...card,
      request_id: requestId,
      wait_seconds: 30,
    });
    expect(badArguments).toMatchObject({
      isError: true,
      content: {
        error: {
          statusCode: 400,
          code: "InputValidationError",
          errors: [expect.objectContaining({ propertyPath: "wait_seconds" })],
        },
      },
    });
    expect((await call(client, "check_request", { request_id: requestId })).content).toMatchObject({
      error: { statusCode: 404 },
    });
  });

  it("counts each tool call as a request of its JSON route: past the agent's per_minute limit, a tool call is refused as 429", async () => {
    const key = await registerAgent("Busy_Bot");
    const client = await connect(key, "2026-07-28");
    const minute = Math.floor(Date.now() / 60_000) * 60_000;
    mesh.setClock(new Date(minute + 60_000 + 1_000));
    try {
      for (let round = 0; round < 6; round++)
        await Promise.all(
          Array.from({ length: 20 }, () => call(client, "check_request", { request_id: randomUUID() })),
        );
      const refused = await call(client, "check_request", { request_id: randomUUID() });
      expect(refused).toMatchObject({
        isError: true,
        content: { error: { statusCode: 429, code: "RATE_LIMITED", bucket: "per_minute", reason: "rate" } },
      });
      const route = await fetch(`${mesh.gatewayUrl}/v1/agentlink/check-status?request_id=${randomUUID()}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(route.status).toBe(403);
    } finally {
      mesh.setClock(null);
    }
  });

  it("two gateways behind one address serve one client: each request may reach either", async () => {
    const second = await secondGateway();
    try {
      const origins = [mesh.gatewayUrl, second.url];
      const served = new Map<string, number>();
      let next = 0;
      // The address's load balancer: every request to the next replica in turn.
      const roundRobin: typeof fetch = (input, init) => {
        const target = new URL(input instanceof Request ? input.url : String(input));
        const origin = origins[next++ % origins.length] as string;
        served.set(origin, (served.get(origin) ?? 0) + 1);
        return fetch(`${origin}${target.pathname}${target.search}`, init);
      };
      for (const era of ["2026-07-28", "2025-11-25"] as const) {
        const client = await connect(agentKey, era, roundRobin);
        const opaqueId = await link(client, await sandboxHuman("confirm"));
        const asked = await call(client, "ask_person", { opaque_id: opaqueId, ...card, wait_seconds: 25 });
        expect(asked.content).toMatchObject({ status: "approved", proof: expect.any(String) });
        expect((await call(client, "check_request", { request_id: asked.content.request_id })).content).toMatchObject({
          status: "approved",
        });
      }
      for (const origin of origins) expect(served.get(origin) ?? 0, origin).toBeGreaterThanOrEqual(4);
    } finally {
      await second.stop();
    }
  }, 120_000);

  it("svcctl mcp --stdio serves the same tools, calling the public API with the agent's key", async () => {
    const client = new Client({ name: "mcp-e2e-stdio", version: "1.0.0" });
    clients.push(client);
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [svcctlBin, "mcp", "--stdio"],
        env: {
          PATH: process.env.PATH ?? "",
          SVC_AGENT_KEY: agentKey,
          SVC_BASE_URL: `${mesh.gatewayUrl}/v1`,
          SVC_ISSUER: issuer,
        },
      }),
    );
    expect((await client.listTools()).tools.map((tool) => tool.name)).toHaveLength(6);
    const opaqueId = await link(client, await sandboxHuman("confirm"));
    let progressed = 0;
    const asked = await call(client, "ask_person", { opaque_id: opaqueId, ...card, wait_seconds: 25 }, () => {
      progressed++;
    });
    expect(asked.content).toMatchObject({ status: "approved", verdict: "approve" });
    expect(progressed).toBeGreaterThanOrEqual(1);
    const { payload } = await jwtVerify(asked.content.proof as string, keySet(), { issuer });
    expect(payload).toMatchObject({ jti: asked.content.request_id, card_digest: digestOf(card) });
    expect((await call(client, "verify_proof", { proof: asked.content.proof, card })).content).toMatchObject({
      valid: true,
    });
    const rejected = await call(client, "ask_person", { opaque_id: opaqueId, ...card, summary_title: "Pay\u202Eevil" });
    expect(rejected).toMatchObject({
      isError: true,
      content: { error: { statusCode: 422, code: "trust_layer_rejected" } },
    });
    const invalid = await call(client, "check_link", { link_code: "nope" });
    expect(invalid).toMatchObject({ isError: true, content: { error: { statusCode: 400 } } });
  }, 60_000);
});

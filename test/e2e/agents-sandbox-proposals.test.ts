import { randomBytes } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { uuid } from "@svc/platform";
import { createRemoteJWKSet, jwtVerify } from "jose";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { issuer, partnerApi, result } from "./gate-support.ts";

/**
 * Console sandbox proposals (decisions.md) through the real mesh: `svcctl agent propose` proposes a card as
 * a development agent would to a sandbox human bound to it; the partner's webhook endpoint (verified with
 * standardwebhooks) gets `agents_ask.card.proposed` with `source: "console_sandbox"`, then the resolution
 * the sandbox human's answer makes. An agent's own inquire has no `source`. Unknown agents and humans, a
 * human not bound to the agent or not a sandbox human, inquire's own refusals and a production deployment
 * are refused with a clear message, creating nothing.
 */
const start = new Date("2026-11-28T09:00:00Z");

interface Received {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

describe("svcctl agent propose: console sandbox proposals", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let organizationId: string;
  let receiver: Server;
  let endpointSecret: string;
  const received: Received[] = [];

  const svcctl = (args: string[]) => runSvcctl(mesh, args);
  const json = async (args: string[]) => {
    const run = await svcctl(args);
    expect(run.stderr, run.stderr).toBe("");
    expect(run.code).toBe(0);
    return JSON.parse(run.stdout);
  };

  /** The partner's deliveries, each verified as a partner would (the signature's timestamp read at the mesh's time). */
  const deliveries = () => {
    const spy = vi.spyOn(Date, "now").mockReturnValue(start.getTime());
    try {
      return received.map(
        (r) =>
          new Webhook(endpointSecret).verify(r.body, r.headers as Record<string, string>) as Record<string, unknown>,
      );
    } finally {
      spy.mockRestore();
    }
  };
  const delivered = (type: string, requestId: string) =>
    vi.waitFor(
      () => {
        const found = deliveries().find((body) => body.type === type && body.request_id === requestId);
        if (!found) throw new Error(`no ${type} for ${requestId} yet`);
        return found;
      },
      { timeout: 20_000, interval: 100 },
    );

  const sandboxHuman = async (behavior: "confirm" | "silent") =>
    (await json(["human", "create", "--env", "development", "--behavior", behavior])).svc_user_id as string;

  /** A development agent of the partner, with the humans given bound to it by `svcctl human claim`. */
  async function agent(name: string, ...humans: string[]) {
    const registered = await json([
      ...["agent", "register", "--org", organizationId, "--env", "development", "--name", name],
      ...["--category", "payments"],
    ]);
    const key = registered.agent_key as string;
    const opaqueIds: string[] = [];
    for (const human of humans) {
      const code = result(await api.post("/agent/bind-session", {}, key)).link_code;
      await json(["human", "claim", "--human", human, "--code", code]);
      opaqueIds.push(result(await api.get("/agent/check-binding", { link_code: code }, key)).opaque_id);
    }
    return { agentId: registered.agent_id as string, key, opaqueIds };
  }

  /** The human's queued cards, as the app lists them. */
  const cardsOf = async (human: string) => {
    const { session_token } = await json(["human", "session", "--human", human]);
    return result(await api.get("/agentlink/cards", {}, session_token)).cards;
  };

  const propose = (agentName: string, human: string, ...extra: string[]) =>
    svcctl([
      ...["agent", "propose", "--agent", agentName, "--human", human],
      ...["--title", "Pay invoice 2231", "--category", "payments"],
      ...extra,
    ]);

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    mesh = await startTestMesh("sandbox_proposals", {
      only: ["signing", "account", "agentlink", "webhook-dispatch"],
      clockAt: start,
    });
    api = partnerApi(mesh);
    organizationId = (await mesh.console.createOrganization({ name: "Sandbox Partner" })).organizationId;
    endpointSecret = (
      await json([
        ...["webhook", "add", "--org", organizationId],
        ...["--url", `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`],
        ...["--type", "agents_ask.card.proposed", "--type", "agents_ask.resolution.confirmed"],
      ])
    ).secret;
  });
  afterAll(async () => {
    await mesh?.stop();
    receiver?.close();
  });

  it("reaches the sandbox human; the webhook gets card.proposed with source console_sandbox, then the resolution", async () => {
    const human = await sandboxHuman("confirm");
    const { agentId, key, opaqueIds } = await agent("Console_Bot", human);

    const proposed = await json([
      ...["agent", "propose", "--agent", "Console_Bot", "--human", human],
      ...["--title", "Pay invoice 2231", "--category", "payments"],
      ...["--detail-label", "Amount", "--detail-value", "EUR 120.00", "--ttl-seconds", "900"],
    ]);
    expect(proposed).toEqual({
      card_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      request_id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      agent_id: agentId,
      status: "queued",
      ttl_at: new Date(start.getTime() + 900_000).toISOString(),
    });

    expect(await delivered("agents_ask.card.proposed", proposed.request_id)).toEqual({
      type: "agents_ask.card.proposed",
      request_id: proposed.request_id,
      card_id: proposed.card_id,
      agent_id: agentId,
      agent_name: "Console_Bot",
      category: "payments",
      summary_title: "Pay invoice 2231",
      ttl_at: proposed.ttl_at,
      source: "console_sandbox",
    });
    const resolution = await delivered("agents_ask.resolution.confirmed", proposed.request_id);
    expect(resolution).toMatchObject({
      type: "agents_ask.resolution.confirmed",
      outcome: "confirmed",
      metadata: { card_id: proposed.card_id, agent_id: agentId, agent_name: "Console_Bot" },
    });

    // The agent sees it as its own card, and its proof names the human by the agent's opaque_id.
    const status = result(await api.get("/agentlink/check-status", { request_id: proposed.request_id }, key));
    expect(status).toMatchObject({ status: "approved", verdict: "approve", resolution_jwt: resolution.proof_token });
    const keySet = createRemoteJWKSet(new URL(`${mesh.gatewayUrl}/.well-known/jwks.json`));
    const { payload } = await jwtVerify(resolution.proof_token as string, keySet, { issuer, currentDate: start });
    expect(payload).toMatchObject({
      jti: proposed.request_id,
      card_id: proposed.card_id,
      sub: opaqueIds[0],
      amr: ["sandbox"],
    });
    // Operators can tell it apart in the audit log.
    const audit = await json(["agent", "audit", "--card-id", proposed.card_id]);
    expect(audit.entries[0]).toMatchObject({ action: "card.proposed", detail: { source: "console_sandbox" } });
  }, 90_000);

  it("an agent's own inquire: card.proposed has no source", async () => {
    const human = await sandboxHuman("confirm");
    const { key, opaqueIds } = await agent("Own_Bot", human);
    const requestId = uuid();
    const queued = result(
      await api.post(
        "/agentlink/inquire",
        {
          request_id: requestId,
          opaque_id: opaqueIds[0],
          action: { summary_title: "Pay invoice 2232", category: "payments" },
        },
        key,
      ),
    );
    const body = await delivered("agents_ask.card.proposed", requestId);
    expect(body).toMatchObject({ card_id: queued.card_id, summary_title: "Pay invoice 2232" });
    expect(body).not.toHaveProperty("source");
  }, 90_000);

  it("a silent sandbox human lists the proposed card as any card", async () => {
    const human = await sandboxHuman("silent");
    const { agentId } = await agent("Quiet_Bot", human);
    const proposed = await json([
      ...["agent", "propose", "--agent", "Quiet_Bot", "--human", human],
      ...["--title", "Renew the domain", "--category", "payments"],
    ]);
    expect(await cardsOf(human)).toEqual([
      expect.objectContaining({
        id: proposed.card_id,
        request_id: proposed.request_id,
        agent: expect.objectContaining({ id: agentId, name: "Quiet_Bot" }),
        summary_title: "Renew the domain",
        summary_detail: null,
        category: "payments",
        trusted_account_id: null,
        status: "queued",
        ttl_at: new Date(start.getTime() + 600_000).toISOString(),
        created_at: start.toISOString(),
      }),
    ]);
  }, 90_000);

  const refused = (stderr: string) => ({ code: 1, stdout: "", stderr: `svcctl: ${stderr}\n` });

  it("refuses unknown agents and humans, humans not bound to the agent and people who are not sandbox humans, creating nothing", async () => {
    const bound = await sandboxHuman("silent");
    const unbound = await sandboxHuman("silent");
    await agent("Strict_Bot", bound);
    const { sessionToken } = await mesh.console.mintDevSession({
      issuer: mesh.devIdpIssuer,
      subject: "a-real-person",
    });
    const person = result(await api.get("/app/me", {}, sessionToken)).svc_user_id as string;

    expect(await propose("Nobody_Bot", bound)).toEqual(refused('NotFound: no development agent is named "Nobody_Bot"'));
    const otherOrganization = uuid();
    expect(await propose("Strict_Bot", bound, "--org", otherOrganization)).toEqual(
      refused(`NotFound: no development agent is named "Strict_Bot" in organization ${otherOrganization}`),
    );
    const stranger = uuid();
    expect(await propose("Strict_Bot", stranger)).toEqual(refused(`NotFound: no human has svc_user_id "${stranger}"`));
    expect(await propose("Strict_Bot", unbound)).toEqual(
      refused(
        `FailedPrecondition: sandbox human ${unbound} is not bound to agent "Strict_Bot": claim one of its link codes first (svcctl human claim)`,
      ),
    );
    expect(await propose("Strict_Bot", person)).toEqual(
      refused(`FailedPrecondition: human ${person} is not a sandbox human`),
    );
    expect(await cardsOf(bound)).toEqual([]);
    expect(await cardsOf(unbound)).toEqual([]);
  }, 90_000);

  it("answers inquire's own refusals in inquire's words, and svcctl's usage errors, creating nothing", async () => {
    const human = await sandboxHuman("silent");
    await agent("Careful_Bot", human);
    const otherCategory = await svcctl([
      ...["agent", "propose", "--agent", "Careful_Bot", "--human", human],
      ...["--title", "Buy a coin", "--category", "crypto"],
    ]);
    expect(otherCategory).toEqual(refused(`PermissionDenied: category "crypto" is not one of the agent's categories`));
    expect(await propose("Careful_Bot", human, "--ttl-seconds", "30")).toEqual(
      refused("InvalidArgument: ttl_seconds must be at least 60"),
    );
    // svcctl's own usage: exit 2, nothing sent.
    expect((await propose("Careful_Bot", human, "--detail-label", "Amount")).code).toBe(2);
    expect((await propose("Careful_Bot", human, "--ttl-seconds", "ten")).code).toBe(2);
    expect(await cardsOf(human)).toEqual([]);
  }, 90_000);

  it("is refused by a production deployment", async () => {
    const human = await sandboxHuman("silent");
    await agent("Late_Bot", human);
    await mesh.restart("agentlink", {
      SVC_DEPLOYMENT: "production",
      AGENTLINK_KEY_PEPPER: randomBytes(32).toString("base64"),
      AGENTLINK_OPAQUE_ID_KEY: randomBytes(32).toString("base64"),
      AGENTLINK_CALLBACK_SECRET_KEY: randomBytes(32).toString("base64"),
      SVC_CLOCK_FILE: "",
    });
    expect(await propose("Late_Bot", human)).toEqual({
      code: 1,
      stdout: "",
      stderr:
        "svcctl: FailedPrecondition: console sandbox proposals are development only; this is a production deployment\n",
    });
  }, 90_000);
});

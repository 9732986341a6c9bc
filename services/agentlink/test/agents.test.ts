import { createHmac } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { credentialChangeStream, credentialChangeSubject, ManualClock, uuid } from "@svc/platform";
import { AgentKeyRefusal, AgentStatus } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { CredentialKind, Environment } from "@svc/proto/common/v1/caller_pb.js";
import { CredentialChange, CredentialChangedSchema } from "@svc/proto/common/v1/credential_watch_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { natsUrl, uniqueName } from "../../../test/harness/index.ts";
import { openCallbackSecret } from "../src/agents/callback-secret.ts";
import { callbackSecretKey, keyPepper, refusal, startTestAgentlink, type TestAgentlink } from "./support/agentlink.ts";

const clock = new ManualClock("2026-11-22T10:00:00Z");
let agentlink: TestAgentlink;
let nc: NatsConnection;

beforeAll(async () => {
  agentlink = await startTestAgentlink("agentlink_agents", { clock });
  nc = await connect({ servers: natsUrl() });
});
afterAll(async () => {
  await nc?.drain();
  await agentlink?.stop();
});

const register = (
  extra: { name?: string; environment?: Environment; organizationId?: string; callbackUrl?: string } = {},
) =>
  agentlink.console.registerAgent({
    organizationId: extra.organizationId ?? uniqueName("org"),
    environment: extra.environment ?? Environment.DEVELOPMENT,
    name: extra.name ?? uniqueName("bot").slice(0, 40),
    categories: ["payments", "travel"],
    ...(extra.callbackUrl !== undefined && { callbackUrl: extra.callbackUrl }),
  });

const authenticate = (agentKey: string, environments: Environment[] = []) =>
  agentlink.client.authenticateAgentKey({ agentKey, environments });

/** The key with its secret replaced (same name, same form). */
const otherSecret = (key: string) => `${key.slice(0, -43)}${"Q".repeat(43)}`;

describe("registering agents", () => {
  it("shows the key once and stores only the keyed hash of its secret", async () => {
    const registered = await register({ name: "Hash_Bot-1" });
    const secret = registered.agentKey.slice(-43);
    expect(registered.agentKey).toBe(`svc_agent_Hash_Bot-1__${secret}`);
    expect(registered.callbackSecret).toBeUndefined();
    const rows = await agentlink.sql<{ secret_hash: Buffer }>(
      `select k.secret_hash from agent_key k where k.agent_id = $1`,
      [registered.agent!.agentId],
    );
    expect(rows).toEqual([{ secret_hash: createHmac("sha256", keyPepper).update(secret).digest() }]);
    const everything = JSON.stringify(
      await agentlink.sql(`select * from agent a join agent_key k on k.agent_id = a.id`),
    );
    expect(everything).not.toContain(secret);
  });

  it("issues a whsec_ callback secret with a callback URL, stored sealed to the agent", async () => {
    const registered = await register({ callbackUrl: "https://agent.example/callback" });
    expect(registered.callbackSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const [row] = await agentlink.sql<{ callback_secret_sealed: Buffer }>(
      `select callback_secret_sealed from agent where id = $1`,
      [registered.agent!.agentId],
    );
    expect(row!.callback_secret_sealed.toString("latin1")).not.toContain(registered.callbackSecret);
    expect(openCallbackSecret(callbackSecretKey, registered.agent!.agentId, row!.callback_secret_sealed)).toBe(
      registered.callbackSecret,
    );
    expect(() => openCallbackSecret(callbackSecretKey, uuid(), row!.callback_secret_sealed)).toThrow();
  });

  it("names an agent's callback target to webhook-dispatch: none without a URL, once revoked, or for no agent", async () => {
    const organizationId = uniqueName("org");
    const registered = await register({ organizationId, callbackUrl: "https://agent.example/callback" });
    const agentId = registered.agent!.agentId;
    const { target } = await agentlink.callbacks.getCallbackTarget({ agentId });
    expect(target && { organizationId: target.organizationId, url: target.url, secret: target.secret }).toEqual({
      organizationId,
      url: "https://agent.example/callback",
      secret: registered.callbackSecret,
    });
    const withoutUrl = await register();
    expect(
      (await agentlink.callbacks.getCallbackTarget({ agentId: withoutUrl.agent!.agentId })).target,
    ).toBeUndefined();
    expect((await agentlink.callbacks.getCallbackTarget({ agentId: uuid() })).target).toBeUndefined();
    expect((await agentlink.callbacks.getCallbackTarget({ agentId: "agent-1" })).target).toBeUndefined();
    await agentlink.console.revokeAgent({ agentId });
    expect((await agentlink.callbacks.getCallbackTarget({ agentId })).target).toBeUndefined();
  });

  it("keeps names unique per organization and environment, and checks the fields", async () => {
    const organizationId = uniqueName("org");
    await register({ organizationId, name: "Twin" });
    expect((await refusal(register({ organizationId, name: "Twin" }))).code).toBe(Code.AlreadyExists);
    await register({ organizationId, name: "Twin", environment: Environment.PRODUCTION });
    await register({ name: "Twin" });
    expect((await refusal(register({ name: "no spaces" }))).code).toBe(Code.InvalidArgument);
    expect((await refusal(register({ callbackUrl: "ftp://agent.example" }))).code).toBe(Code.InvalidArgument);
    const none = await refusal(
      agentlink.console.registerAgent({
        organizationId,
        environment: Environment.DEVELOPMENT,
        name: "NoCategories",
        categories: [],
      }),
    );
    expect(none.code).toBe(Code.InvalidArgument);
  });

  it("lists an organization's agents without keys or secrets", async () => {
    const organizationId = uniqueName("org");
    const a = await register({ organizationId, name: "ListA", callbackUrl: "https://a.example/cb" });
    await register({ organizationId, name: "ListB" });
    const { agents } = await agentlink.console.listAgents({ organizationId });
    expect(agents.map((agent) => [agent.name, agent.displayName, agent.categories, agent.callbackUrl])).toEqual([
      ["ListA", "ListA", ["payments", "travel"], "https://a.example/cb"],
      ["ListB", "ListB", ["payments", "travel"], undefined],
    ]);
    const listed = JSON.stringify(agents, (_, value) => (typeof value === "bigint" ? String(value) : value));
    expect(listed).not.toContain(a.agentKey.slice(-43));
    expect(listed).not.toContain(a.callbackSecret);
  });
});

describe("authenticating agent keys", () => {
  it("answers the agent a key stands for, as an agent-key caller", async () => {
    const registered = await register();
    const answer = await authenticate(registered.agentKey);
    expect(answer.refusal).toBe(AgentKeyRefusal.UNSPECIFIED);
    expect(answer.caller).toMatchObject({
      organizationId: registered.agent!.organizationId,
      environment: Environment.DEVELOPMENT,
      credentialId: registered.agent!.agentId,
      credentialKind: CredentialKind.AGENT_KEY,
    });
    expect(answer.agent).toMatchObject({ name: registered.agent!.name, categories: ["payments", "travel"] });
  });

  it("tells apart the four causes it decides, and a malformed key", async () => {
    const registered = await register();
    const refusalOf = async (key: string, environments: Environment[] = []) =>
      (await authenticate(key, environments)).refusal;
    expect(await refusalOf("svc_agent_x")).toBe(AgentKeyRefusal.WRONG_KEY_FORM);
    expect(await refusalOf(registered.agentKey.replace(registered.agent!.name, "Nobody_By_This_Name"))).toBe(
      AgentKeyRefusal.UNKNOWN_AGENT_NAME,
    );
    expect(await refusalOf(registered.agentKey, [Environment.PRODUCTION])).toBe(AgentKeyRefusal.OTHER_ENVIRONMENT);
    expect(await refusalOf(registered.agentKey, [Environment.DEVELOPMENT])).toBe(AgentKeyRefusal.UNSPECIFIED);
    expect(await refusalOf(otherSecret(registered.agentKey))).toBe(AgentKeyRefusal.WRONG_SECRET);
    const revoked = await agentlink.console.revokeAgent({ agentId: registered.agent!.agentId });
    expect(revoked.agent?.status).toBe(AgentStatus.REVOKED);
    expect(await refusalOf(registered.agentKey)).toBe(AgentKeyRefusal.REVOKED_AGENT);
    // A wrong secret stays a wrong secret on a revoked agent: the cause never confirms a guess.
    expect(await refusalOf(otherSecret(registered.agentKey))).toBe(AgentKeyRefusal.WRONG_SECRET);
  });

  it("finds the right agent when organizations share a name", async () => {
    const name = "Shared_Name";
    const first = await register({ name });
    const second = await register({ name, environment: Environment.PRODUCTION });
    expect((await authenticate(first.agentKey)).agent?.agentId).toBe(first.agent!.agentId);
    expect((await authenticate(second.agentKey)).agent?.agentId).toBe(second.agent!.agentId);
  });

  it("keeps the old key working for the overlap after a rotation, then refuses it as a wrong secret", async () => {
    clock.set("2026-11-22T10:00:00Z");
    const registered = await register();
    const rotated = await agentlink.console.rotateAgentKey({ agentId: registered.agent!.agentId });
    expect(rotated.agentKey).not.toBe(registered.agentKey);
    expect(timestampDate(rotated.previousKeysExpireAt!)).toEqual(new Date("2026-11-23T10:00:00Z"));
    const works = async (key: string) => (await authenticate(key)).refusal === AgentKeyRefusal.UNSPECIFIED;

    clock.set("2026-11-23T09:59:59.999Z");
    expect([await works(registered.agentKey), await works(rotated.agentKey)]).toEqual([true, true]);
    // A gateway keeps the older key's answer no longer than the overlap; the newest key has no end.
    expect(timestampDate((await authenticate(registered.agentKey)).keyExpiresAt!)).toEqual(
      new Date("2026-11-23T10:00:00Z"),
    );
    expect((await authenticate(rotated.agentKey)).keyExpiresAt).toBeUndefined();
    clock.set("2026-11-23T10:00:00Z");
    expect((await authenticate(registered.agentKey)).refusal).toBe(AgentKeyRefusal.WRONG_SECRET);
    expect(await works(rotated.agentKey)).toBe(true);

    // A second rotation within the overlap does not extend the first key's life.
    clock.set("2026-11-22T12:00:00Z");
    const again = await agentlink.console.rotateAgentKey({ agentId: registered.agent!.agentId });
    clock.set("2026-11-23T10:00:00Z");
    expect([await works(registered.agentKey), await works(rotated.agentKey), await works(again.agentKey)]).toEqual([
      false,
      true,
      true,
    ]);
    clock.set("2026-11-22T10:00:00Z");
  });

  it("tells the gateways of a revoke and a rotation before it answers, through its outbox", async () => {
    const jsm = await jetstreamManager(nc);
    const stream = credentialChangeStream(agentlink.env.SVC_EVENT_STREAM!);
    const subject = credentialChangeSubject(agentlink.env.SVC_EVENT_SUBJECT_PREFIX!);
    /** The last credential change the stream holds, as stored by the time the console call answered. */
    const lastChange = async () => {
      const stored = await jsm.streams.getMessage(stream, { last_by_subj: subject });
      return {
        seq: stored!.seq,
        messageId: stored!.header.get("Nats-Msg-Id"),
        change: fromBinary(CredentialChangedSchema, stored!.data),
      };
    };
    const outboxed = async (messageId: string | undefined) =>
      (await agentlink.sql<{ subject: string }>(`select subject from outbox where message_id = $1`, [messageId])).map(
        (row) => row.subject,
      );

    const registered = await register();
    const agentId = registered.agent!.agentId;
    await agentlink.console.rotateAgentKey({ agentId });
    const rotated = await lastChange();
    expect(rotated.change).toMatchObject({
      credential: { case: "agentId", value: agentId },
      change: CredentialChange.ROTATED,
    });
    expect(await outboxed(rotated.messageId)).toEqual([subject]);

    await agentlink.console.revokeAgent({ agentId });
    const revoked = await lastChange();
    expect(revoked.change).toMatchObject({
      credential: { case: "agentId", value: agentId },
      change: CredentialChange.REVOKED,
    });
    expect(revoked.seq).toBeGreaterThan(rotated.seq);
    expect(await outboxed(revoked.messageId)).toEqual([subject]);

    // Revoking again changes nothing, so it tells nothing.
    await agentlink.console.revokeAgent({ agentId });
    expect((await lastChange()).seq).toBe(revoked.seq);
  });

  it("does not rotate or find unknown agents", async () => {
    expect((await refusal(agentlink.console.rotateAgentKey({ agentId: uuid() }))).code).toBe(Code.NotFound);
    expect((await refusal(agentlink.console.revokeAgent({ agentId: "nope" }))).code).toBe(Code.NotFound);
  });
});

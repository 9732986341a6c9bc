import { createHmac } from "node:crypto";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { ManualClock, uuid } from "@svc/platform";
import { BindingStatus } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { type Caller, Environment } from "@svc/proto/common/v1/caller_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uniqueName } from "../../../test/harness/index.ts";
import { detailOf, opaqueIdKey, refusal, startTestAgentlink, type TestAgentlink } from "./support/agentlink.ts";

const start = new Date("2026-11-22T10:00:00Z");
const clock = new ManualClock(start);
let agentlink: TestAgentlink;

beforeAll(async () => {
  agentlink = await startTestAgentlink("agentlink_bindings", { clock });
});
afterAll(async () => {
  await agentlink?.stop();
});

/** A registered agent, as the gateway would call for it: with its authenticated caller. */
async function newAgent(): Promise<{ id: string; caller: Caller }> {
  const registered = await agentlink.console.registerAgent({
    organizationId: uniqueName("org"),
    environment: Environment.DEVELOPMENT,
    name: uniqueName("bot").slice(0, 40),
    categories: ["payments"],
  });
  const { caller } = await agentlink.client.authenticateAgentKey({ agentKey: registered.agentKey });
  return { id: registered.agent!.agentId, caller: caller! };
}

const bindSession = async (agent: { caller: Caller }) =>
  (await agentlink.client.startBindSession({ caller: agent.caller })).linkCode;
const check = (agent: { caller: Caller }, linkCode: string) =>
  agentlink.client.checkBinding({ caller: agent.caller, linkCode });

describe("binding a person to an agent", () => {
  it("starts a ten-minute code that the person claims once; the agent then reads the opaque_id", async () => {
    clock.set(start);
    const agent = await newAgent();
    const started = await agentlink.client.startBindSession({ caller: agent.caller });
    expect(started.linkCode).toMatch(/^[2-9A-HJKMNP-Z]{8}$/);
    expect(timestampDate(started.expiresAt!)).toEqual(new Date(start.getTime() + 600_000));
    const pending = await check(agent, started.linkCode);
    expect([pending.status, pending.opaqueId, pending.boundAt]).toEqual([BindingStatus.PENDING, undefined, undefined]);

    const person = uuid();
    clock.set(new Date(start.getTime() + 60_000));
    const claimed = await agentlink.client.claimLinkCode({
      svcUserId: person,
      linkCode: started.linkCode.toLowerCase(),
    });
    expect(claimed.agent?.agentId).toBe(agent.id);
    const state = await check(agent, started.linkCode);
    expect(state.status).toBe(BindingStatus.CLAIMED);
    expect(state.opaqueId).toBe(createHmac("sha256", opaqueIdKey).update(`${agent.id}:${person}`).digest("base64url"));
    expect(timestampDate(state.boundAt!)).toEqual(new Date(start.getTime() + 60_000));

    const reuse = await refusal(agentlink.client.claimLinkCode({ svcUserId: uuid(), linkCode: started.linkCode }));
    expect(reuse.code).toBe(Code.AlreadyExists);
  });

  it("expires a code after ten minutes", async () => {
    clock.set(start);
    const agent = await newAgent();
    const code = await bindSession(agent);
    clock.set(new Date(start.getTime() + 600_000 - 1));
    expect((await check(agent, code)).status).toBe(BindingStatus.PENDING);
    clock.set(new Date(start.getTime() + 600_000));
    expect((await check(agent, code)).status).toBe(BindingStatus.EXPIRED);
    const late = await refusal(agentlink.client.claimLinkCode({ svcUserId: uuid(), linkCode: code }));
    expect(late.code).toBe(Code.FailedPrecondition);
    clock.set(start);
  });

  it("shows a code only to the agent that started it", async () => {
    const [owner, other] = [await newAgent(), await newAgent()];
    const code = await bindSession(owner);
    expect((await refusal(check(other, code))).code).toBe(Code.NotFound);
    expect((await refusal(check(owner, "ABCDEFGH"))).code).toBe(Code.NotFound);
    expect((await refusal(check(owner, "not a code"))).code).toBe(Code.NotFound);
    expect((await refusal(agentlink.client.claimLinkCode({ svcUserId: uuid(), linkCode: "ABCDEFGH" }))).code).toBe(
      Code.NotFound,
    );
  });

  it("gives one person a different opaque_id per agent, the same one on every binding to an agent", async () => {
    const person = uuid();
    const [a, b] = [await newAgent(), await newAgent()];
    const bind = async (agent: { caller: Caller; id: string }) => {
      const code = await bindSession(agent);
      await agentlink.client.claimLinkCode({ svcUserId: person, linkCode: code });
      return (await check(agent, code)).opaqueId;
    };
    const [forA, forB] = [await bind(a), await bind(b)];
    expect(forA).not.toBe(forB);
    expect(forA).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const listed = await agentlink.client.listBindings({ svcUserId: person });
    expect(listed.bindings.map((binding) => binding.agent?.agentId).sort()).toEqual([a.id, b.id].sort());

    await agentlink.client.unbind({ svcUserId: person, agentId: a.id });
    expect((await agentlink.client.listBindings({ svcUserId: person })).bindings.map((x) => x.agent?.agentId)).toEqual([
      b.id,
    ]);
    expect((await refusal(agentlink.client.unbind({ svcUserId: person, agentId: a.id }))).code).toBe(Code.NotFound);
    expect(await bind(a)).toBe(forA);
    const rows = await agentlink.sql(`select * from binding where svc_user_id = $1`, [person]);
    expect(rows).toHaveLength(3);
  });

  it("erases a deleted person: bindings and claimed codes go, other people's stay; a repeat erases nothing", async () => {
    clock.set(start);
    const [agent, other] = [await newAgent(), await newAgent()];
    const [person, bystander] = [uuid(), uuid()];
    const code = await bindSession(agent);
    await agentlink.client.claimLinkCode({ svcUserId: person, linkCode: code });
    await agentlink.client.claimLinkCode({ svcUserId: person, linkCode: await bindSession(other) });
    await agentlink.client.unbind({ svcUserId: person, agentId: other.id });
    await agentlink.client.claimLinkCode({ svcUserId: bystander, linkCode: await bindSession(agent) });

    expect(await agentlink.client.eraseHuman({ svcUserId: person })).toMatchObject({ bindingsErased: 2 });
    const left = async (svcUserId: string) =>
      (
        await agentlink.sql<{ n: string }>(
          `select (select count(*) from binding where svc_user_id = $1) + (select count(*) from bind_session where svc_user_id = $1) as n`,
          [svcUserId],
        )
      )[0]!.n;
    expect(await left(person)).toBe("0");
    expect(await left(bystander)).toBe("2");
    expect((await agentlink.client.listBindings({ svcUserId: person })).bindings).toEqual([]);
    expect((await refusal(check(agent, code))).code).toBe(Code.NotFound);
    expect(await agentlink.client.eraseHuman({ svcUserId: person })).toMatchObject({ bindingsErased: 0 });
    expect((await refusal(agentlink.client.eraseHuman({ svcUserId: "me" }))).code).toBe(Code.InvalidArgument);
  });

  it("keeps the agent's label for the person, shows it to them at claim and in their list, and a later code's label replaces it", async () => {
    const agent = await newAgent();
    const first = await agentlink.client.startBindSession({ caller: agent.caller, personLabel: "  Dana, finance " });
    expect((await check(agent, first.linkCode)).personLabel).toBe("Dana, finance");
    const person = uuid();
    const claimed = await agentlink.client.claimLinkCode({ svcUserId: person, linkCode: first.linkCode });
    expect(claimed.personLabel).toBe("Dana, finance");
    const unlabelled = await bindSession(agent);
    expect((await agentlink.client.claimLinkCode({ svcUserId: person, linkCode: unlabelled })).personLabel).toBe(
      "Dana, finance",
    );
    const renamed = await agentlink.client.startBindSession({ caller: agent.caller, personLabel: "Dana (CFO)" });
    await agentlink.client.claimLinkCode({ svcUserId: person, linkCode: renamed.linkCode });
    const [binding] = (await agentlink.client.listBindings({ svcUserId: person })).bindings;
    expect(binding?.personLabel).toBe("Dana (CFO)");
  });

  it("refuses a label the trust layer refuses, and creates no code", async () => {
    const agent = await newAgent();
    const codes = async () =>
      Number(
        (
          await agentlink.sql<{ n: string }>(`select count(*) as n from bind_session where agent_id = $1`, [agent.id])
        )[0]?.n,
      );
    for (const hostile of ["   ", "x".repeat(65)]) {
      const refused = await refusal(agentlink.client.startBindSession({ caller: agent.caller, personLabel: hostile }));
      expect([refused.code, refused.rawMessage, detailOf(refused)]).toEqual([
        Code.InvalidArgument,
        expect.stringContaining("person_label"),
        {},
      ]);
    }
    for (const [hostile, type] of [
      ["Dana\u202Eecnanif", "bidi_control"],
      ["Dana\u200Bfinance", "invisible_character"],
      ["Dana\nfinance", "control_character"],
      ["Dana https://evil.example", "url_in_text"],
      ["Dana\u0007", "control_character"],
    ]) {
      const refused = await refusal(agentlink.client.startBindSession({ caller: agent.caller, personLabel: hostile }));
      expect(refused.code).toBe(Code.InvalidArgument);
      expect(detailOf(refused), hostile).toMatchObject({
        status_code: 422,
        code: "trust_layer_rejected",
        retryable: false,
        violations: expect.arrayContaining([expect.objectContaining({ type, path: "/person_label" })]),
      });
    }
    expect(await codes()).toBe(0);
  });

  it("refuses agent operations without an agent-key caller", async () => {
    const agent = await newAgent();
    const asSecretKey = { ...agent.caller, credentialKind: 1 };
    expect((await refusal(agentlink.client.startBindSession({ caller: asSecretKey }))).code).toBe(
      Code.PermissionDenied,
    );
  });

  it("refuses the sandbox claim in production, before asking anything", async () => {
    const production = await startTestAgentlink("agentlink_production", {
      clock,
      env: { SVC_DEPLOYMENT: "production", AGENTLINK_ACCOUNT_URL: "http://127.0.0.1:9" },
    });
    try {
      const refused = await refusal(
        production.console.sandboxClaimLinkCode({ svcUserId: uuid(), linkCode: "ABCDEFGH" }),
      );
      expect([refused.code, refused.rawMessage]).toEqual([
        Code.FailedPrecondition,
        "sandbox humans do not exist in production",
      ]);
    } finally {
      await production.stop();
    }
  });
});

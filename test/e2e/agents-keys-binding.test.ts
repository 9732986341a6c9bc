import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { issuer, partnerApi, type Reply, result } from "./gate-support.ts";

/**
 * Agents Ask, agents and binding, through the gateway against the real mesh: agents registered with
 * svcctl, the six 401 causes of an agent key (one plain 401 for the partner, one log line with its
 * cause for the operator), revocation from the next request and rotation within its overlap (by the
 * shared clock), and binding: bind-session, the person's claim in the app (or a
 * sandbox human's through svcctl), check-binding with a pairwise opaque_id, expiry, unbinding.
 */
const start = new Date("2026-11-22T10:00:00Z");
const at = (ms: number) => new Date(start.getTime() + ms);
const agentKeyForm = /^svc_agent_[A-Za-z0-9_-]{3,40}__[A-Za-z0-9_-]{43}$/;
/** What every refused agent key reads, whatever the cause. */
const refusedAgentKey = {
  statusCode: 401,
  message: "a valid agent key is required: Authorization: Bearer svc_agent_<Name>__<secret>",
};

describe("agents, agent keys and binding", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let organizationId: string;

  const svcctl = (args: string[]) => runSvcctl(mesh, args);
  const json = async (args: string[]) => {
    const run = await svcctl(args);
    expect(run.stderr, run.stderr).toBe("");
    expect(run.code).toBe(0);
    return JSON.parse(run.stdout);
  };
  const registerAgent = (name: string, extra: string[] = []) =>
    json([
      "agent",
      "register",
      "--org",
      organizationId,
      "--env",
      "development",
      "--name",
      name,
      "--category",
      "payments",
      ...extra,
    ]);
  const newPerson = async () => {
    const { svc_user_id } = await json(["human", "create", "--env", "development"]);
    const { session_token } = await json(["human", "session", "--human", svc_user_id]);
    return { svcUserId: svc_user_id as string, session: session_token as string };
  };

  /** The gateway's "agent key refused" log lines so far, by cause. */
  const refusalsLogged = (cause: string) =>
    mesh
      .logs()
      .split("\n")
      .filter((line) => line.startsWith("[gateway] {"))
      .map((line) => JSON.parse(line.slice("[gateway] ".length)))
      .filter((entry) => entry.msg === "agent key refused" && entry.cause === cause);
  /** The plain 401 every cause gets, and exactly one more log line with this cause. */
  const refusedAs = async (cause: string, call: () => Promise<Reply>) => {
    const before = refusalsLogged(cause).length;
    const reply = await call();
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ data: { error: refusedAgentKey } });
    await vi.waitFor(() => expect(refusalsLogged(cause)).toHaveLength(before + 1), { timeout: 10_000 });
    expect(refusalsLogged(cause).at(-1)).toMatchObject({ level: "warn", operation: "agentBindSession" });
  };
  const bindSession = (key: string | undefined) => api.post("/agent/bind-session", {}, key);

  beforeAll(async () => {
    mesh = await startTestMesh("agents_keys", { only: ["signing", "account", "agentlink"], clockAt: start });
    api = partnerApi(mesh);
    ({ organizationId } = await mesh.console.createOrganization({ name: "Agents" }));
  });
  afterAll(async () => {
    await mesh?.stop();
  });

  it("registers agents with svcctl, shows a key once and lists agents without keys or secrets", async () => {
    const plain = await registerAgent("Plain_Bot");
    expect(plain).toEqual({ agent_id: expect.any(String), agent_key: expect.stringMatching(agentKeyForm) });
    expect(plain.agent_key.startsWith("svc_agent_Plain_Bot__")).toBe(true);
    const called = await registerAgent("Callback-Bot", [
      "--display-name",
      "Callback Bot",
      "--callback-url",
      "https://agent.example/cb",
    ]);
    expect(called.callback_secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const listed = await svcctl(["agent", "list", "--org", organizationId]);
    const { agents } = JSON.parse(listed.stdout);
    expect(
      agents.map((a: { name: string; display_name: string; callback_url: string | null; status: string }) => [
        a.name,
        a.display_name,
        a.callback_url,
        a.status,
      ]),
    ).toEqual([
      // Registered at the same instant (the clock stands still): then by name.
      ["Callback-Bot", "Callback Bot", "https://agent.example/cb", "active"],
      ["Plain_Bot", "Plain_Bot", null, "active"],
    ]);
    for (const secret of [plain.agent_key, called.agent_key, called.callback_secret])
      expect(listed.stdout).not.toContain(secret);
    expect(
      (
        await svcctl([
          "agent",
          "register",
          "--org",
          organizationId,
          "--env",
          "development",
          "--name",
          "Plain_Bot",
          "--category",
          "x",
        ])
      ).code,
    ).toBe(1);
  });

  it("answers an agent key with the agent tier and refuses each of the six causes as the same plain 401, logging its cause", async () => {
    const agent = await registerAgent("Cause_Bot");
    const accepted = await bindSession(agent.agent_key);
    result(accepted);
    expect(accepted.body._rateLimit).toMatchObject({
      scope: "agent_test",
      buckets: {
        per_minute: { limit: 120 },
        hourly: { limit: 3000 },
        daily: { limit: 50_000 },
        in_flight: { limit: 200 },
      },
    });

    await refusedAs("missing_bearer", () => bindSession(undefined));
    await refusedAs("wrong_key_form", () => bindSession("svc_agent_Cause_Bot__short"));
    await refusedAs("wrong_key_form", () => bindSession("svc_dev_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"));
    await refusedAs("unknown_agent_name", () => bindSession(agent.agent_key.replace("Cause_Bot", "Nobody_Bot")));
    await refusedAs("wrong_secret", () => bindSession(`${agent.agent_key.slice(0, -43)}${"Q".repeat(43)}`));
  });

  it("refuses a revoked agent's key from the first request after the revoke, though the gateway had its answer cached", async () => {
    mesh.setClock(start);
    const agent = await registerAgent("Revoked_Bot");
    result(await bindSession(agent.agent_key));
    const revoked = await json(["agent", "revoke", "--agent-id", agent.agent_id]);
    expect(revoked).toMatchObject({ agent_id: agent.agent_id, status: "revoked", revoked_at: start.toISOString() });
    await refusedAs("revoked_agent", () => bindSession(agent.agent_key));
  });

  it("binds a person who claims the code in the app; check-binding then gives a pairwise opaque_id", async () => {
    mesh.setClock(start);
    const [travel, shop] = [await registerAgent("Travel_Bot"), await registerAgent("Shop_Bot")];
    const person = await newPerson();

    const started = result(await bindSession(travel.agent_key));
    expect(started).toEqual({
      link_code: expect.stringMatching(/^[2-9A-HJKMNP-Z]{8}$/),
      link_url: `svc://bind/${started.link_code}`,
      qr_code_url: `${issuer}/v1/qr/bind/${started.link_code}.svg`,
      expires_at: at(600_000).toISOString(),
    });
    const qr = await mesh.fetch(`${mesh.gatewayUrl}/v1/qr/bind/${started.link_code}.svg`);
    expect([qr.status, qr.headers.get("content-type"), (await qr.text()).startsWith("<svg")]).toEqual([
      200,
      "image/svg+xml",
      true,
    ]);
    expect(result(await api.get("/agent/check-binding", { link_code: started.link_code }, travel.agent_key))).toEqual({
      status: "pending",
      opaque_id: null,
      bound_at: null,
      person_label: null,
    });

    mesh.setClock(at(60_000));
    const claimed = result(
      await api.post("/app/agent-bindings/claim", { link_code: started.link_code }, person.session),
    );
    expect(claimed).toEqual({
      agent: { id: travel.agent_id, name: "Travel_Bot", display_name: "Travel_Bot", avatar_asset: null },
      bound_at: at(60_000).toISOString(),
      person_label: null,
    });
    const travelBinding = result(
      await api.get("/agent/check-binding", { link_code: started.link_code }, travel.agent_key),
    );
    expect(travelBinding).toEqual({
      status: "claimed",
      opaque_id: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      bound_at: at(60_000).toISOString(),
      person_label: null,
    });
    expect(JSON.stringify(travelBinding)).not.toContain(person.svcUserId);

    // Single use: a second claim of the same code is a 409.
    const other = await newPerson();
    const reused = await api.post("/app/agent-bindings/claim", { link_code: started.link_code }, other.session);
    expect(reused.body.data.error).toMatchObject({ statusCode: 409 });

    // The same person bound to another agent has another opaque_id there.
    const shopCode = result(await bindSession(shop.agent_key)).link_code;
    result(await api.post("/app/agent-bindings/claim", { link_code: shopCode }, person.session));
    const shopBinding = result(await api.get("/agent/check-binding", { link_code: shopCode }, shop.agent_key));
    expect(shopBinding.opaque_id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(shopBinding.opaque_id).not.toBe(travelBinding.opaque_id);

    // Only the agent that started a code sees it; an unknown code is the same 404.
    for (const reply of [
      await api.get("/agent/check-binding", { link_code: started.link_code }, shop.agent_key),
      await api.get("/agent/check-binding", { link_code: "ABCDEFGH" }, travel.agent_key),
    ]) {
      expect(reply.status).toBe(200);
      expect(reply.body.data.error).toEqual({
        statusCode: 404,
        message: "no bind session with that link_code for this agent",
      });
    }

    // The person lists their bindings and unbinds one; binding to that agent again gives it the same
    // opaque_id as before.
    const listed = result(await api.get("/app/agent-bindings", {}, person.session));
    expect(listed.bindings.map((b: { agent: { name: string } }) => b.agent.name).sort()).toEqual([
      "Shop_Bot",
      "Travel_Bot",
    ]);
    const unbound = result(await api.post("/app/agent-bindings/unbind", { agent_id: travel.agent_id }, person.session));
    expect(unbound).toEqual({ agent_id: travel.agent_id, unbound_at: at(60_000).toISOString() });
    expect(
      result(await api.get("/app/agent-bindings", {}, person.session)).bindings.map(
        (b: { agent: { name: string } }) => b.agent.name,
      ),
    ).toEqual(["Shop_Bot"]);
    const again = await api.post("/app/agent-bindings/unbind", { agent_id: travel.agent_id }, person.session);
    expect(again.body.data.error).toMatchObject({ statusCode: 404 });

    const rebindCode = result(await bindSession(travel.agent_key)).link_code;
    result(await api.post("/app/agent-bindings/claim", { link_code: rebindCode }, person.session));
    expect(result(await api.get("/agent/check-binding", { link_code: rebindCode }, travel.agent_key)).opaque_id).toBe(
      travelBinding.opaque_id,
    );
    mesh.setClock(start);
  });

  it("lets a sandbox human claim through svcctl, and expires an unclaimed code after 10 minutes", async () => {
    mesh.setClock(start);
    const agent = await registerAgent("Sandbox_Bot");
    const { svc_user_id } = await json(["human", "create", "--env", "development"]);
    const code = result(await bindSession(agent.agent_key)).link_code;
    expect(await json(["human", "claim", "--human", svc_user_id, "--code", code])).toEqual({
      agent_id: agent.agent_id,
      agent_name: "Sandbox_Bot",
      bound_at: start.toISOString(),
    });
    expect(result(await api.get("/agent/check-binding", { link_code: code }, agent.agent_key)).status).toBe("claimed");

    const late = result(await bindSession(agent.agent_key)).link_code;
    mesh.setClock(at(600_000 - 1));
    expect(result(await api.get("/agent/check-binding", { link_code: late }, agent.agent_key)).status).toBe("pending");
    mesh.setClock(at(600_000));
    expect(result(await api.get("/agent/check-binding", { link_code: late }, agent.agent_key))).toEqual({
      status: "expired",
      opaque_id: null,
      bound_at: null,
      person_label: null,
    });
    const refused = await svcctl(["human", "claim", "--human", svc_user_id, "--code", late]);
    expect([refused.code, refused.stderr]).toEqual([
      1,
      expect.stringContaining("FailedPrecondition: the link code has expired"),
    ]);
    const person = await newPerson();
    const gone = await api.post("/app/agent-bindings/claim", { link_code: late }, person.session);
    expect(gone.body.data.error).toEqual({
      statusCode: 410,
      message: "the link code has expired; ask the agent for a new one",
    });
    mesh.setClock(start);
  });

  it("keeps the old key working for the 24-hour overlap after rotate-key", async () => {
    mesh.setClock(start);
    const agent = await registerAgent("Rotating_Bot");
    const rotated = await json(["agent", "rotate-key", "--agent-id", agent.agent_id]);
    expect(rotated).toEqual({
      agent_id: agent.agent_id,
      agent_key: expect.stringMatching(agentKeyForm),
      previous_keys_expire_at: at(86_400_000).toISOString(),
    });
    result(await bindSession(agent.agent_key));
    result(await bindSession(rotated.agent_key));
    mesh.setClock(at(86_400_000 - 1));
    result(await bindSession(agent.agent_key));
    // Past the overlap, and past the gateway's cache of the answer from just before it.
    mesh.setClock(at(86_400_000 + 5000));
    await refusedAs("wrong_secret", () => bindSession(agent.agent_key));
    result(await bindSession(rotated.agent_key));
    mesh.setClock(start);
  });

  it("refuses a key of an environment the gateway does not serve as other_environment", async () => {
    const agent = await registerAgent("Elsewhere_Bot");
    await mesh.restart("gateway", { GATEWAY_AGENT_ENVIRONMENTS: "production" });
    await refusedAs("other_environment", () => bindSession(agent.agent_key));
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { dataError, newGate, newPartner, partnerApi, result, signedInPerson } from "./gate-support.ts";

/**
 * The partner's web flow of an Age Gate that names a person (linked-account): the evidence that person
 * proved ahead of time counts there too, so the page asks for no presentation; the person's identity
 * stays inside the mesh (the page's answer does not carry it), and only their passkey confirms.
 */
describe("the web flow of an Age Gate naming a person who proved their age ahead of time", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;
  let origin: string;

  beforeAll(async () => {
    mesh = await startTestMesh("age_named", { only: ["signing", "account", "gate"] });
    // The wallet fetches the request_uri and posts to the response_uri: they must be this gateway's.
    origin = mesh.gatewayUrl;
    await mesh.restart("gateway", { GATEWAY_PUBLIC_ORIGIN: origin });
    // svcctl proves an age ahead of time through the app API there.
    process.env.SVCCTL_API_URL = origin;
    api = partnerApi(mesh);
    partner = await newPartner(mesh, "Adults only");
    await newGate(mesh, partner.organizationId, { key: "adults", age: 18 });
  }, 180_000);
  afterAll(async () => {
    await mesh?.stop();
  });

  const person = () => signedInPerson(mesh, origin);

  /** A partner's Age Gate at 18, naming `svcUserId` when given: its id and the web_url's flow secret. */
  async function ageRequest(svcUserId?: string) {
    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token;
    const link = result(
      await api.post(
        "/sdk/create-verification-link",
        { gate: "adults", ...(svcUserId ? { svc_user_id: svcUserId } : {}) },
        grant,
      ),
    );
    return { requestId: link.request_id as string, t: decodeURIComponent(new URL(link.web_url).hash.slice(3)) };
  }

  it("over at 30 proven ahead of time: the named request's flow asks no presentation and completes over; an unnamed one still asks", async () => {
    const who = await person();
    const proved = await runSvcctl(mesh, ["wallet", "present", "--human", who.svcUserId, "--birthdate", "1996-01-15"]);
    expect(proved.code, proved.stderr).toBe(0);
    expect(JSON.parse(proved.stdout)).toEqual({ accepted: true });

    const named = await ageRequest(who.svcUserId);
    const openReply = await api.post("/flow/requests/open", { request_id: named.requestId, t: named.t, origin });
    const opened = result(openReply);
    expect(opened.age_presentation).toEqual({ needed: false });
    // The person the request names is the mesh's to know, not the page's.
    expect(JSON.stringify(openReply.body)).not.toContain(who.svcUserId);

    // Only the named person's passkey confirms. The options allow only theirs; another person's passkey
    // asserting anyway (as a discoverable credential) is refused, and the request stays pending.
    expect(opened.options.allowCredentials).toHaveLength(1);
    const stranger = await person();
    expect(
      dataError(
        await api.post("/flow/requests/confirm", {
          request_id: named.requestId,
          t: named.t,
          ceremony_id: opened.ceremony_id,
          response: stranger.authenticator.assert({ ...opened.options, allowCredentials: [] }, origin),
        }),
      ).statusCode,
    ).toBe(403);
    const reopened = result(await api.post("/flow/requests/open", { request_id: named.requestId, t: named.t, origin }));
    expect(reopened).toMatchObject({ status: "pending", age_presentation: { needed: false } });
    const confirmed = result(
      await api.post("/flow/requests/confirm", {
        request_id: named.requestId,
        t: named.t,
        ceremony_id: reopened.ceremony_id,
        response: who.authenticator.assert(reopened.options, origin),
      }),
    );
    expect(confirmed.status).toBe("completed");
    const record = result(
      await api.get("/verification/status", { request_id: named.requestId }, partner.devSecret),
      true,
    );
    expect(record).toMatchObject({ status: "completed", age_verdict: "over" });

    // A request that names nobody cannot know whose evidence counts: the page asks for the presentation.
    const unnamed = await ageRequest();
    const unnamedOpened = result(
      await api.post("/flow/requests/open", { request_id: unnamed.requestId, t: unnamed.t, origin }),
    );
    expect(unnamedOpened.age_presentation).toMatchObject({ needed: true });
    expect(unnamedOpened.age_presentation.presentation_id).toMatch(/^apr_[0-9a-f]{32}$/);

    // The same request opened in the app by someone holding its link: the flow's presentation (bound to
    // nobody) is not handed on; the app's step is the signed-in person's own, which the app routes read.
    const other = await person();
    const inApp = result(await other.app("/requests/open", { request_id: unnamed.requestId, t: unnamed.t, origin }));
    expect(inApp.age_presentation).toMatchObject({ needed: true });
    expect(inApp.age_presentation.presentation_id).not.toBe(unnamedOpened.age_presentation.presentation_id);
    expect(
      result(await other.app("/age/presentation", { presentation_id: inApp.age_presentation.presentation_id })),
    ).toEqual({
      state: "pending",
    });
  });

  it("a named person without evidence is still asked in the web flow", async () => {
    const who = await person();
    const named = await ageRequest(who.svcUserId);
    const opened = result(await api.post("/flow/requests/open", { request_id: named.requestId, t: named.t, origin }));
    expect(opened.age_presentation).toMatchObject({ needed: true });
  });
});

import { Code, ConnectError } from "@connectrpc/connect";
import { ManualClock } from "@svc/platform";
import { EndpointStatus } from "@svc/proto/webhook/v1/webhook_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uniqueName } from "../../../test/harness/index.ts";
import { retiredTypes, webhookTypes } from "../src/event-types.ts";
import { startTestDispatcher, type TestDispatcher } from "./support/dispatcher.ts";

/** The Connect error a call ends with (fails the test when the call succeeds). */
async function refusal(call: Promise<unknown>): Promise<ConnectError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof ConnectError)) throw new Error(`expected a Connect error, got ${String(error)}`);
  return error;
}

describe("WebhookConsoleService: endpoints", () => {
  const clock = new ManualClock("2026-11-22T10:00:00Z");
  let dispatcher: TestDispatcher;
  const org = () => uniqueName("org");

  beforeAll(async () => {
    dispatcher = await startTestDispatcher("wh_console", { clock });
  });
  afterAll(async () => {
    await dispatcher?.stop();
  });

  it("add shows a whsec_ secret once, stores it only encrypted, and lists the endpoint", async () => {
    const organizationId = org();
    const added = await dispatcher.console.addEndpoint({
      organizationId,
      url: "https://hooks.example.com/svc?x=1",
      types: [],
    });
    expect(added.endpointId).toMatch(/^ep_[A-Za-z0-9]{24}$/);
    expect(added.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(added.secret.slice(6), "base64").length).toBeGreaterThanOrEqual(24);

    const [row] = await dispatcher.sql<{ secret_sealed: Buffer }>("select secret_sealed from endpoints where id = $1", [
      added.endpointId,
    ]);
    expect(row!.secret_sealed.includes(Buffer.from(added.secret))).toBe(false);
    expect(row!.secret_sealed.includes(Buffer.from(added.secret.slice(6), "base64"))).toBe(false);

    const { endpoints } = await dispatcher.console.listEndpoints({ organizationId });
    expect(endpoints).toHaveLength(1);
    expect(endpoints[0]).toMatchObject({
      endpointId: added.endpointId,
      organizationId,
      url: "https://hooks.example.com/svc?x=1",
      types: [],
      status: EndpointStatus.ENABLED,
      disabledReason: "",
    });
    expect(JSON.stringify(endpoints, (_, v: unknown) => (typeof v === "bigint" ? String(v) : v))).not.toContain(
      added.secret.slice(6),
    );
    expect((await dispatcher.console.listEndpoints({ organizationId: org() })).endpoints).toEqual([]);
  });

  it("a filter takes current type names, in a stable order without repeats", async () => {
    const added = await dispatcher.console.addEndpoint({
      organizationId: org(),
      url: "https://hooks.example.com/",
      types: ["account.secured", "gate.human_verified", "account.secured"],
    });
    expect(added.endpoint?.types).toEqual(["gate.human_verified", "account.secured"]);
  });

  it.each(Object.entries(retiredTypes))(
    "a filter naming the retired %s is refused, naming %s",
    async (retired, replacement) => {
      const error = await refusal(
        dispatcher.console.addEndpoint({ organizationId: org(), url: "https://hooks.example.com/", types: [retired] }),
      );
      expect(error.code).toBe(Code.InvalidArgument);
      expect(error.rawMessage).toBe(`"${retired}" is a retired event type and is no longer sent; use "${replacement}"`);
    },
  );

  it("an unknown type is refused, listing the types", async () => {
    const error = await refusal(
      dispatcher.console.addEndpoint({
        organizationId: org(),
        url: "https://hooks.example.com/",
        types: ["gate.verified"],
      }),
    );
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toBe(`unknown event type "gate.verified"; the types are ${webhookTypes.join(", ")}`);
  });

  it.each([
    ["/relative/path", "url must be an absolute http or https URL"],
    ["hooks.example.com/path", "url must be an absolute http or https URL"],
    ["ftp://hooks.example.com/", "url refused: only http and https URLs are delivered to, not ftp:"],
    ["https://partner:hunter2@hooks.example.com/", "url must not carry credentials"],
    ["https://token@hooks.example.com/", "url must not carry credentials"],
  ])("the URL %s is refused", async (url, message) => {
    const error = await refusal(dispatcher.console.addEndpoint({ organizationId: org(), url, types: [] }));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain(message);
  });

  it("development accepts plain http to loopback", async () => {
    const added = await dispatcher.console.addEndpoint({
      organizationId: org(),
      url: "http://127.0.0.1:9999/hooks",
      types: [],
    });
    expect(added.endpoint?.url).toBe("http://127.0.0.1:9999/hooks");
  });

  it("disable records why and when; enable clears it", async () => {
    const organizationId = org();
    const { endpointId } = await dispatcher.console.addEndpoint({
      organizationId,
      url: "https://hooks.example.com/",
      types: [],
    });
    const disabled = await dispatcher.console.disableEndpoint({ organizationId, endpointId });
    expect(disabled.endpoint).toMatchObject({
      status: EndpointStatus.DISABLED,
      disabledReason: "disabled by an operator",
    });
    expect(disabled.endpoint?.disabledAt?.seconds).toBe(BigInt(clock.now().getTime() / 1000));
    const [listed] = (await dispatcher.console.listEndpoints({ organizationId })).endpoints;
    expect(listed?.disabledReason).toBe("disabled by an operator");

    const enabled = await dispatcher.console.enableEndpoint({ organizationId, endpointId });
    expect(enabled.endpoint).toMatchObject({ status: EndpointStatus.ENABLED, disabledReason: "" });
    expect(enabled.endpoint?.disabledAt).toBeUndefined();
  });

  it("rotation returns a new secret and keeps the old one signing for 24 hours", async () => {
    const organizationId = org();
    const added = await dispatcher.console.addEndpoint({
      organizationId,
      url: "https://hooks.example.com/",
      types: [],
    });
    const rotated = await dispatcher.console.rotateEndpointSecret({ organizationId, endpointId: added.endpointId });
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(added.secret);
    expect(Number(rotated.previousSecretExpiresAt?.seconds) * 1000).toBe(clock.now().getTime() + 24 * 3600 * 1000);
    expect(rotated.endpoint?.previousSecretExpiresAt).toEqual(rotated.previousSecretExpiresAt);
  });

  it("remove deletes the endpoint; another organization's endpoint reads as not found", async () => {
    const organizationId = org();
    const { endpointId } = await dispatcher.console.addEndpoint({
      organizationId,
      url: "https://hooks.example.com/",
      types: [],
    });
    const stranger = org();
    for (const call of [
      () => dispatcher.console.removeEndpoint({ organizationId: stranger, endpointId }),
      () => dispatcher.console.rotateEndpointSecret({ organizationId: stranger, endpointId }),
      () => dispatcher.console.disableEndpoint({ organizationId: stranger, endpointId }),
      () => dispatcher.console.enableEndpoint({ organizationId: stranger, endpointId }),
      () => dispatcher.console.listMessages({ organizationId: stranger, endpointId }),
    ]) {
      expect((await refusal(call())).code).toBe(Code.NotFound);
    }
    expect(await dispatcher.console.removeEndpoint({ organizationId, endpointId })).toMatchObject({ endpointId });
    expect((await dispatcher.console.listEndpoints({ organizationId })).endpoints).toEqual([]);
    expect((await refusal(dispatcher.console.removeEndpoint({ organizationId, endpointId }))).code).toBe(Code.NotFound);
  });

  it("requests without an organization, or with a page size out of range, are refused", async () => {
    expect(
      (
        await refusal(
          dispatcher.console.addEndpoint({ organizationId: "", url: "https://hooks.example.com/", types: [] }),
        )
      ).code,
    ).toBe(Code.InvalidArgument);
    expect((await refusal(dispatcher.console.listMessages({ organizationId: org(), limit: 101 }))).code).toBe(
      Code.InvalidArgument,
    );
    expect((await refusal(dispatcher.console.listMessages({ organizationId: org(), offset: -1 }))).code).toBe(
      Code.InvalidArgument,
    );
  });
});

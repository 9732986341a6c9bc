import { randomBytes } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { createLogger } from "@svc/platform";
import { DeliveryStatus } from "@svc/proto/webhook/v1/webhook_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uniqueName } from "../../../test/harness/index.ts";
import { settings } from "../src/config.ts";
import { startWebhookDispatch } from "../src/server.ts";
import { startTestDispatcher, type TestDispatcher } from "./support/dispatcher.ts";
import { gateEvent } from "./support/events.ts";
import { type Receiver, startReceiver } from "./support/receiver.ts";

describe("production mode", () => {
  let dispatcher: TestDispatcher;
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = await startReceiver();
    dispatcher = await startTestDispatcher("wh_production", {
      env: { SVC_DEPLOYMENT: "production", WEBHOOK_DISPATCH_SECRET_KEY: randomBytes(32).toString("base64") },
    });
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await receiver?.close();
  });

  it("refuses to start without its own secret key or on the built-in one, before opening anything", async () => {
    const started = startWebhookDispatch({
      env: { SVC_DEPLOYMENT: "production", SVC_DATABASE_URL: "postgres://nowhere.invalid/x" },
      logger: createLogger("t", {}, "error"),
    });
    await expect(started).rejects.toThrow("WEBHOOK_DISPATCH_SECRET_KEY is required in production");
    const developmentKey = (settings.secretKey.default as Buffer).toString("base64");
    const onDevelopmentKey = startWebhookDispatch({
      env: {
        SVC_DEPLOYMENT: "production",
        SVC_DATABASE_URL: "postgres://nowhere.invalid/x",
        WEBHOOK_DISPATCH_SECRET_KEY: developmentKey,
      },
      logger: createLogger("t", {}, "error"),
    });
    await expect(onDevelopmentKey).rejects.toThrow(
      "WEBHOOK_DISPATCH_SECRET_KEY is the built-in development value, which production refuses",
    );
  });

  it.each([
    ["http://hooks.example.com/", "production delivers only to https URLs"],
    ["https://127.0.0.1/", "127.0.0.1 is not a public address (loopback)"],
    ["https://10.1.2.3/", "10.1.2.3 is not a public address (private)"],
    ["https://169.254.169.254/latest/meta-data/", "169.254.169.254 is not a public address (cloud metadata)"],
    ["https://[::1]/", "::1 is not a public address (loopback)"],
    ["https://[::ffff:127.0.0.1]/", "::ffff:7f00:1 is not a public address (loopback)"],
    ["https://100.64.0.1/", "100.64.0.1 is not a public address (shared address space (CGNAT))"],
  ])("an endpoint at %s is refused when added", async (url, reason) => {
    const error = await dispatcher.console
      .addEndpoint({ organizationId: uniqueName("org"), url, types: [] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.InvalidArgument);
    expect((error as ConnectError).rawMessage).toBe(`url refused: ${reason}`);
  });

  it("a name that resolves to loopback passes the URL check but is refused at connection time", async () => {
    const organizationId = uniqueName("org");
    const { endpointId } = await dispatcher.console.addEndpoint({
      organizationId,
      url: `https://localhost:${receiver.port}/webhooks`,
      types: [],
    });
    await dispatcher.publish(gateEvent(organizationId));

    await expect
      .poll(
        async () =>
          (await dispatcher.console.listMessages({ organizationId, endpointId })).messages[0]?.deliveries[0]
            ?.lastError ?? "",
        { timeout: 10_000 },
      )
      .toMatch(
        /^destination refused: localhost resolves to (127\.0\.0\.1|::1), which is not a public address \(loopback\)$/,
      );
    const [message] = (await dispatcher.console.listMessages({ organizationId, endpointId })).messages;
    expect(message?.deliveries[0]).toMatchObject({ status: DeliveryStatus.PENDING, attempts: 1, lastStatusCode: 0 });
    expect(receiver.requests).toHaveLength(0);
  });
});

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type RunningService, serveConnect } from "@svc/platform";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { consoleForwarding } from "../src/console/forwarding.ts";
import { memoryLogger } from "./memory-logger.ts";

describe("console forwarding", () => {
  const received: { path: string; contentType: string | undefined; body: string }[] = [];
  let upstream: Server;
  let console_: RunningService;

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", () => {
        received.push({ path: req.url ?? "", contentType: req.headers["content-type"], body });
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ endpointId: "ep_1" }));
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    console_ = await serveConnect({
      name: "console-test",
      host: "127.0.0.1",
      port: 0,
      logger: memoryLogger(),
      routes: () => {},
      fallback: consoleForwarding(
        { "svc.webhook.v1": upstreamUrl, "svc.gate.v1": "http://127.0.0.1:1" },
        memoryLogger(),
      ),
      ready: async () => {},
      onStop: async () => {},
    });
  });
  afterAll(async () => {
    await console_.stop();
    upstream.close();
  });

  const call = (path: string, body: unknown) =>
    fetch(`${console_.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  test("a call to another service's console service reaches that service unchanged", async () => {
    const response = await call("/svc.webhook.v1.WebhookConsoleService/AddEndpoint", {
      organizationId: "org_1",
      url: "https://example.com/hook",
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ endpointId: "ep_1" });
    expect(received.at(-1)).toEqual({
      path: "/svc.webhook.v1.WebhookConsoleService/AddEndpoint",
      contentType: "application/json",
      body: JSON.stringify({ organizationId: "org_1", url: "https://example.com/hook" }),
    });
  });

  test("only console services of known packages are forwarded", async () => {
    const count = received.length;
    expect((await call("/svc.webhook.v1.WebhookDeliveryService/Deliver", {})).status).toBe(404);
    expect((await call("/svc.unknown.v1.UnknownConsoleService/Do", {})).status).toBe(404);
    expect(received.length).toBe(count);
  });

  test("an unreachable owner is a Connect 'unavailable' error, not a hang", async () => {
    const response = await call("/svc.gate.v1.GateConsoleService/CreateGate", {});
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ code: "unavailable", message: "svc.gate.v1 console unreachable" });
  });
});

import { connect as http2Connect } from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger, serveConnect, type RunningService } from "@svc/platform";

describe("service server", () => {
  let ready = true;
  let stopped = false;
  let service: RunningService;
  beforeAll(async () => {
    service = await serveConnect({
      name: "probe-test",
      host: "127.0.0.1",
      port: 0,
      logger: createLogger("probe-test", {}, "error"),
      routes: () => {},
      ready: async () => {
        if (!ready) throw new Error("database unreachable");
      },
      onStop: async () => {
        stopped = true;
      },
    });
  });
  afterAll(() => service.stop());

  it("answers probes over HTTP/1.1, as kubelet sends them", async () => {
    const health = await fetch(`${service.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok", service: "probe-test" });
    ready = false;
    const notReady = await fetch(`${service.url}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toMatchObject({ status: "unavailable", error: "database unreachable" });
    ready = true;
    expect((await fetch(`${service.url}/readyz`)).status).toBe(200);
  });

  it("answers over h2c on the same port, as the mesh's Connect clients speak", async () => {
    const session = http2Connect(service.url);
    const status = await new Promise<number>((resolve, reject) => {
      const request = session.request({ ":path": "/healthz" });
      request.on("response", (headers) => resolve(Number(headers[":status"])));
      request.on("error", reject);
      request.end();
    });
    session.close();
    expect(status).toBe(200);
  });

  it("stops by closing the listener and then releasing what it holds", async () => {
    const other = await serveConnect({
      name: "stop-test",
      host: "127.0.0.1",
      port: 0,
      logger: createLogger("stop-test", {}, "error"),
      routes: () => {},
      ready: async () => {},
      onStop: async () => {
        stopped = true;
      },
    });
    await other.stop();
    expect(stopped).toBe(true);
    await expect(fetch(`${other.url}/healthz`)).rejects.toThrow();
  });
});

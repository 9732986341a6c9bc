import { connect as http2Connect } from "node:http2";
import { createLogger, type RunningService, sendJson, serveConnect } from "@svc/platform";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

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

  it.each(["HTTP/1.1", "h2c"] as const)(
    "a stop lets a request in flight over %s finish before it releases what the service holds",
    async (protocol) => {
      const order: string[] = [];
      let started: () => void = () => {};
      const handlerStarted = new Promise<void>((resolve) => (started = resolve));
      const slow = await serveConnect({
        name: "drain-test",
        host: "127.0.0.1",
        port: 0,
        logger: createLogger("drain-test", {}, "error"),
        routes: () => {},
        fallback: (req, res) => {
          if (req.url !== "/slow") return false;
          started();
          setTimeout(() => {
            order.push("handler answered");
            sendJson(res, 200, { done: true });
          }, 200);
          return true;
        },
        ready: async () => {},
        onStop: async () => {
          order.push("released");
        },
      });
      const answer =
        protocol === "HTTP/1.1"
          ? fetch(`${slow.url}/slow`).then(async (r) => [r.status, await r.json()])
          : new Promise<[number, unknown]>((resolve, reject) => {
              const session = http2Connect(slow.url);
              const request = session.request({ ":path": "/slow" });
              let status = 0;
              let body = "";
              request.on("response", (headers) => (status = Number(headers[":status"])));
              request.on("data", (chunk) => (body += chunk));
              request.on("end", () => {
                session.close();
                resolve([status, JSON.parse(body)]);
              });
              request.on("error", reject);
              request.end();
            });
      await handlerStarted;
      await slow.stop();
      expect(await answer).toEqual([200, { done: true }]);
      expect(order).toEqual(["handler answered", "released"]);
    },
  );
});

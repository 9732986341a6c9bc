import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { createLogger, type RunningService, serveConnect } from "@svc/platform";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "@svc/proto/grpc/health/v1/health_pb.js";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../../", import.meta.url));

describe("grpc.health.v1.Health beside /healthz, over the gRPC protocol", () => {
  let ready = true;
  let service: RunningService;
  const healthOf = (url: string) => createClient(Health, createGrpcTransport({ baseUrl: url }));
  const serve = (authenticate?: { check: () => boolean; refusal: string }) =>
    serveConnect({
      name: "health-test",
      host: "127.0.0.1",
      port: 0,
      logger: createLogger("health-test", {}, "error"),
      routes: (router) => void router.service(SigningService, {}),
      ready: async () => {
        if (!ready) throw new Error("database unreachable");
      },
      onStop: async () => {},
      ...(authenticate ? { authenticate } : {}),
    });
  beforeAll(async () => {
    service = await serve();
  });
  afterAll(() => service.stop());

  it("Check answers SERVING for the server and each service it serves while ready, NOT_SERVING while not", async () => {
    const health = healthOf(service.url);
    expect((await health.check({ service: "" })).status).toBe(ServingStatus.SERVING);
    expect((await health.check({ service: "svc.signing.v1.SigningService" })).status).toBe(ServingStatus.SERVING);
    ready = false;
    expect((await health.check({ service: "" })).status).toBe(ServingStatus.NOT_SERVING);
    expect((await health.check({ service: "svc.signing.v1.SigningService" })).status).toBe(ServingStatus.NOT_SERVING);
    ready = true;
    expect((await health.check({ service: "" })).status).toBe(ServingStatus.SERVING);
  });

  it("Check answers NOT_FOUND for a service the server does not serve", async () => {
    const error = await healthOf(service.url)
      .check({ service: "svc.gate.v1.GateService" })
      .catch((e: unknown) => ConnectError.from(e));
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.NotFound);
  });

  it("answers a Go gRPC client as kubelet's probe is one (buf curl over h2c)", async () => {
    const { stdout } = await promisify(execFile)(
      "buf",
      [
        "curl",
        "--protocol",
        "grpc",
        "--http2-prior-knowledge",
        "--schema",
        "proto",
        "--data",
        "{}",
        `${service.url}/grpc.health.v1.Health/Check`,
      ],
      { cwd: root },
    );
    expect(JSON.parse(stdout)).toEqual({ status: "SERVING" });
  });

  it("answers without the caller check that guards every other call (the gateway's console)", async () => {
    const guarded = await serve({ check: () => false, refusal: "operator credential required" });
    try {
      expect((await healthOf(guarded.url).check({ service: "" })).status).toBe(ServingStatus.SERVING);
      const refused = await createClient(SigningService, createGrpcTransport({ baseUrl: guarded.url }))
        .getKeySet({})
        .catch((e: unknown) => ConnectError.from(e));
      expect((refused as ConnectError).code).toBe(Code.Unauthenticated);
    } finally {
      await guarded.stop();
    }
  });

  it("Watch sends the status now, and on a stop sends NOT_SERVING and ends, holding up no drain", async () => {
    const watched = await serve();
    const updates = healthOf(watched.url).watch({ service: "" })[Symbol.asyncIterator]();
    expect((await updates.next()).value?.status).toBe(ServingStatus.SERVING);
    const stopped = watched.stop();
    expect((await updates.next()).value?.status).toBe(ServingStatus.NOT_SERVING);
    expect((await updates.next()).done).toBe(true);
    await stopped;
  });
});

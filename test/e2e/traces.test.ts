import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { type ReceivedSpan, spanKind, startOtlpReceiver } from "../harness/otlp-receiver.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { svcctlJson } from "./agent-support.ts";
import { newGate, newPartner, partnerApi, result } from "./gate-support.ts";

/**
 * With OTEL_EXPORTER_OTLP_ENDPOINT set, one partner call to create-verification-link, the sandbox human's
 * confirmation and the `gate.human_verified` delivery read as one trace: the gateway's operation span at the
 * root, Connect client and server spans between the services, the outbox's event published and consumed over
 * NATS, and the delivery's HTTP span under the consumer's.
 */
describe("one trace from a partner's call to the webhook", () => {
  let mesh: TestMesh;
  let otlp: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let hooks: Server;
  let delivered = 0;
  let trace: ReceivedSpan[];
  let root: ReceivedSpan;

  const parentOf = (span: ReceivedSpan) => trace.find((s) => s.spanId === span.parentSpanId);
  const ancestry = (span: ReceivedSpan): ReceivedSpan[] => {
    const parent = parentOf(span);
    return parent ? [span, ...ancestry(parent)] : [span];
  };

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    hooks = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        delivered++;
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => hooks.listen(0, "127.0.0.1", resolve));
    mesh = await startTestMesh("traces", {
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_TRACES_SAMPLER: "always_on" },
    });
    const api = partnerApi(mesh);
    const svcctl = svcctlJson(mesh);
    const partner = await newPartner(mesh, "Traced");
    await newGate(mesh, partner.organizationId, { key: "login" });
    await svcctl([
      ...["webhook", "add", "--org", partner.organizationId],
      ...["--url", `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hooks`],
    ]);
    const human = (await svcctl(["human", "create", "--env", "development", "--behavior", "confirm"]))
      .svc_user_id as string;
    const grant = result(await api.post("/sdk/create-session", { partner_user_id: "traced-user" }, partner.devSecret))
      .anchor_grant_token as string;
    result(
      await api.post(
        "/sdk/create-verification-link",
        { gate: "login", svc_user_id: human, partner_user_ref: "traced-account" },
        grant,
      ),
    );
    await vi.waitFor(
      () => {
        if (delivered < 1) throw new Error("no delivery yet");
      },
      { timeout: 30_000 },
    );
    // The delivery's span is exported within the batch processor's delay after it ends.
    root = await vi.waitFor(
      () => {
        const found = otlp.spans.find((s) => s.service === "gateway" && s.name === "POST /v1/sdk/create-verification-link");
        if (!found) throw new Error("no span of create-verification-link yet");
        if (!otlp.spans.some((s) => s.traceId === found.traceId && s.name === "POST webhook"))
          throw new Error("the delivery's span is not exported yet");
        return found;
      },
      { timeout: 15_000, interval: 100 },
    );
    trace = otlp.spans.filter((s) => s.traceId === root.traceId);
  }, 120_000);
  afterAll(async () => {
    await mesh?.stop();
    hooks?.close();
    await otlp?.close();
  });

  test("the gateway's operation span is the root, and every other span's parent is in the trace", () => {
    expect(root).toMatchObject({ parentSpanId: "", kind: spanKind.server });
    expect(root.attributes).toMatchObject({
      "http.request.method": "POST",
      "http.route": "/v1/sdk/create-verification-link",
      "http.response.status_code": 200,
    });
    const orphans = trace.filter((s) => s !== root && parentOf(s) === undefined);
    expect(orphans.map((s) => `${s.service}: ${s.name}`)).toEqual([]);
    expect(new Set(trace.map((s) => s.service))).toEqual(
      new Set(["gateway", "gate", "account", "signing", "webhook-dispatch"]),
    );
  });

  test("each Connect server span is the child of its caller's client span, named and coded by the RPC conventions", () => {
    const servers = trace.filter((s) => s.kind === spanKind.server && s.attributes["rpc.system.name"] === "connectrpc");
    expect(servers.length).toBeGreaterThan(0);
    for (const server of servers) {
      const client = parentOf(server);
      expect(client, server.name).toMatchObject({ kind: spanKind.client, name: server.name });
      expect(client?.service).not.toBe(server.service);
      expect(server.attributes).toMatchObject({
        "rpc.service": server.name.split("/")[0],
        "rpc.method": server.name.split("/")[1],
        "rpc.response.status_code": "ok",
      });
    }
    expect(servers.map((s) => `${s.service}: ${s.name}`)).toEqual(
      expect.arrayContaining(["gate: svc.gate.v1.GateService/CreateVerificationLink"]),
    );
  });

  test("the delivery descends from the consumer's span, the relay's producer span and the partner's call", () => {
    const delivery = trace.find((s) => s.name === "POST webhook");
    expect(delivery).toMatchObject({ service: "webhook-dispatch", kind: spanKind.client });
    expect(delivery?.attributes).toMatchObject({ "http.response.status_code": 204, "webhook.attempt.outcome": "delivered" });
    const chain = ancestry(delivery as ReceivedSpan);
    const subject = `${mesh.env.SVC_EVENT_SUBJECT_PREFIX}.gate.human_verified`;
    expect(chain[1]).toMatchObject({ service: "webhook-dispatch", kind: spanKind.consumer, name: `process ${subject}` });
    expect(chain[2]).toMatchObject({ service: "gate", kind: spanKind.producer, name: `send ${subject}` });
    expect(chain[2].attributes).toMatchObject({ "messaging.system": "nats", "messaging.destination.name": subject });
    expect(chain.at(-1)).toBe(root);
  });

  test("Postgres spans name the operation alone, never the statement's text or its values", () => {
    const queries = trace.filter((s) => s.attributes["db.system"] === "postgresql" || s.attributes["db.system.name"] === "postgresql");
    expect(queries.length).toBeGreaterThan(0);
    for (const query of queries) {
      for (const key of ["db.statement", "db.query.text"])
        if (key in query.attributes) expect(String(query.attributes[key])).toMatch(/^[a-z]*$/);
      expect(Object.keys(query.attributes).filter((key) => key.includes("parameter") || key.includes("values"))).toEqual([]);
    }
  });
});

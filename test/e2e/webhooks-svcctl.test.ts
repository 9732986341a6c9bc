import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { jetstream } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { EventSchema } from "@svc/proto/events/v1/events_pb.js";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { natsUrl } from "../harness/index.ts";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";

/**
 * Operators manage webhook endpoints with svcctl through the gateway's one console address, which
 * forwards to webhook-dispatch; a partner's receiver gets signed deliveries it can verify itself.
 */

describe("svcctl webhook through the console", () => {
  let mesh: TestMesh;
  let receiver: Server;
  let receiverUrl: string;
  const received: { headers: Record<string, string>; body: string }[] = [];
  let organizationId: string;

  const svcctl = (args: string[]) => runSvcctl(mesh, args);
  const json = async (args: string[]) => {
    const run = await svcctl(args);
    expect(run.stderr, run.stderr).toBe("");
    expect(run.code).toBe(0);
    return JSON.parse(run.stdout);
  };

  beforeAll(async () => {
    mesh = await startTestMesh("webhooks", { only: ["signing", "webhook-dispatch"] });
    receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", () => {
        received.push({ headers: req.headers as Record<string, string>, body });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
    organizationId = (await mesh.console.createOrganization({ name: "Hooks Inc" })).organizationId;
  });
  afterAll(async () => {
    receiver?.close();
    await mesh?.stop();
  });

  /** What gate publishes after a confirmation, as it reaches the stream through gate's outbox. */
  async function publishHumanVerified(requestId: string) {
    const nc = await connect({ servers: natsUrl() });
    const event = create(EventSchema, {
      dedupKey: `gate.human_verified:${requestId}`,
      organizationId,
      environment: Environment.DEVELOPMENT,
      occurredAt: timestampFromDate(new Date()),
      payload: {
        case: "gateHumanVerified",
        value: {
          eventId: requestId,
          requestId,
          verifiedAt: timestampFromDate(new Date("2026-11-22T10:00:00Z")),
          verdict: "pass",
          trusted: false,
          firstTime: false,
          environment: "development",
          product: "census",
        },
      },
    });
    const prefix = mesh.env.SVC_EVENT_SUBJECT_PREFIX!;
    await jetstream(nc).publish(`${prefix}.gate.human_verified`, toBinary(EventSchema, event), {
      msgID: event.dedupKey,
    });
    await nc.drain();
  }

  it("adds an endpoint, delivers a signed event to it, rotates the secret and signs with both", async () => {
    const added = await json([
      "webhook",
      "add",
      "--org",
      organizationId,
      "--url",
      receiverUrl,
      "--type",
      "gate.human_verified",
    ]);
    expect(added.endpoint_id).toEqual(expect.any(String));
    expect(added.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32,}={0,2}$/);

    await publishHumanVerified(`req_${"a".repeat(32)}`);
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(1);
    const first = received[0]!;
    const payload = new Webhook(added.secret).verify(first.body, first.headers);
    expect(payload).toEqual({
      type: "gate.human_verified",
      event_id: `req_${"a".repeat(32)}`,
      request_id: `req_${"a".repeat(32)}`,
      verified_at: "2026-11-22T10:00:00.000Z",
      verdict: "pass",
      trusted: false,
      first_time: false,
      environment: "development",
      product: "census",
    });

    const rotated = await json(["webhook", "rotate", "--org", organizationId, "--endpoint", added.endpoint_id]);
    expect(rotated.secret).not.toBe(added.secret);
    await publishHumanVerified(`req_${"b".repeat(32)}`);
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(2);
    const second = received[1]!;
    expect(second.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    expect(new Webhook(rotated.secret).verify(second.body, second.headers)).toMatchObject({
      request_id: `req_${"b".repeat(32)}`,
    });
    expect(new Webhook(added.secret).verify(second.body, second.headers)).toMatchObject({
      request_id: `req_${"b".repeat(32)}`,
    });

    const messages = await json(["webhook", "messages", "--org", organizationId, "--status", "delivered"]);
    expect(messages.messages.map((m: { message_id: string }) => m.message_id).sort()).toEqual(
      [first.headers["webhook-id"], second.headers["webhook-id"]].sort(),
    );

    const replayed = await json([
      "webhook",
      "replay",
      "--org",
      organizationId,
      "--message",
      first.headers["webhook-id"]!,
      "--endpoint",
      added.endpoint_id,
    ]);
    expect(replayed.status).toBe("pending");
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(3);
    expect(received[2]!.headers["webhook-id"]).toBe(first.headers["webhook-id"]);
  });

  it("disables and enables an endpoint, and lists why", async () => {
    const { endpoint_id } = await json(["webhook", "add", "--org", organizationId, "--url", receiverUrl]);
    const disabled = await json(["webhook", "disable", "--org", organizationId, "--endpoint", endpoint_id]);
    expect(disabled).toMatchObject({ endpoint_id, status: "disabled" });
    expect(disabled.disabled_reason).toEqual(expect.any(String));
    const listed = await json(["webhook", "list", "--org", organizationId]);
    expect(listed.endpoints.find((e: { endpoint_id: string }) => e.endpoint_id === endpoint_id)).toMatchObject({
      status: "disabled",
      types: [],
    });
    expect(await json(["webhook", "enable", "--org", organizationId, "--endpoint", endpoint_id])).toMatchObject({
      status: "enabled",
      disabled_reason: null,
    });
    expect(await json(["webhook", "remove", "--org", organizationId, "--endpoint", endpoint_id])).toEqual({
      endpoint_id,
    });
  });

  it("refuses a retired type name and names its replacement", async () => {
    const run = await svcctl([
      "webhook",
      "add",
      "--org",
      organizationId,
      "--url",
      receiverUrl,
      "--type",
      "census.human_verified",
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain("gate.human_verified");
  });

  it("prints help for the group and each command", async () => {
    const group = await svcctl(["webhook", "--help"]);
    expect(group.code).toBe(0);
    for (const command of ["add", "list", "remove", "rotate", "enable", "disable", "messages", "replay"])
      expect(group.stdout).toContain(command);
    expect((await svcctl(["webhook", "replay", "--help"])).stdout).toContain("--message MESSAGE_ID");
  });
});

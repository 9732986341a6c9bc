import { randomUUID } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { jetstream } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { PushKind } from "@svc/proto/account/v1/account_pb.js";
import { PushTriggerSchema } from "@svc/proto/account/v1/push_trigger_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DocumentedAnswer, expectDocumented } from "../harness/documented-answer.ts";
import { startPushService, type TestPushService } from "../harness/push-service.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { agentBoundToSilentHuman, svcctlJson } from "./agent-support.ts";
import { partnerApi, type Reply, result } from "./gate-support.ts";

/**
 * Push triggers through the outbox (decisions.md "Web Push", push_trigger.proto), against the real mesh:
 * a card queued while account is down reaches the person's push service once account is back (the
 * trigger committed with the card and waited on its stream), and a trigger delivered twice sends one
 * push under one Topic.
 */
const start = new Date("2026-11-28T09:00:00Z");
type Json = Record<string, unknown>;

describe("web push triggers", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let pushService: TestPushService;
  let document: Json;
  let nc: NatsConnection;
  let bound: Awaited<ReturnType<typeof agentBoundToSilentHuman>>;
  let endpoint: string;

  beforeAll(async () => {
    mesh = await startTestMesh("web_push_triggers", { only: ["signing", "account", "agentlink"], clockAt: start });
    api = partnerApi(mesh);
    document = (await (await fetch(`${mesh.gatewayUrl}/v1/openapi.json`)).json()) as Json;
    bound = await agentBoundToSilentHuman(mesh, api, {
      organization: "Push Triggers",
      name: "Bookkeeper",
      categories: ["payments"],
    });
    const session = (await svcctlJson(mesh)(["human", "session", "--human", bound.person])).session_token as string;
    pushService = await startPushService({
      vapidPublicKey: async () => result(await api.get("/app/push-key", {}, session)).public_key,
      // The mesh's clock stands at `start`, and the JWT's expiry follows it.
      now: () => start,
    });
    const subscription = pushService.subscribe();
    const added = await api.post("/app/push-subscriptions", { ...subscription }, session);
    documented("POST", "/app/push-subscriptions", added);
    endpoint = subscription.endpoint;
    nc = await connect({ servers: mesh.env.SVC_NATS_URL });
  });
  afterAll(async () => {
    await nc?.close();
    await pushService?.stop();
    await mesh?.stop();
  });

  const documented = (method: string, path: string, reply: Reply) => {
    expectDocumented(document, method, `/v1${path}`, { status: reply.status, body: reply.body } as DocumentedAnswer);
    return reply;
  };
  const inquire = async (summary: string) => {
    const reply = await api.post(
      "/agentlink/inquire",
      {
        request_id: randomUUID(),
        opaque_id: bound.opaqueId,
        action: { summary_title: summary, category: "payments" },
      },
      bound.agentKey,
    );
    return result(documented("POST", "/agentlink/inquire", reply));
  };

  it("a card queued while account is down is pushed once account starts again", async () => {
    await mesh.kill("account", "SIGKILL");
    const card = await inquire("Pay invoice 1");
    expect(card.status).toBe("queued");
    expect(pushService.received).toEqual([]);
    await mesh.restart("account");
    const push = await pushService.next(endpoint);
    expect(push.payload).toEqual({ kind: "card", id: card.card_id, title: "An agent asks for your approval" });
    expect(push.urgency).toBe("high");
    expect(push.ttl).toBe((Date.parse(card.ttl_at) - start.getTime()) / 1000);
    expect(pushService.problems).toEqual([]);
  });

  it("a trigger delivered twice sends one push under one Topic", async () => {
    const card = await inquire("Pay invoice 2");
    const push = await pushService.next(endpoint);
    expect(push.payload).toMatchObject({ id: card.card_id });
    // The same trigger again, as JetStream redelivers one whose ack was lost (a new message id, so the
    // stream's deduplication does not hide it).
    const again = create(PushTriggerSchema, {
      svcUserId: bound.person,
      kind: PushKind.AGENT_CARD,
      itemId: card.card_id,
      title: "An agent asks for your approval",
      expiresAt: timestampFromDate(new Date(card.ttl_at)),
    });
    await jetstream(nc).publish(
      `${mesh.env.SVC_EVENT_SUBJECT_PREFIX}_push.trigger`,
      toBinary(PushTriggerSchema, again),
      {
        msgID: `redelivered:${card.card_id}`,
      },
    );
    // Triggers are taken in order: once a later card's push arrives, the repeat has been taken too.
    const later = await inquire("Pay invoice 3");
    expect((await pushService.next(endpoint)).payload).toMatchObject({ id: later.card_id });
    expect(pushService.received.filter((r) => r.topic === push.topic)).toHaveLength(1);
  });
});

import { randomUUID } from "node:crypto";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { createClient } from "@connectrpc/connect";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { DeliveryStatus, WebhookConsoleService } from "@svc/proto/webhook/v1/webhook_pb.js";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type OwnNats, startOwnNats } from "../harness/own-nats.ts";
import { SoftwareAuthenticator } from "../harness/software-passkey.ts";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { issuer, partnerApi, result } from "./gate-support.ts";

/**
 * kill -9 of agentlink in both crash windows of a confirmation's outbox row, against the real mesh
 * with its own nats-server (JetStream on a file store): committed but not yet published (NATS is
 * gone, then agentlink dies), and published but not yet marked (a trigger refuses the mark, then
 * agentlink dies). Either way the resolution webhook arrives exactly once.
 */
const resolutionSubject = "agents_ask.resolution.confirmed";
/** webhook-dispatch's durable consumer (its WEBHOOK_DISPATCH_CONSUMER_NAME default). */
const dispatchConsumer = "webhook-dispatch";

interface Received {
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

interface OutboxRow {
  id: string;
  subject: string;
  message_id: string;
  published_at: Date | null;
}

describe("agents ask: a resolution survives kill -9 of agentlink around its publish", () => {
  let nats: OwnNats;
  let mesh: TestMesh;
  let db: pg.Client;
  let api: ReturnType<typeof partnerApi>;
  let organizationId: string;
  let agentKey: string;
  let receiver: ReturnType<typeof createServer>;
  const received: Received[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        received.push({ headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString()) });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    nats = await startOwnNats("agents_durability");
    mesh = await startTestMesh("agents_durability", { env: { SVC_NATS_URL: nats.url } });
    db = new pg.Client({ connectionString: mesh.env.SVC_DATABASE_URL });
    await db.connect();
    api = partnerApi(mesh);
    organizationId = (await mesh.console.createOrganization({ name: "Durable" })).organizationId;
    await webhooks().addEndpoint({
      organizationId,
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
      types: [resolutionSubject],
    });
    const registered = await runSvcctl(mesh, [
      ...["agent", "register", "--org", organizationId, "--env", "development", "--name", "Durable_Bot"],
      ...["--category", "payments"],
    ]);
    if (registered.code !== 0) throw new Error(registered.stderr);
    agentKey = JSON.parse(registered.stdout).agent_key;
  });
  afterAll(async () => {
    await db?.end();
    await mesh?.stop();
    await nats?.remove();
    receiver?.close();
  });

  const webhooks = () => createClient(WebhookConsoleService, mesh.consoleTransport());

  /** A person with the app (a development-IdP session, a software passkey) and a card queued for them. */
  async function queuedCard() {
    const { sessionToken } = await mesh.console.mintDevSession({
      issuer: mesh.devIdpIssuer,
      subject: `person-${randomUUID()}`,
    });
    const authenticator = SoftwareAuthenticator.create();
    const post = (path: string, body: Record<string, unknown>) => api.post(path, body, sessionToken);
    const begun = result(await post("/app/passkeys/begin-registration", {}));
    result(
      await post("/app/passkeys/finish-registration", {
        ceremony_id: begun.ceremony_id,
        response: authenticator.register(begun.options, issuer),
      }),
    );
    const svcUserId = result(await api.get("/app/me", {}, sessionToken)).svc_user_id as string;
    const requestId = randomUUID();
    const queued = result(
      await api.post(
        "/agentlink/inquire",
        {
          request_id: requestId,
          svc_user_id: svcUserId,
          action: { summary_title: "Pay invoice 2231", category: "payments" },
        },
        agentKey,
      ),
    );
    const decisions = [{ card_id: queued.card_id as string, verdict: "approve" }];
    /** confirm-challenge, the passkey's assertion over it, confirm: the person's whole confirmation. */
    const approve = async () => {
      const challenge = result(await post("/agentlink/confirm-challenge", { decisions }));
      return result(
        await post("/agentlink/confirm", {
          decisions,
          passkey_assertion: {
            challenge_id: challenge.challenge_id,
            response: authenticator.assert(challenge.options, issuer),
          },
        }),
      );
    };
    return { requestId, approve };
  }

  const outboxRows = async () =>
    (await db.query<OutboxRow>("select id, subject, message_id, published_at from agentlink.outbox order by id")).rows;
  /** Every event agentlink committed so far is on the stream: a crash window then holds only the confirmation's. */
  const outboxDrained = () =>
    expect
      .poll(async () => (await outboxRows()).filter((row) => row.published_at === null), { timeout: 15_000 })
      .toEqual([]);
  /** The one outbox row the confirmation committed: its resolution event, not published yet. */
  const resolutionRow = async () => {
    const unpublished = (await outboxRows()).filter((row) => row.published_at === null);
    expect(unpublished).toEqual([
      expect.objectContaining({ subject: `${mesh.env.SVC_EVENT_SUBJECT_PREFIX}.${resolutionSubject}` }),
    ]);
    return unpublished[0] as OutboxRow;
  };
  const publishedAt = async (row: OutboxRow) =>
    (await db.query("select published_at from agentlink.outbox where id = $1", [row.id])).rows[0]?.published_at;
  const relayWarnings = (text: string) =>
    mesh
      .logs()
      .split("\n")
      .filter((line) => line.startsWith("[agentlink]") && line.includes(text)).length;

  const deliveriesOf = (requestId: string) => received.filter((r) => r.body.request_id === requestId);

  /**
   * Waits until the stream holds nothing webhook-dispatch has not taken and acknowledged, and returns
   * how many resolution events the stream holds: once this holds, no duplicate is still on its way.
   */
  async function streamSettled(): Promise<number> {
    const nc = await connect({ servers: nats.url });
    try {
      const jsm = await jetstreamManager(nc);
      const stream = mesh.env.SVC_EVENT_STREAM as string;
      await expect
        .poll(
          async () => {
            const [info, consumer] = await Promise.all([
              jsm.streams.info(stream),
              jsm.consumers.info(stream, dispatchConsumer),
            ]);
            return {
              taken: consumer.delivered.stream_seq === info.state.last_seq,
              pending: consumer.num_pending,
              unacknowledged: consumer.num_ack_pending,
            };
          },
          { timeout: 15_000 },
        )
        .toEqual({ taken: true, pending: 0, unacknowledged: 0 });
      const subjects = (await jsm.streams.info(stream, { subjects_filter: ">" })).state.subjects ?? {};
      return subjects[`${mesh.env.SVC_EVENT_SUBJECT_PREFIX}.${resolutionSubject}`] ?? 0;
    } finally {
      await nc.close();
    }
  }

  /**
   * The one webhook of this resolution, once the relay marked its row and webhook-dispatch took all the
   * stream holds: it carries check-status's proof and the outbox row's resolution_id, and webhook-dispatch
   * stored one message with one delivery, sent once. Returns how many resolution events the stream holds.
   */
  async function deliveredExactlyOnce(requestId: string, row: OutboxRow): Promise<number> {
    await expect.poll(() => publishedAt(row), { timeout: 15_000 }).toBeInstanceOf(Date);
    const onStream = await streamSettled();
    const [delivery, ...duplicates] = deliveriesOf(requestId);
    expect(duplicates).toEqual([]);
    const status = result(await api.get("/agentlink/check-status", { request_id: requestId }, agentKey));
    expect(status.status).toBe("approved");
    expect(delivery?.body).toMatchObject({
      type: resolutionSubject,
      request_id: requestId,
      resolution_id: row.message_id,
      outcome: "confirmed",
      proof_token: status.resolution_jwt,
    });
    const { messages } = await webhooks().listMessages({ organizationId, limit: 100 });
    const stored = messages.filter((m) => m.messageId === delivery?.headers["webhook-id"]);
    expect(stored).toHaveLength(1);
    expect(stored[0]?.deliveries).toEqual([
      expect.objectContaining({ status: DeliveryStatus.DELIVERED, attempts: 1, lastStatusCode: 204 }),
    ]);
    return onStream;
  }

  it("committed, not yet published: with NATS gone the confirm still commits; after kill -9 and a restart the event is sent once", async () => {
    const { requestId, approve } = await queuedCard();
    await outboxDrained();

    const failedPublishes = relayWarnings("outbox relay could not publish");
    await nats.stop();
    const confirmed = await approve();
    expect(confirmed.resolutions).toEqual([expect.objectContaining({ request_id: requestId })]);
    const row = await resolutionRow();
    // The relay tried, and could not publish: the row waits for it.
    await expect
      .poll(() => relayWarnings("outbox relay could not publish"), { timeout: 15_000 })
      .toBeGreaterThan(failedPublishes);
    expect(await publishedAt(row)).toBeNull();

    await mesh.kill("agentlink");
    await nats.start();
    await mesh.restart("agentlink");

    // Every service but agentlink sat out the outage on its own, webhook-dispatch's consumer included.
    await expect.poll(() => deliveriesOf(requestId).length, { timeout: 20_000 }).toBe(1);
    expect(await deliveredExactlyOnce(requestId, row)).toBe(1);
  });

  it("published, not yet marked: after kill -9 the relay publishes the row again under the same id and JetStream drops it", async () => {
    const { requestId, approve } = await queuedCard();
    await outboxDrained();
    const eventsBefore = await streamSettled();

    // The relay publishes, then its `update outbox set published_at` fails and rolls back, every time.
    await db.query(`create function public.refuse_outbox_mark() returns trigger language plpgsql as $$
      begin raise exception 'durability test refuses the mark'; end $$`);
    await db.query(`create trigger refuse_outbox_mark before update on agentlink.outbox
      for each row execute function public.refuse_outbox_mark()`);
    await approve();
    const row = await resolutionRow();
    await expect.poll(() => deliveriesOf(requestId).length, { timeout: 15_000 }).toBe(1);
    await expect.poll(() => relayWarnings("durability test refuses the mark"), { timeout: 15_000 }).toBeGreaterThan(0);
    expect(await publishedAt(row)).toBeNull();

    await mesh.kill("agentlink");
    await db.query("drop trigger refuse_outbox_mark on agentlink.outbox");
    await mesh.restart("agentlink");

    // The relay's publishes of this row, before the kill and after the restart, left one message on the stream.
    expect(await deliveredExactlyOnce(requestId, row)).toBe(eventsBefore + 1);
  });
});

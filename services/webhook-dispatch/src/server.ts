import {
  createInternalClient,
  defineService,
  migrateService,
  runAsMain,
  type StartOptions,
  startService,
  uuid,
} from "@svc/platform";
import { AgentCallbackService } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { createCallbackEndpoints } from "./callbacks/callback-endpoints.ts";
import { settings } from "./config.ts";
import { measureOldestDueDelivery } from "./delivery/delivery-metrics.ts";
import { startDeliveryWorker } from "./delivery/delivery-worker.ts";
import { destinationPolicyFor } from "./delivery/destination-guard.ts";
import { startInstanceHeartbeat } from "./delivery/dispatcher-instances.ts";
import { createEndpointKeys } from "./delivery/endpoint-keys.ts";
import { startEventConsumer } from "./delivery/event-consumer.ts";
import { createHttpSender } from "./delivery/http-sender.ts";
import { releaseParkedEvents } from "./delivery/parked-events.ts";
import { Endpoint } from "./endpoints/endpoint.entity.ts";
import { createSecretBox } from "./endpoints/endpoint-secret.ts";
import { Delivery, WebhookMessage } from "./messages/message.entity.ts";
import { startMessageRetention } from "./messages/retention.ts";
import { migrations } from "./migrations/index.ts";
import { createRoutes } from "./routes.ts";

/**
 * webhook-dispatch: the console operations on endpoints and messages (Connect), a durable consumer
 * that stores every event as a message with its deliveries (an agents_ask resolution also one to its
 * agent's callback, whose target agentlink names), and the worker that sends them. At
 * start, events that an older build parked (of a type it did not know) and this one knows go out first.
 */
const webhookDispatch = defineService({
  name: "webhook-dispatch",
  envPrefix: "WEBHOOK_DISPATCH",
  defaultPort: 9095,
  settings,
  schema: "webhook_dispatch",
  entities: [Endpoint, WebhookMessage, Delivery],
  migrations,
  build: async ({ statements, clock, logger, config }) => {
    const box = createSecretBox(config.secretKey);
    const sender = createHttpSender(destinationPolicyFor(config.deployment));
    // Before the worker claims anything: this instance is alive, and what the gone ones held is due now.
    let wakeWorker = () => {};
    const heartbeat = await startInstanceHeartbeat({
      id: uuid(),
      databaseUrl: config.databaseUrl,
      statements,
      clock,
      logger,
      everyMs: config.heartbeatEvery,
      staleAfterMs: config.instanceStaleAfter,
      onReleased: () => wakeWorker(),
    });
    const worker = startDeliveryWorker({
      instanceId: heartbeat.id,
      statements,
      clock,
      logger,
      sender,
      keys: createEndpointKeys(box),
      retry: {
        schedule: config.retrySchedule,
        jitter: config.retryJitterPercent / 100,
        retryAfterMaxMs: config.retryAfterMax,
      },
      timeoutMs: config.deliveryTimeout,
      perEndpointConcurrency: config.perEndpointConcurrency,
      globalConcurrency: config.globalConcurrency,
      pollMs: config.pollInterval,
      autoDisableAfterMs: config.autoDisableAfter,
    });
    wakeWorker = () => worker.wake();
    const callbacks = createCallbackEndpoints({
      agentlink: createInternalClient(AgentCallbackService, config.agentlinkUrl),
      statements,
      box,
      logger,
    });
    return { box, sender, worker, callbacks, heartbeat };
  },
  routes: ({ box, worker }, { orm, statements, clock, config }) =>
    createRoutes({
      orm,
      statements,
      clock,
      box,
      policy: destinationPolicyFor(config.deployment),
      wakeWorker: () => worker.wake(),
      forgetEndpoint: async (endpointId) => worker.forget(endpointId),
    }),
  background: async ({ sender, worker, callbacks, heartbeat }, { orm, clock, statements, bus, logger, config }) => {
    const retention = startMessageRetention({
      orm,
      clock,
      retentionMs: config.messageRetention,
      batchSize: config.retentionBatch,
      logger,
    });
    const firstAttemptDelayMs = config.retrySchedule[0] ?? 0;
    const consumer = await releaseParkedEvents({ statements, logger, worker, callbacks, firstAttemptDelayMs })
      .then(() =>
        startEventConsumer({
          bus,
          statements,
          logger,
          consumerName: config.consumerName,
          ackWaitMs: config.ackWait,
          firstAttemptDelayMs,
          worker,
          callbacks,
        }),
      )
      .catch(async (error: unknown) => {
        await retention.stop();
        await worker.stop();
        await heartbeat.stop();
        sender.close();
        throw error;
      });
    const stopMeasuring = measureOldestDueDelivery(statements, clock);
    return async () => {
      stopMeasuring();
      await retention.stop();
      await consumer.stop();
      await worker.stop();
      await heartbeat.stop();
      sender.close();
    };
  },
});

export const startWebhookDispatch = (options: StartOptions = {}) => startService(webhookDispatch, options);

runAsMain(
  import.meta.url,
  "webhook-dispatch",
  () => startWebhookDispatch(),
  () => migrateService(webhookDispatch),
);

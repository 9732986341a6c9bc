import { createLogger, runAsMain, type StartOptions, startService } from "@svc/platform";
import { resolveSecretKey, settings } from "./config.ts";
import { type DeliveryWorker, startDeliveryWorker } from "./delivery/delivery-worker.ts";
import { destinationPolicyFor } from "./delivery/destination-guard.ts";
import { createEndpointKeys } from "./delivery/endpoint-keys.ts";
import { startEventConsumer } from "./delivery/event-consumer.ts";
import { createHttpSender } from "./delivery/http-sender.ts";
import { releaseParkedEvents } from "./delivery/parked-events.ts";
import { Endpoint } from "./endpoints/endpoint.entity.ts";
import { createSecretBox } from "./endpoints/endpoint-secret.ts";
import { Delivery, WebhookMessage } from "./messages/message.entity.ts";
import { migrations } from "./migrations/index.ts";
import { createRoutes } from "./routes.ts";

/**
 * webhook-dispatch: the console operations on endpoints and messages (Connect), a durable consumer
 * that stores every event as a message with its deliveries, and the worker that sends them. At
 * start, events that an older build parked (of a type it did not know) and this one knows go out first.
 */
export const startWebhookDispatch = async (options: StartOptions = {}) => {
  const logger = options.logger ?? createLogger("webhook-dispatch");
  // Checked before anything opens: production must not run with the built-in key.
  const box = createSecretBox(resolveSecretKey(options.env ?? process.env, logger));
  let worker: DeliveryWorker | undefined;

  return startService(
    {
      name: "webhook-dispatch",
      envPrefix: "WEBHOOK_DISPATCH",
      defaultPort: 9095,
      settings,
      schema: "webhook_dispatch",
      entities: [Endpoint, WebhookMessage, Delivery],
      migrations,
      routes: ({ orm, clock, config }) =>
        createRoutes({
          orm,
          clock,
          box,
          policy: destinationPolicyFor(config.deployment),
          wakeWorker: () => worker?.wake(),
          forgetEndpoint: async (endpointId) => worker?.forget(endpointId),
        }),
      background: async ({ statements, bus, clock, config }) => {
        const sender = createHttpSender(destinationPolicyFor(config.deployment));
        const started = startDeliveryWorker({
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
        worker = started;
        const firstAttemptDelayMs = config.retrySchedule[0] ?? 0;
        const consumer = await releaseParkedEvents({ statements, logger, worker: started, firstAttemptDelayMs })
          .then(() =>
            startEventConsumer({
              bus,
              statements,
              logger,
              consumerName: config.consumerName,
              ackWaitMs: config.ackWait,
              firstAttemptDelayMs,
              worker: started,
            }),
          )
          .catch(async (error: unknown) => {
            await started.stop();
            sender.close();
            throw error;
          });
        return async () => {
          await consumer.stop();
          await started.stop();
          sender.close();
        };
      },
    },
    { ...options, logger },
  );
};

runAsMain(import.meta.url, () => startWebhookDispatch());

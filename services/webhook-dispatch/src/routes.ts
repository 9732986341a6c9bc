import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectRouter } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import { type Clock, environmentProto, type Queryable, refusalTranslator } from "@svc/platform";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import {
  type Delivery as DeliveryMessage,
  DeliverySchema,
  DeliveryStatus,
  type Endpoint as EndpointMessage,
  EndpointSchema,
  EndpointStatus,
  MessageSchema,
  WebhookCallbackService,
  WebhookConsoleService,
} from "@svc/proto/webhook/v1/webhook_pb.js";
import { callbackDelivery } from "./callbacks/callback-delivery.ts";
import type { DestinationPolicy } from "./delivery/destination-guard.ts";
import type { Endpoint } from "./endpoints/endpoint.entity.ts";
import {
  addEndpoint,
  disableEndpoint,
  type EndpointContext,
  enableEndpoint,
  listEndpoints,
  removeEndpoint,
  rotateEndpointSecret,
} from "./endpoints/endpoint-operations.ts";
import type { SecretBox } from "./endpoints/endpoint-secret.ts";
import { type DeliveryView, listMessages, type MessageView, replayMessage } from "./messages/message-operations.ts";
import type { WebhookRefusalKind } from "./refusal.ts";

export interface RouteDependencies {
  orm: MikroORM;
  statements: Queryable;
  clock: Clock;
  box: SecretBox;
  policy: DestinationPolicy;
  /** Deliveries are due now (a replay, an enabled endpoint): wake this process's worker. */
  wakeWorker: () => void;
  /** An endpoint was disabled or removed: this process's worker drops what it claimed for it. */
  forgetEndpoint: (endpointId: string) => Promise<void>;
}

/** Thin handlers: translate the wire to the domain operations and back, one unit of work each. */
export function createRoutes(deps: RouteDependencies) {
  const endpoints = (): EndpointContext => ({
    em: deps.orm.em.fork(),
    clock: deps.clock,
    box: deps.box,
    policy: deps.policy,
  });
  const endpointOut = (endpoint: Endpoint) => toEndpointMessage(endpoint, deps.clock.now());

  return (router: ConnectRouter) => {
    // Internal: the gateway's check-status asks for an agent's callback of one card.
    router.service(WebhookCallbackService, {
      getCallbackDelivery: (req) => callbackDelivery(deps.statements, req.agentId, req.cardId),
    });
    router.service(WebhookConsoleService, {
      addEndpoint: (req) =>
        wireErrors(async () => {
          const { endpoint, secret } = await addEndpoint(endpoints(), {
            organizationId: req.organizationId,
            url: req.url,
            types: req.types,
          });
          return { endpointId: endpoint.id, secret, endpoint: endpointOut(endpoint) };
        }),
      listEndpoints: (req) =>
        wireErrors(async () => ({
          endpoints: (await listEndpoints(deps.orm.em.fork(), req.organizationId)).map(endpointOut),
        })),
      removeEndpoint: (req) =>
        wireErrors(async () => {
          await removeEndpoint(deps.orm.em.fork(), req.organizationId, req.endpointId);
          await deps.forgetEndpoint(req.endpointId);
          return { endpointId: req.endpointId };
        }),
      rotateEndpointSecret: (req) =>
        wireErrors(async () => {
          const { endpoint, secret } = await rotateEndpointSecret(endpoints(), req.organizationId, req.endpointId);
          return {
            secret,
            previousSecretExpiresAt: optionalTimestamp(endpoint.previousSecretExpiresAt),
            endpoint: endpointOut(endpoint),
          };
        }),
      enableEndpoint: (req) =>
        wireErrors(async () => {
          const endpoint = await enableEndpoint(deps.orm.em.fork(), req.organizationId, req.endpointId);
          deps.wakeWorker();
          return { endpoint: endpointOut(endpoint) };
        }),
      disableEndpoint: (req) =>
        wireErrors(async () => {
          const endpoint = await disableEndpoint(deps.orm.em.fork(), deps.clock, req.organizationId, req.endpointId);
          await deps.forgetEndpoint(endpoint.id);
          return { endpoint: endpointOut(endpoint) };
        }),
      listMessages: (req) =>
        wireErrors(async () => {
          const messages = await listMessages(deps.orm.em.fork(), {
            organizationId: req.organizationId,
            endpointId: req.endpointId,
            status: fromDeliveryStatus(req.status),
            limit: req.limit,
            offset: req.offset,
          });
          return { messages: messages.map(toMessageMessage) };
        }),
      replayMessage: (req) =>
        wireErrors(async () => {
          const delivery = await replayMessage(deps.orm.em.fork(), deps.clock, {
            organizationId: req.organizationId,
            messageId: req.messageId,
            endpointId: req.endpointId,
          });
          deps.wakeWorker();
          return { delivery: toDeliveryMessage(delivery) };
        }),
    });
  };
}

/** The one place where domain refusals become Connect codes. */
const wireErrors = refusalTranslator<WebhookRefusalKind>({
  invalid_argument: Code.InvalidArgument,
  not_found: Code.NotFound,
  failed_precondition: Code.FailedPrecondition,
});

function toEndpointMessage(endpoint: Endpoint, now: Date): EndpointMessage {
  const previousLive =
    endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > now
      ? endpoint.previousSecretExpiresAt
      : null;
  return create(EndpointSchema, {
    endpointId: endpoint.id,
    organizationId: endpoint.organizationId,
    url: endpoint.url,
    types: endpoint.types,
    status: endpoint.status === "enabled" ? EndpointStatus.ENABLED : EndpointStatus.DISABLED,
    disabledReason: endpoint.disabledReason ?? "",
    disabledAt: optionalTimestamp(endpoint.disabledAt),
    createdAt: timestampFromDate(endpoint.createdAt),
    previousSecretExpiresAt: optionalTimestamp(previousLive),
  });
}

const deliveryStatuses = {
  pending: DeliveryStatus.PENDING,
  delivered: DeliveryStatus.DELIVERED,
  failed: DeliveryStatus.FAILED,
} as const;

function fromDeliveryStatus(status: DeliveryStatus): DeliveryView["status"] | undefined {
  return (Object.keys(deliveryStatuses) as DeliveryView["status"][]).find((key) => deliveryStatuses[key] === status);
}

function toDeliveryMessage(delivery: DeliveryView): DeliveryMessage {
  return create(DeliverySchema, {
    endpointId: delivery.endpointId,
    status: deliveryStatuses[delivery.status],
    attempts: delivery.attempts,
    lastAttemptAt: optionalTimestamp(delivery.lastAttemptAt),
    nextAttemptAt: optionalTimestamp(delivery.nextAttemptAt),
    lastStatusCode: delivery.lastStatusCode ?? 0,
    lastError: delivery.lastError ?? "",
    deliveredAt: optionalTimestamp(delivery.deliveredAt),
  });
}

function toMessageMessage(message: MessageView) {
  return create(MessageSchema, {
    messageId: message.id,
    type: message.type,
    environment: message.environment ? environmentProto(message.environment) : Environment.UNSPECIFIED,
    occurredAt: optionalTimestamp(message.occurredAt),
    receivedAt: timestampFromDate(message.receivedAt),
    deliveries: message.deliveries.map(toDeliveryMessage),
  });
}

const optionalTimestamp = (at: Date | null | undefined) => (at ? timestampFromDate(at) : undefined);

import {
  type Delivery,
  DeliveryStatus,
  type Endpoint,
  EndpointStatus,
  WebhookConsoleService,
} from "@svc/proto/webhook/v1/webhook_pb.js";
import { type CommandGroup, type OptionValues, stringList, stringValue, UsageError } from "../command.ts";
import { environmentName, instant } from "./format.ts";

const org = { type: "string", required: true, valueName: "ID", description: "organization id" } as const;
const endpoint = { type: "string", required: true, valueName: "ENDPOINT_ID", description: "endpoint id" } as const;

const deliveryStatuses = {
  pending: DeliveryStatus.PENDING,
  delivered: DeliveryStatus.DELIVERED,
  failed: DeliveryStatus.FAILED,
} as const;
const deliveryStatusName = (status: DeliveryStatus) =>
  (Object.entries(deliveryStatuses).find(([, value]) => value === status)?.[0] ?? "unspecified") as
    | keyof typeof deliveryStatuses
    | "unspecified";

const endpointRow = (e: Endpoint | undefined) =>
  e && {
    endpoint_id: e.endpointId,
    url: e.url,
    types: e.types,
    status: e.status === EndpointStatus.DISABLED ? "disabled" : "enabled",
    disabled_reason: e.disabledReason || null,
    disabled_at: instant(e.disabledAt),
    previous_secret_expires_at: instant(e.previousSecretExpiresAt),
    created_at: instant(e.createdAt),
  };

const deliveryRow = (d: Delivery | undefined) =>
  d && {
    endpoint_id: d.endpointId,
    status: deliveryStatusName(d.status),
    attempts: d.attempts,
    last_attempt_at: instant(d.lastAttemptAt),
    next_attempt_at: instant(d.nextAttemptAt),
    last_status_code: d.lastStatusCode || null,
    last_error: d.lastError || null,
    delivered_at: instant(d.deliveredAt),
  };

const wholeNumber = (values: OptionValues, name: string): number | undefined => {
  const text = stringValue(values, name);
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`--${name} must be a whole number, not ${text}`);
  return n;
};

const endpointTarget = (values: OptionValues) => ({
  organizationId: values.org as string,
  endpointId: values.endpoint as string,
});

export const webhookCommands: CommandGroup = {
  name: "webhook",
  summary: "Webhook endpoints of an organization and the messages sent to them.",
  commands: [
    {
      name: "add",
      summary: 'Adds an endpoint; prints {"endpoint_id","secret"} (the secret is shown once).',
      details:
        "An endpoint receives events of both environments. Without --type it receives every type; retired type names are refused.",
      options: {
        org,
        url: {
          type: "string",
          required: true,
          valueName: "URL",
          description: "where events are POSTed (https in production)",
        },
        type: {
          type: "string",
          multiple: true,
          valueName: "TYPE",
          description: "an event type to receive, e.g. gate.human_verified",
        },
      },
      async run(values, ctx) {
        const response = await ctx.serviceConsole(WebhookConsoleService).addEndpoint({
          organizationId: values.org as string,
          url: values.url as string,
          types: stringList(values, "type"),
        });
        return { endpoint_id: response.endpointId, secret: response.secret };
      },
    },
    {
      name: "list",
      summary: "Lists the organization's endpoints, with why a disabled one was disabled.",
      options: { org },
      async run(values, ctx) {
        const response = await ctx
          .serviceConsole(WebhookConsoleService)
          .listEndpoints({ organizationId: values.org as string });
        return { endpoints: response.endpoints.map(endpointRow) };
      },
    },
    {
      name: "remove",
      summary: "Removes an endpoint; nothing more is sent to it.",
      options: { org, endpoint },
      async run(values, ctx) {
        const response = await ctx.serviceConsole(WebhookConsoleService).removeEndpoint(endpointTarget(values));
        return { endpoint_id: response.endpointId };
      },
    },
    {
      name: "rotate",
      summary: 'Replaces the signing secret; prints {"secret","previous_secret_expires_at"}.',
      details:
        "The previous secret keeps signing beside the new one for 24 hours, so receivers can switch without losing a message.",
      options: { org, endpoint },
      async run(values, ctx) {
        const response = await ctx.serviceConsole(WebhookConsoleService).rotateEndpointSecret(endpointTarget(values));
        return { secret: response.secret, previous_secret_expires_at: instant(response.previousSecretExpiresAt) };
      },
    },
    {
      name: "enable",
      summary: "Enables an endpoint; held deliveries resume.",
      options: { org, endpoint },
      async run(values, ctx) {
        return endpointRow(
          (await ctx.serviceConsole(WebhookConsoleService).enableEndpoint(endpointTarget(values))).endpoint,
        );
      },
    },
    {
      name: "disable",
      summary: "Disables an endpoint; pending deliveries are held, not failed.",
      options: { org, endpoint },
      async run(values, ctx) {
        return endpointRow(
          (await ctx.serviceConsole(WebhookConsoleService).disableEndpoint(endpointTarget(values))).endpoint,
        );
      },
    },
    {
      name: "messages",
      summary: "Lists messages newest first, with each delivery's status and attempts.",
      options: {
        org,
        endpoint: { type: "string", valueName: "ENDPOINT_ID", description: "only deliveries to this endpoint" },
        status: {
          type: "string",
          choices: Object.keys(deliveryStatuses),
          description: "only deliveries in this status",
        },
        limit: { type: "string", valueName: "N", description: "page size, 1-100 (default 25)" },
        offset: { type: "string", valueName: "N", description: "rows to skip (default 0)" },
      },
      async run(values, ctx) {
        const status = stringValue(values, "status") as keyof typeof deliveryStatuses | undefined;
        const response = await ctx.serviceConsole(WebhookConsoleService).listMessages({
          organizationId: values.org as string,
          endpointId: stringValue(values, "endpoint"),
          status: status ? deliveryStatuses[status] : DeliveryStatus.UNSPECIFIED,
          limit: wholeNumber(values, "limit") ?? 25,
          offset: wholeNumber(values, "offset") ?? 0,
        });
        return {
          messages: response.messages.map((m) => ({
            message_id: m.messageId,
            type: m.type,
            environment: environmentName(m.environment),
            occurred_at: instant(m.occurredAt),
            received_at: instant(m.receivedAt),
            deliveries: m.deliveries.map(deliveryRow),
          })),
        };
      },
    },
    {
      name: "replay",
      summary: "Sends a message to an endpoint again, with a fresh retry schedule and the same webhook-id.",
      options: {
        org,
        message: {
          type: "string",
          required: true,
          valueName: "MESSAGE_ID",
          description: "message id (the webhook-id)",
        },
        endpoint,
      },
      async run(values, ctx) {
        const response = await ctx
          .serviceConsole(WebhookConsoleService)
          .replayMessage({ ...endpointTarget(values), messageId: values.message as string });
        return deliveryRow(response.delivery);
      },
    },
  ],
};

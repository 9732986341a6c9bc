import { instant } from "../http/instant.ts";
import { ok } from "../http/route.ts";
import { defineRoute } from "../services.ts";
import { sessionUserId } from "./session-user.ts";

/** decisions.md "Web Push": the app subscribes the browser with this key and registers what it got. */
const pushKeyRoute = defineRoute({
  operationId: "appPushKey",
  method: "GET",
  path: "/app/push-key",
  summary: "The VAPID public key (RFC 8292) the app subscribes the browser's push manager with.",
  auth: { accepts: ["user_session"] },
  input: { type: "object", properties: {} },
  envelope: "nested",
  output: {
    type: "object",
    properties: {
      public_key: { type: "string", description: "The uncompressed P-256 point, base64url: the applicationServerKey." },
    },
  },
  async handle(_input, { services }) {
    const { publicKey } = await services.account.getPushKey({});
    return ok({ public_key: publicKey });
  },
});

const base64url = (description: string) => ({
  type: "string" as const,
  minLength: 1,
  maxLength: 128,
  pattern: "^[A-Za-z0-9_-]+={0,2}$",
  description,
});

const addPushSubscriptionRoute = defineRoute({
  operationId: "appAddPushSubscription",
  method: "POST",
  path: "/app/push-subscriptions",
  summary:
    "Register the browser's PushSubscription for the signed-in person. The same endpoint again answers the same id. A person keeps their ten newest: an eleventh drops the oldest (its pushes still waiting go with it). An endpoint that is not https on a known push service (development: or http on a loopback address) is a 400.",
  auth: { accepts: ["user_session"] },
  input: {
    type: "object",
    properties: {
      endpoint: { type: "string", minLength: 1, maxLength: 2048, description: "PushSubscription.endpoint." },
      keys: {
        type: "object",
        properties: {
          p256dh: base64url("The browser's P-256 public key: an uncompressed point on the curve (65 bytes), or a 400."),
          auth: base64url("The authentication secret (16 bytes)."),
        },
        required: ["p256dh", "auth"],
      },
    },
    required: ["endpoint", "keys"],
  },
  envelope: "nested",
  output: { type: "object", properties: { id: { type: "string", format: "uuid" } } },
  async handle(input, { caller, services }) {
    const added = await services.account.addPushSubscription({
      svcUserId: sessionUserId(caller),
      endpoint: input.endpoint,
      p256dh: input.keys.p256dh,
      auth: input.keys.auth,
    });
    return ok({ id: added.subscriptionId });
  },
});

const listPushSubscriptionsRoute = defineRoute({
  operationId: "appListPushSubscriptions",
  method: "GET",
  path: "/app/push-subscriptions",
  summary: "The signed-in person's devices that receive pushes, oldest first; never their endpoints.",
  auth: { accepts: ["user_session"] },
  input: { type: "object", properties: {} },
  envelope: "nested",
  output: {
    type: "object",
    properties: {
      subscriptions: {
        type: "array",
        items: {
          type: "object",
          properties: {
            id: { type: "string", format: "uuid" },
            push_host: { type: "string", description: "The push service's host: which browser family." },
            created_at: { type: "string", format: "date-time" },
            last_pushed_at: { type: "string", format: "date-time", nullable: true },
          },
        },
      },
    },
  },
  async handle(_input, { caller, services }) {
    const { subscriptions } = await services.account.listPushSubscriptions({ svcUserId: sessionUserId(caller) });
    return ok({
      subscriptions: subscriptions.map((subscription) => ({
        id: subscription.subscriptionId,
        push_host: subscription.pushHost,
        created_at: instant(subscription.createdAt),
        last_pushed_at: instant(subscription.lastPushedAt),
      })),
    });
  },
});

const removePushSubscriptionRoute = defineRoute({
  operationId: "appRemovePushSubscription",
  method: "DELETE",
  path: "/app/push-subscriptions/{id}",
  summary: "Stop pushes to one of the signed-in person's devices. Not the person's: 404.",
  auth: { accepts: ["user_session"] },
  input: {
    type: "object",
    properties: { id: { type: "string", minLength: 1, maxLength: 64, description: "As listed." } },
    required: ["id"],
  },
  envelope: "nested",
  output: { type: "object", properties: { removed: { type: "boolean" } } },
  async handle(input, { caller, services }) {
    await services.account.removePushSubscription({ svcUserId: sessionUserId(caller), subscriptionId: input.id });
    return ok({ removed: true });
  },
});

export const pushSubscriptionRoutes = [
  pushKeyRoute,
  addPushSubscriptionRoute,
  listPushSubscriptionsRoute,
  removePushSubscriptionRoute,
];

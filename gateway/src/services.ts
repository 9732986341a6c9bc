import type { Client } from "@connectrpc/connect";
import type { Clock } from "@svc/platform";
import type { AccountService } from "@svc/proto/account/v1/account_pb.js";
import type { AgentService, CheckStatusResponse } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import type { GateService } from "@svc/proto/gate/v1/gate_pb.js";
import type { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import type { WebhookCallbackService } from "@svc/proto/webhook/v1/webhook_pb.js";
import type { OrganizationNames } from "./app/organization-names.ts";
import type { UserSessionResolver } from "./credentials/user-session.ts";
import type { Route, RouteDefinition } from "./http/route.ts";
import type { ObjectSchema } from "./http/schema.ts";
import type { InboxPresence } from "./long-poll/inbox-presence.ts";
import type { InboxChange } from "./long-poll/notifications.ts";
import type { Waiters } from "./long-poll/waiters.ts";
import type { CheckStatusBatcher } from "./operations/check-status-batcher.ts";
import type { KeySetCache } from "./operations/jwks.ts";
import type { LedgerHandover } from "./operations/ledger-handover.ts";
import type { VerifyingKeys } from "./operations/verifying-keys.ts";
import type { WidgetScript } from "./operations/widget-script.ts";

/** What operation handlers reach beyond the request: the business services' clients and shared caches. */
export interface GatewayServices {
  signing: Client<typeof SigningService>;
  keySet: KeySetCache;
  /** The key set verify-token checks signatures against, kept in memory and refreshed from signing. */
  verifyingKeys: VerifyingKeys;
  /** verify-token's first checks also go to signing's ledger while the ledger moves from there (GATEWAY_LEDGER_HANDOVER_UNTIL). */
  ledgerHandover: LedgerHandover;
  gate: Client<typeof GateService>;
  account: Client<typeof AccountService>;
  agentlink: Client<typeof AgentService>;
  /** check-status reads, sent to agentlink together (one CheckStatuses call for concurrent reads). */
  cardStatuses: CheckStatusBatcher;
  /** webhook-dispatch's report of agents' callbacks (check-status); a short deadline, since the answer does without it. */
  webhookCallbacks: Client<typeof WebhookCallbackService>;
  /** The check-status long-polls held in this process, by card. */
  cardWaiters: Waiters<CheckStatusResponse>;
  /** The verification-status long-polls held in this process, by request id (woken to read again). */
  requestWaiters: Waiters;
  /** The inbox long-polls and event streams held in this process, by svc_user_id (woken with what changed, or to read again). */
  inboxWaiters: Waiters<InboxChange>;
  /** The people whose inbox this process holds open, answering gate's presence requests. */
  inboxPresence: InboxPresence;
  /** Organizations are the gateway's: the app names a partner by its organization's name (cached, `OrganizationNameCache`). */
  organizations: OrganizationNames;
  /** Whom the user sessions this replica resolved name (a deleted account is forgotten here at once). */
  userSessions: Pick<UserSessionResolver, "forgetHuman">;
  /** The injected clock (the inbox leaves out requests whose window has ended). */
  clock: Clock;
  /** `{api_origin}`, for the links a response carries. */
  publicOrigin: string;
  /** The built `<svc-verify>` (partner-config publishes it); undefined when the build has not run. */
  widget: WidgetScript | undefined;
}

/** Declares one of the gateway's routes, its handler's input typed from the schema (declare the schema inline or `as const`). */
export function defineRoute<const S extends ObjectSchema>(
  route: RouteDefinition<S, GatewayServices>,
): Route<GatewayServices> {
  return route as Route<GatewayServices>;
}

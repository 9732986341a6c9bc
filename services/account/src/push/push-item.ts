import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/postgresql";
import { isUuid, type Logger, type Queryable, type StoredTraceContext } from "@svc/platform";
import { PushKind } from "@svc/proto/account/v1/account_pb.js";
import type { PushTrigger } from "@svc/proto/account/v1/push_trigger_pb.js";
import { requireText } from "../input.ts";
import type { PushProviders } from "./configured-providers.ts";
import { writePushJobs } from "./push-jobs.ts";
import { pushToHuman } from "./push-to-human.ts";
import type { WebPushHandOver } from "./web-push-sender.ts";

export interface PushItemContext {
  em: EntityManager;
  /** The statement pool, for the web push jobs on the way to the person's screen. */
  statements: Queryable;
  now: Date;
  providers: PushProviders;
  /** The web push sender, which takes the jobs leased to it or is woken for them. */
  sender: WebPushHandOver;
  logger: Logger;
  /** The trace the pushes continue: the trigger's consumer span, or the RPC's that asked. */
  traceContext: StoredTraceContext;
}

/**
 * A push trigger (push_trigger.proto) taken in: one web push job per subscription of the person,
 * committed (a repeat of the item adds none) and, leased to this process's sender, handed to it at once,
 * then the native providers, best effort. Throws only when the jobs could not be written, so that the
 * trigger is delivered again.
 */
export async function pushItem(
  ctx: PushItemContext,
  trigger: Pick<PushTrigger, "svcUserId" | "kind" | "itemId" | "title" | "expiresAt">,
): Promise<{ sent: number; failed: number; webPush: number }> {
  const title = trigger.title.slice(0, 200);
  const expiresAt = trigger.expiresAt && timestampDate(trigger.expiresAt);
  // One statement, atomic by itself: a transaction around it would cost two more round trips.
  let webPush = 0;
  if (trigger.itemId !== "" && expiresAt !== undefined && isUuid(trigger.svcUserId)) {
    const dueAt = ctx.sender.dueAt(ctx.now);
    const { subscriptions, written } = await writePushJobs(
      ctx.statements,
      trigger.svcUserId,
      {
        kind: trigger.kind === PushKind.AGENT_CARD ? "card" : "request",
        id: requireText(trigger.itemId, "item_id", 128),
        title,
        expiresAt,
      },
      ctx.now,
      dueAt,
      ctx.traceContext,
    );
    webPush = subscriptions;
    if (dueAt > ctx.now) ctx.sender.send(written, ctx.now);
    else if (written.length > 0) ctx.sender.wake();
  }
  const providers = await pushToHuman({ em: ctx.em, providers: ctx.providers, logger: ctx.logger }, trigger.svcUserId, {
    kind: trigger.kind === PushKind.AGENT_CARD ? "agent_card" : "gate_request",
    title,
  });
  return { ...providers, webPush };
}

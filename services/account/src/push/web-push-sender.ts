import type { MikroORM } from "@mikro-orm/postgresql";
import { type Clock, type Logger, startWakeableLoop, type WakeableLoop } from "@svc/platform";
import webPush from "web-push";
import { checkPushEndpoint, type PushEndpointPolicy } from "./push-endpoint-policy.ts";
import type { SubscriptionSecret } from "./push-subscriptions.ts";
import type { PushSealing } from "./subscription-sealing.ts";
import type { VapidKeys } from "./vapid-keys.ts";

/** Due pushes one transaction holds and sends together. */
const batchSize = 50;
/** A push service that answers nothing in this time is retried like a 5xx. */
const sendTimeoutMs = 10_000;
/** The retry after the n-th failure waits 1 s doubled n-1 times, at most this (a Retry-After may ask for more). */
const maxRetryDelayMs = 60_000;

interface DueJob {
  subscription_id: string;
  topic: string;
  payload: unknown;
  urgency: "normal" | "high";
  /** As the driver gives it for a raw statement. */
  expires_at: string | Date;
  attempts: number;
  sealed: Buffer;
}

type Outcome =
  | { kind: "sent" }
  /** RFC 8030 §7.3: the subscription is gone for good. */
  | { kind: "gone" }
  | { kind: "retry"; retryAfterMs?: number }
  | { kind: "refused"; detail: string };

export interface WebPushSenderDependencies {
  orm: MikroORM;
  clock: Clock;
  sealing: PushSealing;
  vapid: VapidKeys;
  policy: PushEndpointPolicy;
  logger: Logger;
  pollMs: number;
}

/**
 * Delivers the pushes `enqueuePush` committed (RFC 8030, encrypted RFC 8291 aes128gcm, signed RFC 8292
 * VAPID, through `web-push`'s request builder and our own `fetch`, so the endpoint policy is checked on the
 * very URL sent to). Due rows are taken `for update skip locked`, so replicas never send one push at once,
 * and kept locked until their outcome commits: a crash before that leaves them due, and they are sent
 * again under the same Topic, which replaces the first at the push service. 404/410 deletes the
 * subscription; 429, 5xx and no answer retry with backoff while the item lives; other answers drop the push.
 */
export function startWebPushSender(deps: WebPushSenderDependencies): WakeableLoop {
  const { orm, clock, logger } = deps;
  const abort = new AbortController();

  const send = async (job: DueJob, vapid: VapidKeys, now: Date): Promise<Outcome> => {
    const subscription = JSON.parse(
      deps.sealing.open(job.subscription_id, job.sealed).toString(),
    ) as SubscriptionSecret;
    try {
      checkPushEndpoint(subscription.endpoint, deps.policy);
    } catch (error) {
      return { kind: "refused", detail: (error as Error).message };
    }
    const request = webPush.generateRequestDetails(
      { endpoint: subscription.endpoint, keys: { p256dh: subscription.p256dh, auth: subscription.auth } },
      JSON.stringify(job.payload),
      {
        vapidDetails: vapid,
        TTL: Math.max(1, Math.floor((new Date(job.expires_at).getTime() - now.getTime()) / 1000)),
        urgency: job.urgency,
        topic: job.topic,
        contentEncoding: "aes128gcm",
      },
    );
    let response: Response;
    try {
      response = await fetch(request.endpoint, {
        method: "POST",
        headers: request.headers as Record<string, string>,
        body: new Uint8Array(request.body as Buffer),
        redirect: "manual",
        signal: AbortSignal.any([abort.signal, AbortSignal.timeout(sendTimeoutMs)]),
      });
      await response.body?.cancel();
    } catch (error) {
      if (abort.signal.aborted) throw error;
      return { kind: "retry" };
    }
    if (response.status >= 200 && response.status < 300) return { kind: "sent" };
    if (response.status === 404 || response.status === 410) return { kind: "gone" };
    if (response.status === 429 || response.status >= 500) {
      const seconds = Number(response.headers.get("retry-after"));
      return { kind: "retry", retryAfterMs: Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : undefined };
    }
    return { kind: "refused", detail: `the push service answered ${response.status}` };
  };

  const work = async (): Promise<boolean> => {
    const now = clock.now();
    const em = orm.em.fork();
    await em.execute(
      `delete from push_job where ctid in (select ctid from push_job where expires_at <= ? limit 1000)`,
      [now],
    );
    return em.transactional(async (tx) => {
      const due = await tx.execute<DueJob[]>(
        `select j.subscription_id, j.topic, j.payload, j.urgency, j.expires_at, j.attempts, s.sealed
           from push_job j join push_subscription s on s.id = j.subscription_id
          where j.sent_at is null and j.next_attempt_at <= ? and j.expires_at > ?
          order by j.next_attempt_at limit ${batchSize} for update of j skip locked`,
        [now, now],
      );
      const outcomes = await Promise.all(due.map((job) => send(job, deps.vapid, now)));
      for (const [i, job] of due.entries()) {
        const outcome = outcomes[i] as Outcome;
        const key = [job.subscription_id, job.topic];
        if (outcome.kind === "sent") {
          await tx.execute(`update push_job set sent_at = ? where subscription_id = ? and topic = ?`, [now, ...key]);
          await tx.execute(`update push_subscription set last_pushed_at = ? where id = ?`, [now, job.subscription_id]);
        } else if (outcome.kind === "gone") {
          await tx.execute(`delete from push_subscription where id = ?`, [job.subscription_id]);
          logger.info("push subscription gone; deleted", { subscription_id: job.subscription_id });
        } else if (outcome.kind === "retry") {
          const backoff = Math.min(maxRetryDelayMs, 1000 * 2 ** job.attempts);
          const next = new Date(now.getTime() + Math.max(backoff, outcome.retryAfterMs ?? 0));
          // Past the item's life the row stays until the expiry delete above: nothing would show it anyway.
          await tx.execute(
            `update push_job set attempts = attempts + 1, next_attempt_at = ? where subscription_id = ? and topic = ?`,
            [next, ...key],
          );
        } else {
          await tx.execute(`update push_job set sent_at = ? where subscription_id = ? and topic = ?`, [now, ...key]);
          logger.warn("push refused; dropped", { subscription_id: job.subscription_id, detail: outcome.detail });
        }
      }
      return due.length === batchSize;
    });
  };

  const loop = startWakeableLoop({
    pollMs: deps.pollMs,
    work,
    onError: (error) => {
      if (!abort.signal.aborted) logger.error("web push sender failed; will retry", { error });
    },
  });
  return {
    wake: () => loop.wake(),
    async stop() {
      abort.abort();
      await loop.stop();
    },
  };
}

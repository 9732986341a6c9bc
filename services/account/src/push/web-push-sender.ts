import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { type Clock, inTransaction, type Logger, startWakeableLoop, type WakeableLoop } from "@svc/platform";
import type pg from "pg";
import { openedSubscriptions } from "./opened-subscriptions.ts";
import { encryptPush } from "./push-encryption.ts";
import type { PushEndpointPolicy } from "./push-endpoint-policy.ts";
import type { PushSealing } from "./subscription-sealing.ts";
import { vapidAuthorization } from "./vapid-authorization.ts";
import type { VapidKeys } from "./vapid-keys.ts";

/** Due pushes one transaction holds and sends together. */
const batchSize = 50;
/**
 * Batches in flight at once, each its own transaction over rows the others skip: a burst is not held to one
 * batch's round trips (claim, sends, outcomes, commit) after another.
 */
const concurrentBatches = 4;
/** A push service that answers nothing in this time is retried like a 5xx. */
const sendTimeoutMs = 10_000;
/** The retry after the n-th failure waits 1 s doubled n-1 times, at most this (a Retry-After may ask for more). */
const maxRetryDelayMs = 60_000;

/** Rows past their item's end that one statement deletes. */
const expiredBatch = 1000;

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
  /** The statement pool: a push's claim is on the way to the person's screen (see `openStatementPool`). */
  statements: pg.Pool;
  clock: Clock;
  sealing: PushSealing;
  vapid: VapidKeys;
  policy: PushEndpointPolicy;
  logger: Logger;
  pollMs: number;
}

/**
 * Delivers the pushes `enqueuePush` committed (RFC 8030, encrypted RFC 8291 aes128gcm by `encryptPush`,
 * under a VAPID JWT signed once per push service, sent by our own node:http(s) request over kept-alive
 * connections, so the endpoint policy is checked on the very URL sent to). Due rows are taken `for update skip locked`, so replicas never send one push at once,
 * and kept locked until their outcome commits: a crash before that leaves them due, and they are sent
 * again under the same Topic, which replaces the first at the push service. 404/410 deletes the
 * subscription; 429, 5xx and no answer retry with backoff while the item lives; other answers drop the push.
 */
export function startWebPushSender(deps: WebPushSenderDependencies): WakeableLoop {
  const { statements, clock, logger } = deps;
  const abort = new AbortController();
  const authorization = vapidAuthorization(deps.vapid, clock);
  const open = openedSubscriptions(deps.sealing, deps.policy);
  // Redirects are not followed: a push service answers the endpoint itself (RFC 8030 §5).
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  const post = (url: URL, headers: OutgoingHttpHeaders, body: Buffer) =>
    new Promise<IncomingMessage>((resolve, reject) => {
      const https = url.protocol === "https:";
      const sent = (https ? httpsRequest : httpRequest)(
        url,
        {
          method: "POST",
          headers,
          agent: https ? agents.https : agents.http,
          signal: AbortSignal.any([abort.signal, AbortSignal.timeout(sendTimeoutMs)]),
        },
        (response) => {
          response.resume();
          resolve(response);
        },
      );
      sent.on("error", reject);
      sent.end(body);
    });

  const send = async (job: DueJob, now: Date): Promise<Outcome> => {
    const subscription = open(job.subscription_id, job.sealed);
    if ("refused" in subscription) return { kind: "refused", detail: subscription.refused };
    const { url } = subscription;
    const body = encryptPush(Buffer.from(JSON.stringify(job.payload)), subscription.p256dh, subscription.auth);
    // RFC 8030 §5.2–5.4 and RFC 8292 §3.
    const headers: OutgoingHttpHeaders = {
      TTL: Math.max(1, Math.floor((new Date(job.expires_at).getTime() - now.getTime()) / 1000)),
      Urgency: job.urgency,
      Topic: job.topic,
      "Content-Encoding": "aes128gcm",
      "Content-Type": "application/octet-stream",
      "Content-Length": body.length,
      Authorization: authorization(url.origin),
    };
    let response: IncomingMessage;
    try {
      response = await post(url, headers, body);
    } catch (error) {
      if (abort.signal.aborted) throw error;
      return { kind: "retry" };
    }
    const status = response.statusCode ?? 0;
    if (status >= 200 && status < 300) return { kind: "sent" };
    if (status === 404 || status === 410) return { kind: "gone" };
    if (status === 429 || status >= 500) {
      const seconds = Number(response.headers["retry-after"]);
      return { kind: "retry", retryAfterMs: Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : undefined };
    }
    return { kind: "refused", detail: `the push service answered ${status}` };
  };

  /**
   * Rows past their item's end, deleted at most once a poll interval by the clock rather than on every
   * wake, and after the batch is sent: a push woken by a commit then waits for no statement but its own
   * claim (before the batch, the first push woken after each poll interval waited for the delete too).
   */
  let pruneDueAt = 0;
  const pruneExpired = async (now: Date): Promise<boolean> => {
    if (now.getTime() < pruneDueAt) return false;
    const { rows: deleted } = await statements.query<{ n: number }>({
      name: "delete_expired_push_jobs",
      text: `with gone as (delete from push_job where ctid in (select ctid from push_job where expires_at <= $1 limit ${expiredBatch}) returning 1)
         select count(*)::int as n from gone`,
      values: [now],
    });
    const more = (deleted[0]?.n ?? 0) === expiredBatch;
    if (!more) pruneDueAt = now.getTime() + deps.pollMs;
    return more;
  };

  const work = async (): Promise<boolean> => {
    const now = clock.now();
    const more = await inTransaction(statements, async (tx) => {
      const { rows: due } = await tx.query<DueJob>({
        name: "claim_push_jobs",
        text: `select j.subscription_id, j.topic, j.payload, j.urgency, j.expires_at, j.attempts, s.sealed
           from push_job j join push_subscription s on s.id = j.subscription_id
          where j.sent_at is null and j.next_attempt_at <= $1 and j.expires_at > $1
          order by j.next_attempt_at limit ${batchSize} for update of j skip locked`,
        values: [now],
      });
      const outcomes = await Promise.all(due.map((job) => send(job, now)));
      const done: DueJob[] = [];
      const sentTo: string[] = [];
      const gone: string[] = [];
      for (const [i, job] of due.entries()) {
        const outcome = outcomes[i] as Outcome;
        if (outcome.kind === "sent") {
          done.push(job);
          sentTo.push(job.subscription_id);
        } else if (outcome.kind === "gone") {
          gone.push(job.subscription_id);
          logger.info("push subscription gone; deleted", { subscription_id: job.subscription_id });
        } else if (outcome.kind === "retry") {
          const backoff = Math.min(maxRetryDelayMs, 1000 * 2 ** job.attempts);
          const next = new Date(now.getTime() + Math.max(backoff, outcome.retryAfterMs ?? 0));
          // Past the item's life the row stays until the expiry delete after the batch: nothing would show it anyway.
          await tx.query({
            name: "retry_push_job",
            text: "update push_job set attempts = attempts + 1, next_attempt_at = $1 where subscription_id = $2 and topic = $3",
            values: [next, job.subscription_id, job.topic],
          });
        } else {
          done.push(job);
          logger.warn("push refused; dropped", { subscription_id: job.subscription_id, detail: outcome.detail });
        }
      }
      // One statement per outcome for the whole batch: a burst's rows are settled in a few round trips.
      if (done.length > 0)
        await tx.query({
          name: "mark_push_jobs_sent",
          text: `update push_job set sent_at = $1
                  where (subscription_id, topic) in (select * from unnest($2::uuid[], $3::text[]))`,
          values: [now, done.map((job) => job.subscription_id), done.map((job) => job.topic)],
        });
      if (sentTo.length > 0)
        await tx.query({
          name: "mark_push_subscriptions_pushed",
          text: "update push_subscription set last_pushed_at = $1 where id = any($2::uuid[])",
          values: [now, sentTo],
        });
      if (gone.length > 0)
        await tx.query({
          name: "delete_gone_push_subscriptions",
          text: "delete from push_subscription where id = any($1::uuid[])",
          values: [gone],
        });
      return due.length === batchSize;
    });
    const prunedAll = !(await pruneExpired(now));
    return more || !prunedAll;
  };

  // A commit wakes one idle batch, not all: the others would only claim nothing, each a transaction on the
  // pool the pushes wait for. A full batch wakes another, so a burst still spreads over all of them.
  const busy = Array.from({ length: concurrentBatches }, () => false);
  let rotation = 0;
  const wakeOne = () => {
    const idle = busy.indexOf(false);
    loops[idle === -1 ? rotation++ % loops.length : idle]?.wake();
  };
  const loops: WakeableLoop[] = busy.map((_, i) =>
    startWakeableLoop({
      pollMs: deps.pollMs,
      work: async () => {
        busy[i] = true;
        try {
          const more = await work();
          if (more) wakeOne();
          return more;
        } finally {
          busy[i] = false;
        }
      },
      onError: (error) => {
        if (!abort.signal.aborted) logger.error("web push sender failed; will retry", { error });
      },
    }),
  );
  return {
    wake: wakeOne,
    async stop() {
      abort.abort();
      await Promise.all(loops.map((loop) => loop.stop()));
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

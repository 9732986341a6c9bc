import { type Clock, inHttpClientSpan, type Logger, startWakeableLoop, type WakeableLoop } from "@svc/platform";
import type pg from "pg";
import { openedSubscriptions } from "./opened-subscriptions.ts";
import { encryptPush } from "./push-encryption.ts";
import type { PushEndpointPolicy } from "./push-endpoint-policy.ts";
import type { PushJob } from "./push-jobs.ts";
import { pushAttempts } from "./push-metrics.ts";
import { type PushAnswer, pushTransport } from "./push-transport.ts";
import type { PushSealing } from "./subscription-sealing.ts";
import { vapidAuthorization } from "./vapid-authorization.ts";
import type { VapidKeys } from "./vapid-keys.ts";

/** Due pushes one claim leases and sends together. */
const batchSize = 50;
/**
 * Batches in flight at once, each over rows the others skip: a burst is not held to one batch's round trips
 * (claim, sends, outcomes) after another.
 */
const concurrentBatches = 4;
/** A push service that answers nothing in this time is retried like a 5xx. */
const sendTimeoutMs = 10_000;
/**
 * How long a claimed or handed-over push is the sender's alone: longer than a send may take and its outcome
 * be written, so no other sender takes it meanwhile, and a push whose sender crashed is due again after it.
 */
const leaseMs = 30_000;
/** Pushes handed over and not yet settled, at most: past it, triggers write their pushes due, for the batches. */
const handOverLimit = concurrentBatches * batchSize;
/** The retry after the n-th failure waits 1 s doubled n-1 times, at most this (a Retry-After may ask for more). */
const maxRetryDelayMs = 60_000;

/** Rows past their item's end that one statement deletes. */
const expiredBatch = 1000;

type Outcome =
  | { kind: "delivered" }
  /** RFC 8030 §7.3: the subscription is gone for good. */
  | { kind: "gone" }
  | { kind: "retry"; retryAfterMs?: number }
  | { kind: "refused"; detail: string }
  /** The sender is stopping: the push is given back, due at once for another replica or the next start. */
  | { kind: "released" };

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

/** The sender as those who write pushes see it. */
export interface WebPushHandOver {
  /**
   * When pushes written now should be due: at the end of a lease to this sender, to be handed to `send`
   * after their commit, or (its hands full) `now`, for its batches to take once woken.
   */
  dueAt(now: Date): Date;
  /** Sends pushes written leased to this sender by `dueAt`, and settles them. */
  send(jobs: PushJob[], now: Date): void;
  /** Pushes were committed due: a batch takes them. */
  wake(): void;
}

/**
 * Delivers the pushes `writePushJobs` and `enqueuePush` committed (RFC 8030, encrypted RFC 8291 aes128gcm by
 * `encryptPush`, under a VAPID JWT signed once per push service, sent by our own requests in `pushTransport`,
 * HTTP/2 where the push service takes it, so the endpoint policy is checked on the very URL sent to). A push is the
 * sender's for a lease of 30 s, the one statement that claims due rows (`for update skip locked`, so
 * replicas never take one push at once) or the trigger's own that wrote them for it: its outcome, written
 * after the send, ends the lease, and a crash before that leaves the push due when the lease ends, sent
 * again under the same Topic, which replaces the first at the push service. 404/410 deletes the
 * subscription; 429, 5xx and no answer retry with backoff while the item lives; other answers drop the push.
 * Each send is an HTTP client span under the trace the push was written in, and counted by its outcome.
 */
export function startWebPushSender(deps: WebPushSenderDependencies): WebPushHandOver & { stop(): Promise<void> } {
  const { statements, clock, logger } = deps;
  /** Set by `stop`: sends cut short give their pushes back, and nothing new is leased to this sender. */
  let stopping = false;
  const authorization = vapidAuthorization(deps.vapid, clock);
  const open = openedSubscriptions(deps.sealing, deps.policy);
  const transport = pushTransport({ timeoutMs: sendTimeoutMs });

  /** The push service's answer to one push (RFC 8030 §5, §7.3), with its status and HTTP version for the span. */
  const answered = async (
    url: URL,
    headers: Record<string, string | number>,
    body: Buffer,
  ): Promise<Outcome & { status?: number; protocol?: PushAnswer["protocol"] }> => {
    let answer: PushAnswer;
    try {
      answer = await transport.post(url, headers, body);
    } catch {
      return stopping ? { kind: "released" } : { kind: "retry" };
    }
    const { status, protocol } = answer;
    if (status >= 200 && status < 300) return { kind: "delivered", status, protocol };
    if (status === 404 || status === 410) return { kind: "gone", status, protocol };
    if (status === 429 || status >= 500) {
      const seconds = Number(answer.retryAfter);
      const retryAfterMs = Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : undefined;
      return { kind: "retry", retryAfterMs, status, protocol };
    }
    return { kind: "refused", detail: `the push service answered ${status}`, status, protocol };
  };

  const send = async (job: PushJob, now: Date): Promise<Outcome> => {
    const subscription = open(job.subscription_id, job.sealed);
    if ("refused" in subscription) return { kind: "refused", detail: subscription.refused };
    const { url } = subscription;
    const body = encryptPush(Buffer.from(JSON.stringify(job.payload)), subscription);
    // RFC 8030 §5.2–5.4 and RFC 8292 §3.
    const headers = {
      TTL: Math.max(1, Math.floor((new Date(job.expires_at).getTime() - now.getTime()) / 1000)),
      Urgency: job.urgency,
      Topic: job.topic,
      "Content-Encoding": "aes128gcm",
      "Content-Type": "application/octet-stream",
      "Content-Length": body.length,
      Authorization: authorization(url.origin),
    };
    // The span records the method, the answer's status, its HTTP version and the outcome, never the endpoint (a
    // capability).
    return inHttpClientSpan("POST web push", job.trace_context, async (span) => {
      const outcome = await answered(url, headers, body);
      span?.setAttribute("web_push.outcome", outcome.kind);
      if (outcome.status !== undefined) span?.setAttribute("http.response.status_code", outcome.status);
      if (outcome.protocol !== undefined) span?.setAttribute("network.protocol.version", outcome.protocol);
      return outcome;
    });
  };

  /** One statement setting `column` to `at` on every row of `jobs`. */
  const stampJobs = (name: string, column: "sent_at" | "next_attempt_at", jobs: PushJob[], at: Date) =>
    statements.query({
      name,
      text: `update push_job set ${column} = $1
              where (subscription_id, topic) in (select * from unnest($2::uuid[], $3::text[]))`,
      values: [at, jobs.map((job) => job.subscription_id), jobs.map((job) => job.topic)],
    });

  /** Sends leased pushes and writes their outcomes, each statement atomic by itself: any not written stays leased. */
  const settle = async (jobs: PushJob[], now: Date): Promise<void> => {
    const outcomes = await Promise.all(jobs.map((job) => send(job, now)));
    const done: PushJob[] = [];
    const sentTo: string[] = [];
    const gone: string[] = [];
    const released: PushJob[] = [];
    for (const [i, job] of jobs.entries()) {
      const outcome = outcomes[i] as Outcome;
      // A sender stopping mid-send gives the push back: no attempt ended.
      if (outcome.kind !== "released") pushAttempts.inc({ outcome: outcome.kind });
      if (outcome.kind === "delivered") {
        done.push(job);
        sentTo.push(job.subscription_id);
      } else if (outcome.kind === "gone") {
        gone.push(job.subscription_id);
        logger.info("push subscription gone; deleted", { subscription_id: job.subscription_id });
      } else if (outcome.kind === "retry") {
        const backoff = Math.min(maxRetryDelayMs, 1000 * 2 ** job.attempts);
        const next = new Date(now.getTime() + Math.max(backoff, outcome.retryAfterMs ?? 0));
        // Past the item's life the row stays until the expiry delete: nothing would show it anyway.
        await statements.query({
          name: "retry_push_job",
          text: "update push_job set attempts = attempts + 1, next_attempt_at = $1 where subscription_id = $2 and topic = $3",
          values: [next, job.subscription_id, job.topic],
        });
      } else if (outcome.kind === "released") {
        released.push(job);
      } else {
        done.push(job);
        logger.warn("push refused; dropped", { subscription_id: job.subscription_id, detail: outcome.detail });
      }
    }
    // One statement per outcome for the whole batch: a burst's rows are settled in a few round trips.
    if (done.length > 0) await stampJobs("mark_push_jobs_sent", "sent_at", done, now);
    if (sentTo.length > 0)
      await statements.query({
        name: "mark_push_subscriptions_pushed",
        text: "update push_subscription set last_pushed_at = $1 where id = any($2::uuid[])",
        values: [now, sentTo],
      });
    if (gone.length > 0)
      await statements.query({
        name: "delete_gone_push_subscriptions",
        text: "delete from push_subscription where id = any($1::uuid[])",
        values: [gone],
      });
    if (released.length > 0) await stampJobs("release_push_jobs", "next_attempt_at", released, now);
  };

  /**
   * Rows past their item's end, deleted at most once a poll interval by the clock rather than on every
   * wake, and after the batch is sent: a push woken by a commit then waits for no statement but its own
   * claim.
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

  const leaseEnd = (now: Date) => new Date(now.getTime() + leaseMs);

  const work = async (): Promise<boolean> => {
    const now = clock.now();
    // One autocommitted statement: no transaction is held open through the sends.
    const { rows: due } = await statements.query<PushJob>({
      name: "claim_push_jobs",
      text: `with due as materialized (
               select subscription_id, topic from push_job
                where sent_at is null and next_attempt_at <= $1 and expires_at > $1
                order by next_attempt_at limit ${batchSize} for update skip locked)
         update push_job j set next_attempt_at = $2
           from due, push_subscription s
          where j.subscription_id = due.subscription_id and j.topic = due.topic and s.id = j.subscription_id
         returning j.subscription_id, j.topic, j.payload, j.urgency, j.expires_at, j.attempts, j.trace_context, s.sealed`,
      values: [now, leaseEnd(now)],
    });
    await settle(due, now);
    const prunedAll = !(await pruneExpired(now));
    return due.length === batchSize || !prunedAll;
  };

  // A commit wakes one idle batch, not all: the others would only claim nothing, each a statement on the
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
        if (!stopping) logger.error("web push sender failed; will retry", { error });
      },
    }),
  );

  // Pushes handed over by the trigger that wrote them, skipping the wake and the claim's round trip.
  const handedOver = new Set<Promise<void>>();
  let handedOverJobs = 0;
  return {
    dueAt: (now) => (handedOverJobs < handOverLimit && !stopping ? leaseEnd(now) : now),
    send(jobs, now) {
      if (jobs.length === 0) return;
      handedOverJobs += jobs.length;
      const settled = settle(jobs, now)
        .catch((error: unknown) => {
          logger.error("web push outcome not written; the push is due again after its lease", { error });
        })
        .finally(() => {
          handedOverJobs -= jobs.length;
          handedOver.delete(settled);
        });
      handedOver.add(settled);
    },
    wake: wakeOne,
    async stop() {
      stopping = true;
      transport.close();
      await Promise.all([...loops.map((loop) => loop.stop()), ...handedOver]);
    },
  };
}

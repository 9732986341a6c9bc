import { type Clock, inHttpClientSpan, type Logger, type Queryable, startWakeableLoop } from "@svc/platform";
import { deliveryAttempts } from "./delivery-metrics.ts";
import {
  type AttemptResult,
  type ClaimedDelivery,
  type ClaimTerms,
  claimDueDeliveries,
  recordAttemptResults,
  releaseClaims,
} from "./delivery-store.ts";
import type { EndpointKeys } from "./endpoint-keys.ts";
import type { HttpSender, SendOutcome } from "./http-sender.ts";
import { nextAttemptDelay, parseRetryAfter, type RetryPolicy } from "./retry-schedule.ts";
import { webhookHeaders } from "./signature.ts";

export interface DeliveryWorkerOptions {
  /** This dispatcher process: its claims name it (dispatcher-instances.ts). */
  instanceId: string;
  /** The service's statement pool: claims and results are prepared statements on the hot path. */
  statements: Queryable;
  clock: Clock;
  logger: Logger;
  sender: HttpSender;
  keys: EndpointKeys;
  retry: RetryPolicy;
  timeoutMs: number;
  perEndpointConcurrency: number;
  globalConcurrency: number;
  /** Real time between looks for due work when nothing woke the worker; what is due comes from `clock`. */
  pollMs: number;
  autoDisableAfterMs: number;
}

export interface DeliveryWorker {
  /** What the worker has room for, for a statement that claims new deliveries on its behalf. */
  claimTerms(): ClaimTerms;
  /** Deliveries claimed on the worker's behalf (under `claimTerms()`): queued for their endpoint's slots. */
  take(claimed: readonly ClaimedDelivery[]): void;
  /** Deliveries are due (new, replayed, or an endpoint enabled): look now instead of at the next poll. */
  wake(): void;
  /** The endpoint was disabled or removed: its claimed deliveries not yet started are given back. */
  forget(endpointId: string): Promise<void>;
  /** Stops claiming, gives back what it claimed but did not start, lets the attempts in flight end and writes their results. */
  stop(): Promise<void>;
}

/**
 * Each endpoint may have this many rounds of attempts claimed ahead of the ones in flight, so a busy
 * endpoint costs one claim per few rounds rather than one per attempt.
 */
const roundsAhead = 16;
/** Room for writing an attempt's result after its deadline before another worker may take it over. */
const leaseMarginMs = 5000;

/**
 * Claims due deliveries from Postgres and sends them with bounded concurrency: at most
 * `perEndpointConcurrency` attempts in flight to one endpoint, so a slow endpoint cannot take every
 * slot, and `globalConcurrency` in all. Claimed deliveries wait in a queue per endpoint; each claim is
 * a lease that covers the attempts queued before it, so if this process dies the delivery comes due
 * again when its lease ends, and one whose lease would end before its attempt could is left to the
 * next claim. Results are written in batches.
 */
export function startDeliveryWorker(options: DeliveryWorkerOptions): DeliveryWorker {
  const { statements, clock, logger } = options;
  const perEndpointHeld = options.perEndpointConcurrency * roundsAhead;
  /** Claimed and waiting for a free slot of their endpoint, oldest first. */
  const waiting = new Map<string, ClaimedDelivery[]>();
  const inFlight = new Map<string, number>();
  const attempts = new Set<Promise<void>>();
  let waitingCount = 0;
  let running = true;
  const writer = startResultWriter(options, (endpointId) => forget(endpointId));

  const release = async (deliveries: readonly ClaimedDelivery[]) => {
    if (deliveries.length === 0) return;
    await releaseClaims(statements, deliveries, clock.now()).catch((error: unknown) =>
      logger.warn("could not give back claimed deliveries; their leases will bring them back", {
        error,
        deliveries: deliveries.length,
      }),
    );
  };

  const forget = async (endpointId: string) => {
    const queue = waiting.get(endpointId) ?? [];
    waiting.delete(endpointId);
    waitingCount -= queue.length;
    await release(queue);
  };

  const wake = () => loop.wake();

  const claimTerms = (): ClaimTerms => {
    const holds = new Map<string, number>();
    for (const [endpointId, queue] of waiting) holds.set(endpointId, queue.length);
    for (const [endpointId, count] of inFlight) holds.set(endpointId, (holds.get(endpointId) ?? 0) + count);
    return {
      now: clock.now(),
      instanceId: options.instanceId,
      perEndpoint: perEndpointHeld,
      holds,
      concurrency: options.perEndpointConcurrency,
      timeoutMs: options.timeoutMs,
      marginMs: leaseMarginMs,
    };
  };

  const take = (claimed: readonly ClaimedDelivery[]) => {
    for (const delivery of claimed) {
      const queue = waiting.get(delivery.endpointId) ?? [];
      queue.push(delivery);
      waiting.set(delivery.endpointId, queue);
    }
    waitingCount += claimed.length;
    startAttempts();
  };

  const claim = async () => {
    const limit = options.globalConcurrency * roundsAhead - waitingCount - attempts.size;
    if (limit <= 0) return;
    take(await claimDueDeliveries(statements, { ...claimTerms(), limit }));
  };

  /**
   * Fills free slots from the waiting deliveries, endpoint by endpoint. Endpoints served go to the
   * back of the line, so that when the global cap binds every endpoint still gets its turn.
   */
  const startAttempts = () => {
    const served: [string, ClaimedDelivery[]][] = [];
    for (const [endpointId, queue] of [...waiting]) {
      let sent = false;
      while (
        (inFlight.get(endpointId) ?? 0) < options.perEndpointConcurrency &&
        attempts.size < options.globalConcurrency
      ) {
        const delivery = queue.shift();
        if (!delivery) break;
        waitingCount -= 1;
        // Too little lease left to finish: another claim may already own it, or will.
        if (clock.now().getTime() + options.timeoutMs > delivery.leaseUntil.getTime()) continue;
        send(delivery);
        sent = true;
      }
      if (queue.length === 0) waiting.delete(endpointId);
      else if (sent) served.push([endpointId, queue]);
    }
    for (const [endpointId, queue] of served) {
      waiting.delete(endpointId);
      waiting.set(endpointId, queue);
    }
  };

  const send = (delivery: ClaimedDelivery) => {
    inFlight.set(delivery.endpointId, (inFlight.get(delivery.endpointId) ?? 0) + 1);
    const attempt = attemptDelivery(delivery)
      .then((result) => {
        if (result) writer.add(result);
      })
      .finally(() => {
        const left = (inFlight.get(delivery.endpointId) ?? 1) - 1;
        if (left === 0) inFlight.delete(delivery.endpointId);
        else inFlight.set(delivery.endpointId, left);
        attempts.delete(attempt);
        if (running) startAttempts();
        // Claim more once half of this endpoint's rounds ahead are used up, well before its queue runs dry.
        if ((waiting.get(delivery.endpointId)?.length ?? 0) < perEndpointHeld / 2) wake();
      });
    attempts.add(attempt);
  };

  const attemptDelivery = async (delivery: ClaimedDelivery): Promise<AttemptResult | undefined> => {
    const startedAt = clock.now();
    let headers: Record<string, string>;
    try {
      headers = webhookHeaders({
        webhookId: delivery.messageId,
        at: startedAt,
        body: delivery.body,
        keys: options.keys.keysFor(delivery, startedAt),
      });
    } catch (error) {
      // Our fault (a wrong WEBHOOK_DISPATCH_SECRET_KEY), not the endpoint's: no attempt is recorded
      // against it, and the lease brings the delivery back once the key is fixed.
      logger.error("cannot open the endpoint's signing secret", { endpointId: delivery.endpointId, error });
      return undefined;
    }
    const outcome = await inHttpClientSpan("POST webhook", delivery.traceContext, async (span) => {
      const sent = await options.sender.send({
        url: delivery.url,
        headers,
        body: delivery.body,
        timeoutMs: options.timeoutMs,
      });
      if (sent.statusCode !== undefined) span?.setAttribute("http.response.status_code", sent.statusCode);
      span?.setAttribute("webhook.attempt.outcome", sent.kind);
      deliveryAttempts.inc({ outcome: sent.kind });
      return sent;
    });
    return resultOf(delivery, outcome, { startedAt, endedAt: clock.now() }, options.retry);
  };

  const loop = startWakeableLoop({
    pollMs: options.pollMs,
    work: async () => {
      await claim();
      return false;
    },
    onError: (error) => logger.warn("could not claim due deliveries; will retry", { error }),
  });

  return {
    claimTerms,
    take,
    wake,
    forget,
    async stop() {
      running = false;
      await loop.stop();
      const unstarted = [...waiting.values()].flat();
      waiting.clear();
      waitingCount = 0;
      await release(unstarted);
      await Promise.allSettled([...attempts]);
      await writer.stop();
    },
  };
}

/** The decision after one attempt: delivered, retried later, or failed for good. */
function resultOf(
  delivery: ClaimedDelivery,
  outcome: SendOutcome,
  times: { startedAt: Date; endedAt: Date },
  retry: RetryPolicy,
): AttemptResult {
  const at = times.endedAt;
  const base = {
    deliveryId: delivery.deliveryId,
    endpointId: delivery.endpointId,
    attempts: delivery.attempts,
    scheduleStep: delivery.scheduleStep,
    startedAt: times.startedAt,
    at,
  };
  if (outcome.kind === "delivered") {
    return {
      ...base,
      succeeded: true,
      statusCode: outcome.statusCode,
      error: null,
      status: "delivered",
      nextAttemptAt: null,
    };
  }
  const delay = nextAttemptDelay(retry, delivery.scheduleStep, {
    retryAfterMs: parseRetryAfter(outcome.retryAfter, at),
  });
  return {
    ...base,
    succeeded: false,
    statusCode: outcome.statusCode ?? null,
    error: outcome.error,
    status: delay === null ? "failed" : "pending",
    nextAttemptAt: delay === null ? null : new Date(at.getTime() + delay),
  };
}

/**
 * Results are written in batches: one statement for everything that ended while the previous
 * write ran. A failed write is retried; a result lost with the process is covered by the lease.
 */
function startResultWriter(options: DeliveryWorkerOptions, onDisabled: (endpointId: string) => Promise<void>) {
  const { statements, clock, logger } = options;
  let queue: AttemptResult[] = [];
  let writing: Promise<void> | undefined;
  let stopping = false;

  const drain = async () => {
    while (queue.length > 0) {
      const batch = queue;
      queue = [];
      try {
        const disabled = await recordAttemptResults(statements, batch, {
          now: clock.now(),
          autoDisableAfterMs: options.autoDisableAfterMs,
        });
        for (const endpointId of disabled) {
          logger.warn("endpoint disabled: every attempt failed for too long", {
            endpointId,
            afterMs: options.autoDisableAfterMs,
          });
          await onDisabled(endpointId);
        }
      } catch (error) {
        if (stopping) {
          logger.warn("could not record attempt results while stopping; their leases will bring them back", {
            error,
            results: batch.length,
          });
          continue;
        }
        logger.warn("could not record attempt results; will retry", { error });
        queue = [...batch, ...queue];
        await new Promise((resolve) => setTimeout(resolve, options.pollMs));
      }
    }
    writing = undefined;
  };

  return {
    add(result: AttemptResult) {
      queue.push(result);
      writing ??= drain();
    },
    async stop() {
      stopping = true;
      await writing;
    },
  };
}

import type { MikroORM } from "@mikro-orm/postgresql";
import {
  type Clock,
  deleteDue,
  type Logger,
  type PeriodicJob,
  type RetentionRule,
  startPeriodicJob,
} from "@svc/platform";

/** How often, in real time, the retention runs: a due row waits at most this long past its retention. */
const retentionEveryMs = 10 * 60_000;

/**
 * Messages that arrived more than `retentionMs` before `now`, on `messages_by_received`. Their
 * deliveries go with them (on delete cascade, on their unique (message_id, endpoint_id) index). By then every retry
 * schedule has long ended (the default's attempts span about 28 hours), and the event stream keeps an
 * event far less long (`SVC_EVENT_STREAM_MAX_AGE`, 7 days), so a redelivery can never store a deleted
 * message again.
 */
export const messageRetentionRule = (now: Date, retentionMs: number): RetentionRule => ({
  table: "messages",
  column: "received_at",
  before: new Date(now.getTime() - retentionMs),
});

export function pruneMessages(orm: MikroORM, clock: Clock, retentionMs: number, batchSize: number): Promise<number> {
  return deleteDue(orm, messageRetentionRule(clock.now(), retentionMs), batchSize);
}

/** Runs the retention on a timer in every replica; batches skip what another replica holds. */
export function startMessageRetention(options: {
  orm: MikroORM;
  clock: Clock;
  retentionMs: number;
  batchSize: number;
  logger: Logger;
}): PeriodicJob {
  return startPeriodicJob({
    everyMs: retentionEveryMs,
    logger: options.logger,
    steps: [
      {
        name: "message retention",
        run: () => pruneMessages(options.orm, options.clock, options.retentionMs, options.batchSize),
      },
    ],
  });
}

import type { MikroORM } from "@mikro-orm/postgresql";
import { type Clock, deleteDue, type RetentionRule } from "@svc/platform";

export interface GateRetention {
  /** After a session's expiry. */
  sessionMs: number;
  /** After a request's end (`ended_at`). */
  requestMs: number;
  batchSize: number;
}

/**
 * What the gate keeps, and for how long (see the README, "Retention"). The spec promises nothing about
 * a request past its five minutes and its status read; the longest reads of a request are the
 * Recent Presence window (10 minutes after a ceremony) and a pre-check's parent, both long within
 * the default 30 days. A pending request is never deleted: it ends (at the latest by the expiry sweep)
 * first. A session is consumed or refused long before a day after its five minutes.
 */
export function gateRetentionRules(now: Date, retention: GateRetention): Record<string, RetentionRule> {
  return {
    sessions: {
      table: "sessions",
      column: "expires_at",
      before: new Date(now.getTime() - retention.sessionMs),
    },
    requests: {
      table: "requests",
      column: "ended_at",
      before: new Date(now.getTime() - retention.requestMs),
    },
  };
}

/** Deletes every row past its retention, in batches (`sessions_by_expiry`, `requests_by_end`). */
export async function pruneGate(
  orm: MikroORM,
  clock: Clock,
  retention: GateRetention,
): Promise<Record<string, number>> {
  const deleted: Record<string, number> = {};
  for (const [name, rule] of Object.entries(gateRetentionRules(clock.now(), retention)))
    deleted[name] = await deleteDue(orm, rule, retention.batchSize);
  return deleted;
}

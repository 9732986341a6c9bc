import { type Clock, counter, gauge, measureOldestAge, type Queryable } from "@svc/platform";

export const deliveryAttempts = counter(
  "webhook_delivery_attempts_total",
  "Webhook and callback delivery attempts, by outcome (delivered, or failed: an error, a timeout or a non-2xx answer)",
  ["outcome"],
);

const oldestDue = gauge(
  "webhook_oldest_due_delivery_age_seconds",
  "How long the oldest pending delivery has been due without being claimed (0 when none is due)",
);

/** Keeps the oldest due delivery's age, read at every scrape; returns what stops it. */
export const measureOldestDueDelivery = (statements: Queryable, clock: Clock): (() => void) =>
  measureOldestAge(oldestDue, clock, async (now) => {
    const { rows } = await statements.query<{ oldest: Date | null }>(
      `select min(next_attempt_at) as oldest from deliveries where status = 'pending' and next_attempt_at <= $1`,
      [now],
    );
    return rows[0]?.oldest;
  });

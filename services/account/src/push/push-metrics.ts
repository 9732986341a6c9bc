import { type Clock, counter, gauge, measureOldestAge, type Queryable } from "@svc/platform";

export const pushAttempts = counter(
  "account_web_push_attempts_total",
  "Web pushes sent to push services, by outcome (delivered: 2xx; gone: 404/410, the subscription deleted; retry: 429, 5xx or no answer; refused: any other answer, or an endpoint the policy refuses, the push dropped)",
  ["outcome"],
);

const oldestDue = gauge(
  "account_web_push_oldest_due_age_seconds",
  "How long the oldest web push still in its item's life has been due without a sender taking it (0 when none is due)",
);

/** Keeps the oldest due push's age, read at every scrape (the claim's own index); returns what stops it. */
export const measureOldestDuePush = (statements: Queryable, clock: Clock): (() => void) =>
  measureOldestAge(oldestDue, clock, async (now) => {
    const { rows } = await statements.query<{ oldest: Date | null }>(
      "select min(next_attempt_at) as oldest from push_job where sent_at is null and next_attempt_at <= $1 and expires_at > $1",
      [now],
    );
    return rows[0]?.oldest;
  });

import type { MikroORM } from "@mikro-orm/postgresql";
import {
  type Clock,
  committedEvent,
  type EventBus,
  enqueueEvent,
  type OutboxEvent,
  type OutboxRelay,
  underItemTrace,
} from "@svc/platform";
import {
  type FailureReason,
  humanVerified,
  type LinkRefusal,
  type OutboxMessage,
  unavailableExpired,
  unavailableFailed,
} from "../events/gate-events.ts";
import { confirmationHoldMs } from "./lifetimes.ts";
import { eventSubject, type RequestRow } from "./request-row.ts";
import { publishRequestsChanged } from "./request-watch.ts";

type Em = Parameters<Parameters<MikroORM["em"]["transactional"]>[0]>[0];

export interface Completion {
  humanId: string;
  trusted: boolean;
  firstTime: boolean;
  handle: string | undefined;
  ageVerdict: string | null;
  token: string;
  tokenExpiresAt: Date;
}

export interface Failure {
  reason: FailureReason;
  errorMessage: string;
  refusal?: LinkRefusal;
}

/**
 * The request state table (spec "States and transitions"). Each terminal move is one conditional
 * update on a pending row in the same transaction as its event, so a request yields at most one
 * terminal event however many moves race for it:
 *   pending → completed (gate.human_verified), pending → failed (gate.unavailable with failed_at),
 *   pending → expired when the window passes (no event if nobody opened it; gate.unavailable with
 *   expired_at when it was opened, or when it is opened afterwards), pending → expired by revoke.
 * A confirmation that began inside the window holds it (`confirming_until`, at most
 * `confirmationHoldMs` past its start): the request may still complete or fail, and neither the sweep
 * nor a late open expires it meanwhile, so a person who confirmed in time never leaves an
 * `account.secured` without its `gate.human_verified`. A confirmation that dies lets it expire then.
 * Every move out of pending wakes, after the commit, its status long-polls and the inbox of the person it
 * names (`request-watch.ts`).
 */
/** A pending request may still move at the instant bound to both `?`: inside its window, or held by a confirmation under way. */
const stillOpen = "status = 'pending' and (expires_at > ? or confirming_until > ?)";
/** The complement for pending requests: the window passed and no confirmation holds it. */
const timeUp = "status = 'pending' and expires_at <= ? and (confirming_until is null or confirming_until <= ?)";

export class RequestLifecycle {
  readonly #orm: MikroORM;
  readonly #clock: Clock;
  readonly #bus: EventBus;
  readonly #outbox: OutboxRelay;

  constructor(options: { orm: MikroORM; clock: Clock; bus: EventBus; outbox: OutboxRelay }) {
    this.#orm = options.orm;
    this.#clock = options.clock;
    this.#bus = options.bus;
    this.#outbox = options.outbox;
  }

  async load(requestId: string): Promise<RequestRow | undefined> {
    const rows = await this.#orm.em.fork().execute<RequestRow[]>(`select * from requests where id = ?`, [requestId]);
    return rows[0];
  }

  /** Marks a pending request opened; false when it is no longer pending inside its window. */
  async markOpened(requestId: string): Promise<boolean> {
    const now = this.#clock.now();
    const rows = await this.#orm.em
      .fork()
      .execute<{ id: string }[]>(
        `update requests set opened_at = coalesce(opened_at, ?) where id = ? and status = 'pending' and expires_at > ? returning id`,
        [now, requestId, now],
      );
    return rows.length > 0;
  }

  /** A confirmation begins: holds the window for it; false when the request is no longer pending inside its window. */
  async holdForConfirmation(requestId: string): Promise<boolean> {
    const now = this.#clock.now();
    const rows = await this.#orm.em
      .fork()
      .execute<{ id: string }[]>(
        `update requests set confirming_until = ? where id = ? and status = 'pending' and expires_at > ? returning id`,
        [new Date(now.getTime() + confirmationHoldMs), requestId, now],
      );
    return rows.length > 0;
  }

  /**
   * Remembers that this request's confirmation created the account link (account.secured went out),
   * so a confirmation retried after a failure further on still reports `first_time: true`.
   */
  async recordLinkCreated(requestId: string): Promise<void> {
    await this.#orm.em
      .fork()
      .execute(`update requests set first_time = true where id = ? and status = 'pending'`, [requestId]);
  }

  async complete(requestId: string, completion: Completion): Promise<RequestRow | undefined> {
    const now = this.#clock.now();
    return this.#transition(
      `update requests set status = 'completed', ended_at = ?, ended_by = 'confirmed', human_id = ?, trusted = ?, first_time = coalesce(first_time, ?), age_verdict = ?,
         token = ?, token_expires_at = ?, event_sent = true, partner_ref_sealed = null
       where id = ? and ${stillOpen} returning *`,
      [
        now,
        completion.humanId,
        completion.trusted,
        completion.firstTime,
        completion.ageVerdict,
        completion.token,
        completion.tokenExpiresAt,
        requestId,
        now,
        now,
      ],
      (row) => [
        humanVerified(eventSubject(row), {
          verifiedAt: now,
          trusted: completion.trusted,
          firstTime: row.first_time === true,
          handle: completion.handle,
        }),
      ],
    );
  }

  /** pending → failed; the status record's reason is the link refusal's code, otherwise `unavailable`. */
  async fail(requestId: string, failure: Failure): Promise<RequestRow | undefined> {
    const now = this.#clock.now();
    return this.#transition(
      `update requests set status = 'failed', ended_at = ?, ended_by = ?, failure_reason = ?, event_sent = true, partner_ref_sealed = null
       where id = ? and ${stillOpen} returning *`,
      [now, failure.reason, failure.refusal?.failureCode ?? "unavailable", requestId, now, now],
      (row) => [unavailableFailed(eventSubject(row), { failedAt: now, ...failure })],
    );
  }

  /**
   * The person reached a request after its window: it expires (if the sweep has not done so yet) and,
   * unless an event already went out for it, sends gate.unavailable with `expired_at`. Revoked and
   * superseded requests were ended by the partner, not by time, and send nothing.
   */
  async expireOnLateOpen(requestId: string): Promise<RequestRow | undefined> {
    const now = this.#clock.now();
    return this.#transition(
      `update requests set status = 'expired', ended_at = coalesce(ended_at, expires_at), ended_by = coalesce(ended_by, 'window'), event_sent = true, partner_ref_sealed = null
       where id = ? and not event_sent
         and ((${timeUp}) or (status = 'expired' and ended_by = 'window'))
       returning *`,
      [requestId, now, now],
      (row) => [unavailableExpired(eventSubject(row), new Date(row.expires_at), now)],
    );
  }

  /**
   * The expiry sweep: pending requests past their window become expired. One nobody opened sends no
   * event; one that was opened but not finished sends gate.unavailable with `expired_at`.
   */
  async sweep(limit: number): Promise<number> {
    const now = this.#clock.now();
    let expired: RequestRow[] = [];
    const enqueued: OutboxEvent[] = [];
    await this.#orm.em.fork().transactional(async (em) => {
      const rows = await em.execute<RequestRow[]>(
        `with due as (select id from requests where ${timeUp} order by expires_at limit ? for update skip locked)
         update requests r set status = 'expired', ended_at = r.expires_at, ended_by = 'window', event_sent = (r.opened_at is not null), partner_ref_sealed = null
         from due where r.id = due.id returning r.*`,
        [now, now, limit],
      );
      expired = rows;
      for (const row of rows)
        if (row.opened_at !== null)
          await underItemTrace(row.trace_context, "gate resolve expired", async () =>
            enqueued.push(this.#enqueue(em, unavailableExpired(eventSubject(row), new Date(row.expires_at), now))),
          );
    });
    this.#outbox.publishCommitted(enqueued.map(committedEvent));
    publishRequestsChanged(this.#bus, expired);
    return expired.length;
  }

  async #transition(
    sql: string,
    params: unknown[],
    events: (row: RequestRow) => OutboxMessage[],
  ): Promise<RequestRow | undefined> {
    const enqueued: OutboxEvent[] = [];
    const row = await this.#orm.em.fork().transactional(async (em) => {
      const rows = await em.execute<RequestRow[]>(sql, params);
      if (rows[0]) for (const event of events(rows[0])) enqueued.push(this.#enqueue(em, event));
      return rows[0];
    });
    if (row) {
      this.#outbox.publishCommitted(enqueued.map(committedEvent));
      publishRequestsChanged(this.#bus, [row]);
    }
    return row;
  }

  #enqueue(em: Em, event: OutboxMessage): OutboxEvent {
    return enqueueEvent(em, this.#clock, event, this.#bus);
  }
}

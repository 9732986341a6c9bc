import { inTransaction, type Logger, type Queryable } from "@svc/platform";
import type pg from "pg";
import type { CallbackEndpoints } from "../callbacks/callback-endpoints.ts";
import { type IncomingMessage, storeMessages } from "../messages/message-store.ts";
import type { DeliveryWorker } from "./delivery-worker.ts";
import { decodeEvent } from "./event-decoding.ts";

/** An event of a type this build does not know, as it came off the stream. */
export interface ParkedEvent {
  dedupKey: string;
  subject: string;
  envelope: Uint8Array;
}

/** Parked events looked at per transaction when they are released. */
const releaseBatch = 256;

/**
 * Keeps events of a type this build does not know, byte for byte, so that they can be acknowledged
 * instead of being offered again until a newer build runs (each would hold a place among the
 * consumer's pending messages meanwhile). An event parked before is parked once.
 */
export async function parkEvents(db: Queryable, events: readonly ParkedEvent[], now: Date): Promise<void> {
  await db.query({
    name: "park_events",
    text: `insert into parked_events (dedup_key, subject, envelope, parked_at)
     select t.dedup_key, t.subject, t.envelope, $4 from unnest($1::text[], $2::text[], $3::bytea[]) as t(dedup_key, subject, envelope)
     on conflict (dedup_key) do nothing`,
    values: [
      events.map((e) => e.dedupKey),
      events.map((e) => e.subject),
      events.map((e) => Buffer.from(e.envelope)),
      now,
    ],
  });
}

/**
 * Run at start: parked events whose type this build knows are stored and fanned out exactly as if
 * they had just arrived (under their own dedup keys, so one already stored adds nothing) and removed
 * from the parked ones, in the same transaction; one that breaks the contract is dropped with an
 * error, as the consumer would drop it. What stays parked is counted in a warning.
 */
export async function releaseParkedEvents(options: {
  statements: pg.Pool;
  logger: Logger;
  worker: Pick<DeliveryWorker, "claimTerms" | "wake">;
  callbacks: CallbackEndpoints;
  firstAttemptDelayMs: number;
}): Promise<void> {
  const { statements, logger, worker, callbacks } = options;
  let after = "";
  let released = 0;
  for (;;) {
    const batch = await inTransaction(statements, async (client) => {
      // Skip locked: a replica starting at the same time releases the others.
      const { rows } = await client.query<{ dedup_key: string; subject: string; envelope: Buffer }>(
        `select dedup_key, subject, envelope from parked_events where dedup_key > $1 order by dedup_key limit $2 for update skip locked`,
        [after, releaseBatch],
      );
      const known: IncomingMessage[] = [];
      const settled: string[] = [];
      const decodedRows = rows.map((row) => ({ row, decoded: decodeEvent(row.envelope) }));
      const unreachable = await callbacks.refresh(
        decodedRows.flatMap(({ decoded }) => (decoded.kind === "message" ? [decoded.message] : [])),
        worker.claimTerms().now,
      );
      for (const { row, decoded } of decodedRows) {
        if (decoded.kind === "unknown_type") continue;
        if (
          decoded.kind === "message" &&
          decoded.message.resolvedCard &&
          unreachable.has(decoded.message.resolvedCard.agentId)
        )
          // Its agent's callback target is unknown for now: it stays parked until the next start.
          continue;
        if (decoded.kind === "invalid") {
          logger.error("parked event breaks the event contract; it cannot be delivered", {
            subject: row.subject,
            dedupKey: row.dedup_key,
            reason: decoded.reason,
          });
        } else {
          known.push(decoded.message);
        }
        settled.push(row.dedup_key);
      }
      const terms = worker.claimTerms();
      // Nothing is claimed here: the worker is woken for the new deliveries once they are committed.
      await storeMessages(client, known, {
        firstAttemptAt: new Date(terms.now.getTime() + options.firstAttemptDelayMs),
        claim: { ...terms, perEndpoint: 0 },
      });
      if (settled.length > 0)
        await client.query(`delete from parked_events where dedup_key = any($1::text[])`, [settled]);
      return { looked: rows.length, last: rows.at(-1)?.dedup_key, released: known.length };
    });
    released += batch.released;
    if (batch.looked < releaseBatch || batch.last === undefined) break;
    after = batch.last;
  }
  if (released > 0) {
    logger.info("parked events of types this build knows were handed on for delivery", { events: released });
    worker.wake();
  }
  const { rows: parked } = await statements.query<{ subject: string; events: number }>(
    `select subject, count(*)::int as events from parked_events group by subject order by subject`,
  );
  if (parked.length > 0) {
    logger.warn(
      "events of types this build does not know are parked; a build that knows them delivers them when it starts",
      {
        events: parked.reduce((sum, row) => sum + row.events, 0),
        bySubject: Object.fromEntries(parked.map((row) => [row.subject, row.events])),
      },
    );
  }
}

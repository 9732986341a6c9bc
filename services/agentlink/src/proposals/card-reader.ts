import { isUuid, NaturalBatcher, type Queryable } from "@svc/platform";
import { refuse } from "../refusal.ts";
import type { Card } from "./card.entity.ts";

/** What check-status reads of a card (`checkStatusAnswer`, `cardStateAt`). */
export type CardStatusFields = Pick<
  Card,
  "id" | "status" | "ttlAt" | "resolvedAt" | "ceremonyId" | "resolutionJwt" | "verdict"
>;

export interface Asked {
  agentId: string;
  requestId: string;
}

interface Row {
  ordinal: number;
  id: string;
  status: Card["status"];
  ttl_at: Date;
  resolved_at: Date | null;
  ceremony_id: string | null;
  resolution_jwt: string | null;
  verdict: Card["verdict"];
}

/** Reads per statement at most; a larger burst waits for the next one. */
const maxBatch = 256;

const statement = {
  name: "read_card_statuses",
  text: `select asked.ordinal, card.id, card.status, card.ttl_at, card.resolved_at, card.ceremony_id,
                card.resolution_jwt, card.verdict
           from unnest($1::uuid[], $2::uuid[]) with ordinality as asked(agent_id, request_id, ordinal)
           join card on card.agent_id = asked.agent_id and card.request_id = asked.request_id`,
};

/** Why a read finds no card; CheckStatus's NotFound and CheckStatuses' `not_found` say the same. */
export const noCardMessage = "no proposal with that request_id for this agent";

/** Reads one CheckStatuses call may carry. */
const maxReadsPerCall = 1000;

/**
 * Check-status reads, many in one statement: a burst of long-polls (thousands of agents asking at
 * once) costs a few round trips instead of one query each. Single reads are coalesced under load
 * ({@link NaturalBatcher}); a read alone leaves at once, so a quiet service waits for no one. The
 * gateway's batched reads (CheckStatuses) go straight to the statement.
 */
export class CardReader {
  readonly #db: Queryable;
  readonly #batcher: NaturalBatcher<Asked, CardStatusFields | undefined>;

  constructor(db: Queryable) {
    this.#db = db;
    this.#batcher = new NaturalBatcher({ maxBatch, gatherTurn: true, run: (batch) => this.#read(batch) });
  }

  /** The calling agent's card by its request_id; another agent's or none: not_found. */
  async agentCard(agentId: string, requestId: string): Promise<CardStatusFields> {
    const card = isUuid(requestId) ? await this.#batcher.submit({ agentId, requestId }) : undefined;
    if (!card) throw refuse("not_found", noCardMessage);
    return card;
  }

  /** Each agent's card by its request_id, in order; undefined where there is none. */
  async agentCards(reads: readonly Asked[]): Promise<(CardStatusFields | undefined)[]> {
    if (reads.length > maxReadsPerCall) throw refuse("invalid_argument", `at most ${maxReadsPerCall} reads per call`);
    const asked = reads.filter((read) => isUuid(read.requestId));
    const found: (CardStatusFields | undefined)[] = [];
    for (let first = 0; first < asked.length; first += maxBatch)
      found.push(...(await this.#read(asked.slice(first, first + maxBatch))));
    const byRead = new Map(asked.map((read, index) => [read, found[index]]));
    return reads.map((read) => byRead.get(read));
  }

  async #read(batch: readonly Asked[]): Promise<(CardStatusFields | undefined)[]> {
    const { rows } = await this.#db.query<Row>({
      ...statement,
      values: [batch.map((asked) => asked.agentId), batch.map((asked) => asked.requestId)],
    });
    const found = new Map(rows.map((row) => [Number(row.ordinal), row]));
    return batch.map((_, index) => {
      const row = found.get(index + 1);
      return (
        row && {
          id: row.id,
          status: row.status,
          ttlAt: new Date(row.ttl_at),
          resolvedAt: row.resolved_at === null ? null : new Date(row.resolved_at),
          ceremonyId: row.ceremony_id,
          resolutionJwt: row.resolution_jwt,
          verdict: row.verdict,
        }
      );
    });
  }
}

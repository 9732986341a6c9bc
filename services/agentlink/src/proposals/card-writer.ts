import { NaturalBatcher, type OutboxRow, type Queryable, sqlDefinition } from "@svc/platform";
import type { Card, CardAudit } from "./card.entity.ts";
import type { ProposedCard } from "./inquiry-facts.ts";

/**
 * `propose_cards`, which writes a batch of new cards with their audit rows and events, or answers the
 * card a request_id already has. Applied at start whenever its text changes (the platform's stored definitions).
 */
export const proposeCards = sqlDefinition(new URL("./propose-cards.sql", import.meta.url));

/** A card inquire accepted, with its audit row and its event, exactly as they are to be stored. */
export interface NewCard {
  card: Omit<Card, "resolvedAt" | "verdict" | "ceremonyId" | "resolutionId" | "resolutionJwt">;
  audit: Pick<CardAudit, "action" | "actor" | "at" | "detail">;
  event: OutboxRow;
}

/** Cards written by one statement at most; a larger burst waits for the next one. */
const maxBatch = 64;

const statement = {
  name: "propose_cards",
  text: `select ordinal, id, status, svc_user_id, ttl_at, replay from propose_cards($1::jsonb)`,
};

interface Row {
  ordinal: number;
  id: string;
  status: Card["status"];
  svc_user_id: string;
  ttl_at: Date;
  replay: boolean;
}

const failure = (message: string): never => {
  throw new Error(message);
};

/**
 * Writes inquire's new cards, many per statement under load ({@link NaturalBatcher}): the round trip,
 * the plan and the commit are paid once per batch instead of once per call. Two calls with the same
 * (agent, request_id) never share a batch. A batch that fails is all rolled back and its cards are
 * written again one by one, so one card's failure is never another's.
 */
export class CardWriter {
  readonly #batcher: NaturalBatcher<NewCard, { card: ProposedCard; replay: boolean }>;

  constructor(db: Queryable) {
    this.#batcher = new NaturalBatcher({
      maxBatch,
      retryAlone: true,
      gatherTurn: true,
      keys: ({ card }) => [`${card.agentId}:${card.requestId}`],
      run: async (batch) => {
        const { rows } = await db.query<Row>({
          ...statement,
          values: [JSON.stringify(batch.map(asItem))],
        });
        const written = new Map(rows.map((row) => [row.ordinal, row]));
        return batch.map((_, ordinal) => {
          const row =
            written.get(ordinal) ?? failure(`the statement gave no card for item ${ordinal} of ${batch.length}`);
          return {
            card: { id: row.id, status: row.status, svcUserId: row.svc_user_id, ttlAt: row.ttl_at },
            replay: row.replay,
          };
        });
      },
    });
  }

  /** The new card as written, or (a replay) the card its request_id already had, with nothing written. */
  write(card: NewCard): Promise<{ card: ProposedCard; replay: boolean }> {
    return this.#batcher.submit(card);
  }
}

/** A new card as one element of the statement's `jsonb_to_recordset`. */
const asItem = ({ card, audit, event }: NewCard, ordinal: number) => ({
  ordinal,
  id: card.id,
  agent_id: card.agentId,
  request_id: card.requestId,
  svc_user_id: card.svcUserId,
  summary_title: card.summaryTitle,
  category: card.category,
  canonical_card: card.canonicalCard,
  card_digest: card.cardDigest,
  status: card.status,
  ttl_at: card.ttlAt,
  created_at: card.createdAt,
  named_by: card.namedBy,
  warnings: card.warnings,
  audit_action: audit.action,
  audit_actor: audit.actor,
  audit_at: audit.at,
  audit_detail: audit.detail,
  event_subject: event.subject,
  event_message_id: event.messageId,
  event_payload: `\\x${event.payload.toString("hex")}`,
  event_created_at: event.createdAt,
});

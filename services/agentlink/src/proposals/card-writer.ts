import { type CommittedEvent, NaturalBatcher, type OutboxRow, type Queryable, sqlDefinition } from "@svc/platform";
import type { Card, CardAudit } from "./card.entity.ts";

/**
 * `propose_cards`, inquire's one statement: the facts its checks read and, when they allow it, the new
 * card with its audit row and its event. Applied at start whenever its text changes (the platform's
 * stored definitions).
 */
export const proposeCards = sqlDefinition(new URL("./propose-cards.sql", import.meta.url));

/** What inquire answers with: the card as the agent and the sandbox humans see it. */
export type ProposedCard = Pick<Card, "id" | "status" | "svcUserId" | "ttlAt">;

/** A quorum card's approvers and thresholds as inquire hands them to the statement. */
export interface QuorumProposal {
  /** The keyed lookups of the approvers' opaque_ids, in the agent's order. */
  approverLookups: string[];
  approve: number;
  deny: number;
}

/** A new card inquire accepted, with its audit row and its event, exactly as they are to be stored. */
export interface NewCard {
  /**
   * The person is the statement's to fill in when inquire names them by opaque_id; the trace context is the
   * event's, which the statement writes to both.
   */
  card: Omit<
    Card,
    | "svcUserId"
    | "resolvedAt"
    | "verdict"
    | "ceremonyId"
    | "resolutionId"
    | "resolutionJwt"
    | "quorumApprove"
    | "quorumDeny"
    | "traceContext"
  >;
  audit: Pick<CardAudit, "action" | "actor" | "at" | "detail">;
  event: OutboxRow;
  /** The push trigger without its person: the statement writes one per person asked. */
  push: OutboxRow;
}

/** One inquire call as the statement sees it. */
export interface Proposal {
  agentId: string;
  /** The agent's request_id; null when it is not a uuid (no card can have it). */
  requestId: string | null;
  /** The person: the agent's binding with this opaque_id lookup, or the svc_user_id inquire checked; null for neither. */
  opaqueIdLookup: string | null;
  svcUserId: string | null;
  /** A quorum card's approvers instead of one person; null for a card to one person. */
  quorum: QuorumProposal | null;
  /** The category as the agent sent it (the card keeps the trust layer's canonical one); null when not a string. */
  category: string | null;
  /** Absent when inquire refuses the call whatever the facts say: the statement then only reads. */
  newCard: NewCard | undefined;
}

/** The facts inquire's checks read, as the statement that wrote (or did not write) the card saw them. */
export interface ProposalFacts {
  agentActive: boolean;
  categoryAllowed: boolean;
  /** The person the call names, found by the statement (a quorum card's first approver); null when none. */
  person: string | null;
  /** A quorum card: the first approver (from 0) no active binding of the agent names; null when all are found. */
  missingApprover: number | null;
  /** A quorum card's approvers as found, in the agent's order; null for a card to one person. */
  approvers: string[] | null;
  /** The agent's card for the request_id after the statement: the new one, or the one it already had. */
  card: ProposedCard | undefined;
  /** Whether `card` is the new card of this call. */
  written: boolean;
  /** The new card's outbox rows (its event and its push triggers), for the relay to publish at once; none when not written. */
  events: CommittedEvent[];
}

/** Calls per statement at most; a larger burst waits for the next one. */
const maxBatch = 64;

const statement = {
  name: "propose_cards",
  text: `select ordinal, agent_active, category_allowed, person, missing_approver, approvers, card_id, card_status,
      card_svc_user_id, card_ttl_at, written, events
    from propose_cards($1::jsonb)`,
};

interface Row {
  ordinal: number;
  agent_active: boolean;
  category_allowed: boolean;
  person: string | null;
  missing_approver: number | null;
  approvers: string[] | null;
  card_id: string | null;
  card_status: Card["status"] | null;
  card_svc_user_id: string | null;
  card_ttl_at: Date | null;
  written: boolean;
  events: { id: string; subject: string; message_id: string; payload: string; trace_context: string | null }[] | null;
}

const failure = (message: string): never => {
  throw new Error(message);
};

const factsOf = (row: Row): ProposalFacts => ({
  agentActive: row.agent_active,
  categoryAllowed: row.category_allowed,
  person: row.person,
  missingApprover: row.missing_approver,
  approvers: row.approvers,
  card:
    row.card_id === null || row.card_status === null || row.card_svc_user_id === null || row.card_ttl_at === null
      ? undefined
      : { id: row.card_id, status: row.card_status, svcUserId: row.card_svc_user_id, ttlAt: row.card_ttl_at },
  written: row.written,
  events: (row.events ?? []).map((event) => ({
    id: event.id,
    subject: event.subject,
    messageId: event.message_id,
    payload: Buffer.from(event.payload, "base64"),
    traceContext: event.trace_context,
  })),
});

/**
 * Runs inquire's statement for many calls at once under load ({@link NaturalBatcher}): the round trip,
 * the plan and the commit are paid once per batch instead of once per call. Two calls with the same
 * (agent, request_id) never share a batch. A batch that fails is all rolled back and its calls are run
 * again one by one, so one call's failure is never another's.
 */
export class CardWriter {
  readonly #batcher: NaturalBatcher<Proposal, ProposalFacts>;

  constructor(db: Queryable) {
    this.#batcher = new NaturalBatcher({
      maxBatch,
      retryAlone: true,
      gatherTurn: true,
      keys: ({ agentId, requestId }) => [`${agentId}:${requestId}`],
      run: async (batch) => {
        const { rows } = await db.query<Row>({ ...statement, values: [JSON.stringify(batch.map(asItem))] });
        const facts = new Map(rows.map((row) => [row.ordinal, row]));
        return batch.map((_, ordinal) =>
          factsOf(facts.get(ordinal) ?? failure(`the statement gave no facts for call ${ordinal} of ${batch.length}`)),
        );
      },
    });
  }

  /** The facts of one call, its new card written if it carries one and they allow it. */
  propose(proposal: Proposal): Promise<ProposalFacts> {
    return this.#batcher.submit(proposal);
  }
}

/** A call as one element of the statement's `jsonb_to_recordset`. */
function asItem(proposal: Proposal, ordinal: number) {
  const { newCard } = proposal;
  return {
    ordinal,
    agent_id: proposal.agentId,
    request_id: proposal.requestId,
    opaque_id_lookup: proposal.opaqueIdLookup,
    given_svc_user_id: proposal.svcUserId,
    category: proposal.category,
    approver_lookups: proposal.quorum?.approverLookups ?? null,
    quorum_approve: proposal.quorum?.approve ?? null,
    quorum_deny: proposal.quorum?.deny ?? null,
    ...(newCard && {
      id: newCard.card.id,
      summary_title: newCard.card.summaryTitle,
      card_category: newCard.card.category,
      canonical_card: newCard.card.canonicalCard,
      card_digest: newCard.card.cardDigest,
      status: newCard.card.status,
      ttl_at: newCard.card.ttlAt,
      created_at: newCard.card.createdAt,
      named_by: newCard.card.namedBy,
      warnings: newCard.card.warnings,
      sandbox_answer_at: newCard.card.sandboxAnswerAt ?? null,
      audit_action: newCard.audit.action,
      audit_actor: newCard.audit.actor,
      audit_at: newCard.audit.at,
      audit_detail: newCard.audit.detail,
      event_subject: newCard.event.subject,
      event_message_id: newCard.event.messageId,
      event_payload: `\\x${newCard.event.payload.toString("hex")}`,
      event_created_at: newCard.event.createdAt,
      event_trace_context: newCard.event.traceContext,
      push_subject: newCard.push.subject,
      push_message_id: newCard.push.messageId,
      push_payload: `\\x${newCard.push.payload.toString("hex")}`,
    }),
  };
}

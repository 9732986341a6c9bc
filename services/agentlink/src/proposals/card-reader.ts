import type { KeyObject } from "node:crypto";
import { isUuid, NaturalBatcher, type Queryable } from "@svc/platform";
import { opaqueIdFor } from "../binding/opaque-id.ts";
import { refuse } from "../refusal.ts";
import type { Card, Verdict } from "./card.entity.ts";

/** A quorum card's thresholds and each approver's decision so far, as its agent reads them. */
export interface QuorumView {
  approve: number;
  deny: number;
  /** In the agent's order of `approvers`. */
  decisions: { opaqueId: string; verdict: Verdict | null; decidedAt: Date | null }[];
}

/** What check-status reads of a card (`checkStatusAnswer`, `cardStateAt`); `quorum` for a quorum card. */
export type CardStatusFields = Pick<
  Card,
  "id" | "status" | "ttlAt" | "resolvedAt" | "ceremonyId" | "resolutionJwt" | "verdict"
> & { quorum?: QuorumView | undefined };

/** A quorum card's view from its approver rows (in the agent's order): each one's opaque_id for the agent. */
export const quorumView = (
  opaqueIdKey: KeyObject,
  card: { agentId: string; quorumApprove: number; quorumDeny: number },
  approvers: readonly { svcUserId: string; verdict?: Verdict | null; decidedAt?: Date | null }[],
): QuorumView => ({
  approve: card.quorumApprove,
  deny: card.quorumDeny,
  decisions: approvers.map((approver) => ({
    opaqueId: opaqueIdFor(opaqueIdKey, card.agentId, approver.svcUserId),
    verdict: approver.verdict ?? null,
    decidedAt: approver.decidedAt ?? null,
  })),
});

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
  agent_id: string;
  quorum_approve: number | null;
  quorum_deny: number | null;
}

interface ApproverRow {
  card_id: string;
  svc_user_id: string;
  verdict: Verdict | null;
  decided_at: Date | null;
}

/** Reads per statement at most; a larger burst waits for the next one. */
const maxBatch = 256;

const statement = {
  name: "read_card_statuses",
  text: `select asked.ordinal, card.id, card.status, card.ttl_at, card.resolved_at, card.ceremony_id,
                card.resolution_jwt, card.verdict, card.agent_id, card.quorum_approve, card.quorum_deny
           from unnest($1::uuid[], $2::uuid[]) with ordinality as asked(agent_id, request_id, ordinal)
           join card on card.agent_id = asked.agent_id and card.request_id = asked.request_id`,
};

const approversStatement = {
  name: "read_card_approvers",
  text: `select card_id, svc_user_id, verdict, decided_at from card_approver
           where card_id = any($1::uuid[]) order by card_id, position`,
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
  readonly #opaqueIdKey: KeyObject;
  readonly #batcher: NaturalBatcher<Asked, CardStatusFields | undefined>;

  /** `opaqueIdKey` (AGENTLINK_OPAQUE_ID_KEY) gives a quorum card's approvers their opaque_ids for its agent. */
  constructor(db: Queryable, opaqueIdKey: KeyObject) {
    this.#db = db;
    this.#opaqueIdKey = opaqueIdKey;
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
    const approvers = await this.#approversOf(rows.filter((row) => row.quorum_approve !== null).map((row) => row.id));
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
          ...(row.quorum_approve !== null &&
            row.quorum_deny !== null && {
              quorum: quorumView(
                this.#opaqueIdKey,
                { agentId: row.agent_id, quorumApprove: row.quorum_approve, quorumDeny: row.quorum_deny },
                (approvers.get(row.id) ?? []).map((approver) => ({
                  svcUserId: approver.svc_user_id,
                  verdict: approver.verdict,
                  decidedAt: approver.decided_at === null ? null : new Date(approver.decided_at),
                })),
              ),
            }),
        }
      );
    });
  }

  /** The approver rows of these quorum cards, by card, each card's in the agent's order; none asked for none. */
  async #approversOf(cardIds: readonly string[]): Promise<Map<string, ApproverRow[]>> {
    const byCard = new Map<string, ApproverRow[]>();
    if (cardIds.length === 0) return byCard;
    const { rows } = await this.#db.query<ApproverRow>({ ...approversStatement, values: [cardIds] });
    for (const row of rows) byCard.set(row.card_id, [...(byCard.get(row.card_id) ?? []), row]);
    return byCard;
  }
}

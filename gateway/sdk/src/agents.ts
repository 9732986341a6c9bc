import { NotFoundError, SvcError } from "./errors.ts";
import type { Body, Query, Result } from "./operations.ts";
import type { CallOptions, Transport, WithResponse } from "./transport.ts";
import type { ProofClaims, Verifier } from "./verifier.ts";

export type InquireInput = Body<"agentlinkInquire">;
export type AskInput = Omit<InquireInput, "request_id"> & {
  /** The proposal's uuid v4 (its idempotency key); a new one when absent. */
  request_id?: string;
};

export interface AskOptions {
  /** Aborting cancels the card (`POST /agentlink/cancel`) and rejects with the signal's reason. */
  signal?: AbortSignal;
  /** The cancel reason written to the audit log when the signal aborts. */
  cancelReason?: string;
}

export interface AskResult {
  requestId: string;
  cardId: string;
  status: "approved" | "denied" | "expired" | "cancelled";
  verdict: "approve" | "denied" | null;
  /** The Proof of Resolution (ES256 JWT), verified: present only for approved and denied. */
  proof: string | null;
  claims: ProofClaims | null;
}

/** The longest hold of one check-status long-poll the spec allows. */
const maxWaitSeconds = 25;

/** The agent's operations (an agent key): binding a person, proposing, reading, cancelling, and `ask`. */
export class Agents {
  private readonly transport: Transport;
  private readonly verifier: Verifier;
  private readonly now: () => number;

  constructor(transport: Transport, verifier: Verifier, now: () => number) {
    this.transport = transport;
    this.verifier = verifier;
    this.now = now;
  }

  /**
   * Starts a bind session: a `link_code` the person claims in the app. `person_label`, the agent's name for the
   * person, is shown to them when they claim it and to the other approvers of this agent's quorum cards.
   */
  bind(body: Body<"agentBindSession"> = {}, options?: CallOptions) {
    return this.transport.call<Result<"agentBindSession">>({
      method: "POST",
      path: "/agent/bind-session",
      input: body,
      flat: false,
      options,
    });
  }

  /** Whether the person claimed the code; `opaque_id` once claimed. */
  checkBinding(query: Query<"agentCheckBinding">, options?: CallOptions) {
    return this.transport.call<Result<"agentCheckBinding">>({
      method: "GET",
      path: "/agent/check-binding",
      input: query,
      flat: false,
      options,
    });
  }

  /** Proposes an action to a person; replaying the same `request_id` returns the same card. */
  inquire(body: InquireInput, options?: CallOptions) {
    return this.transport.call<Result<"agentlinkInquire">>({
      method: "POST",
      path: "/agentlink/inquire",
      input: body,
      flat: false,
      options,
    });
  }

  /** A proposal's status; with `wait_seconds` (0-25) it holds until the card leaves `queued`. */
  checkStatus(query: Query<"agentlinkCheckStatus">, options?: CallOptions) {
    const wait = typeof query.wait_seconds === "number" ? query.wait_seconds * 1000 : 0;
    return this.transport.call<Result<"agentlinkCheckStatus">>({
      method: "GET",
      path: "/agentlink/check-status",
      input: query,
      flat: false,
      options: options?.timeoutMs === undefined ? { ...options, timeoutMs: wait + 30_000 } : options,
    });
  }

  /** Cancels a queued proposal; an already resolved one answers `already_resolved: true`. */
  cancel(body: Body<"agentlinkCancel">, options?: CallOptions) {
    return this.transport.call<Result<"agentlinkCancel">>({
      method: "POST",
      path: "/agentlink/cancel",
      input: body,
      flat: false,
      options,
    });
  }

  /**
   * Proposes, holds the check-status long-poll until the card resolves or its `ttl_at` passes, and returns the
   * verified proof. The person is one of `opaque_id`, `svc_user_id` and `user_email`, or several people at
   * once: `approvers` (2-10 opaque_ids) with `quorum` `{approve, deny?}`; a quorum card resolves at its
   * quorum, and its proof's `claims.decisions` tell who decided what. A proof that does not verify against the key set, or whose `card_digest` is not the digest
   * of this card, is refused with an `SvcError` (`proof_invalid`): it does not say the person saw this card.
   */
  async ask(input: AskInput, options: AskOptions = {}): Promise<AskResult> {
    const requestId = input.request_id ?? crypto.randomUUID();
    const card = { ...input, request_id: requestId } as InquireInput;
    const signal = options.signal;
    try {
      const proposed = await this.inquire(card, signal && { signal });
      const ttlAt = Date.parse(proposed.ttl_at ?? "");
      for (;;) {
        const left = Math.ceil((ttlAt - this.now()) / 1000);
        const wait = Math.min(maxWaitSeconds, Math.max(0, left));
        const state = await this.checkStatus({ request_id: requestId, wait_seconds: wait }, signal && { signal });
        if (state.status !== "queued") return await this.concluded(requestId, proposed.card_id ?? "", card, state);
        if (left <= 0)
          return {
            requestId,
            cardId: proposed.card_id ?? "",
            status: "expired",
            verdict: null,
            proof: null,
            claims: null,
          };
      }
    } catch (error) {
      if (signal?.aborted) await this.cancelAborted(requestId, options.cancelReason);
      throw error;
    }
  }

  /** An abort during the inquire itself may have left no card: then there is nothing to cancel. */
  private async cancelAborted(requestId: string, reason = "cancelled by the agent") {
    try {
      await this.cancel({ request_id: requestId, reason });
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
    }
  }

  private async concluded(
    requestId: string,
    cardId: string,
    card: InquireInput,
    state: WithResponse<Result<"agentlinkCheckStatus">>,
  ): Promise<AskResult> {
    const status = state.status as AskResult["status"];
    const proof = state.resolution_jwt ?? null;
    if (proof === null) return { requestId, cardId, status, verdict: null, proof: null, claims: null };
    const verified = await this.verifier.verifyProof(proof, { card, requestId });
    if (!verified.valid)
      throw new SvcError({
        statusCode: 0,
        code: "proof_invalid",
        message: `the proof of ${requestId} does not verify: ${verified.reason}`,
        requestId,
        raw: state,
      });
    return { requestId, cardId, status, verdict: verified.claims.verdict, proof, claims: verified.claims };
  }
}

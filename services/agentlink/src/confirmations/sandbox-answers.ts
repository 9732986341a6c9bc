import type { Client } from "@connectrpc/connect";
import { type EnvironmentName, type Logger, withBackoff } from "@svc/platform";
import { type AccountService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { beginConfirmation } from "./begin-confirmation.ts";
import { type ConfirmationContext, confirm } from "./confirm.ts";

/**
 * The process that created a card answers for a sandbox human at once, retrying for about this long;
 * from then on the sandbox sweep may answer instead (the card's `sandbox_answer_at`).
 */
export const sandboxFastPathMs = 5_000;
/** The fast path's waits after a failure: with their jitter (up to 1.5×) about 4.5 s, inside `sandboxFastPathMs`. */
const fastPathRetriesMs = [200, 400, 800, 1600] as const;
/**
 * A sweep's claim on a card: no other sweep answers it for this long. An answer that failed, or a
 * sweeper that died midway, is answered again by the first sweep after the claim ran out.
 */
export const sandboxClaimMs = 10_000;

/**
 * When the sandbox sweep may answer a new card, recorded with it: every card of the development
 * environment of a development deployment (its person may be a sandbox human, which only the account
 * service knows); null for every other card.
 */
export const sandboxAnswerAt = (
  deployment: "development" | "production",
  environment: EnvironmentName,
  now: Date,
): Date | null =>
  deployment !== "production" && environment === "development" ? new Date(now.getTime() + sandboxFastPathMs) : null;

type SandboxAccount = Pick<Client<typeof AccountService>, "getHuman" | "beginPasskeyAssertion" | "sandboxAssert">;

/**
 * Sandbox humans (development only) answer a card by their fixed behaviour, through the path a person's
 * phone takes: confirm-challenge, their software passkey's assertion over it, confirm. `confirm` approves,
 * `decline` denies, `silent` never answers. Production never honours them.
 *
 * Their answer is as reliable as a person's: a development card records, in the statement that creates
 * it, from when the sandbox sweep may answer it (`sandbox_answer_at`). The creating process answers at
 * once (`answerSoon`, retried with bounded backoff); when that is lost (the process killed, PostgreSQL,
 * NATS or another service away for longer than the retries), the sandbox sweep of any replica answers
 * every queued card whose time has come, at start and then periodically. Answering is idempotent: each
 * attempt starts from the card's state, a card no longer queued is left alone, and a card whose person
 * turns out to be no sandbox human who answers leaves the sweep for good.
 */
export class SandboxAnswers {
  readonly #context: () => ConfirmationContext;
  readonly #account: SandboxAccount;
  readonly #origin: string;
  readonly #logger: Logger;
  readonly #honoured: boolean;
  readonly #retriesMs: readonly number[];

  constructor(options: {
    context: () => ConfirmationContext;
    account: SandboxAccount;
    /** The gateway's public origin: the relying party of the sandbox passkey's assertion. */
    passkeyOrigin: string;
    logger: Logger;
    deployment: "development" | "production";
    /** The fast path's waits after a failure (tests shorten them). */
    retriesMs?: readonly number[];
  }) {
    this.#context = options.context;
    this.#account = options.account;
    this.#origin = options.passkeyOrigin;
    this.#logger = options.logger;
    this.#honoured = options.deployment !== "production";
    this.#retriesMs = options.retriesMs ?? fastPathRetriesMs;
  }

  /**
   * The fast path: answers in the background, after the card was committed and returned to the agent.
   * Settles (never rejects) once answered or given up; callers need not wait for it.
   */
  async answerSoon(environment: EnvironmentName | undefined, cardId: string): Promise<void> {
    if (!this.#honoured || environment !== "development") return;
    await new Promise((resolve) => setImmediate(resolve));
    try {
      await withBackoff(() => this.answer(cardId), {
        delaysMs: this.#retriesMs,
        onRetry: (error, delayMs) =>
          this.#logger.info("sandbox human could not answer a card yet; retrying", { cardId, delayMs, error }),
      });
    } catch (error) {
      this.#logger.warn("sandbox human could not answer a card; the sandbox sweep will", { cardId, error });
    }
  }

  /**
   * Everyone the card still waits on answers, one after another in the agent's order of a quorum card's
   * approvers (so a partner's 2-of-3 resolves the same way every time), as long as the card stays queued;
   * then the card leaves the sweep, since whoever it still waits on is no sandbox human who answers.
   */
  async answer(cardId: string): Promise<void> {
    const { em, clock } = this.#context();
    const waiting = await em.execute<{ svc_user_id: string }[]>(
      `select coalesce(a.svc_user_id, c.svc_user_id) as svc_user_id
         from card c left join card_approver a on a.card_id = c.id and a.verdict is null
        where c.id = ? and c.status = 'queued' and c.ttl_at > ? and (c.quorum_approve is null or a.svc_user_id is not null)
        order by a.position`,
      [cardId, clock.now()],
    );
    for (const { svc_user_id } of waiting) await this.#answerFor(cardId, svc_user_id);
    await em.execute(`update card set sandbox_answer_at = null where id = ? and status = 'queued'`, [cardId]);
  }

  /**
   * One person's answer, when they are a sandbox human who answers and the card still waits on them. An
   * attempt that fails because another answer came meanwhile (the fast path and a sweep both at it, the
   * loser's confirm refused) has nothing left to do: only a failure after which the card still waits on
   * them is one.
   */
  async #answerFor(cardId: string, svcUserId: string): Promise<void> {
    try {
      await this.#answerOnce(cardId, svcUserId);
    } catch (error) {
      if (await this.#waitsOn(cardId, svcUserId)) throw error;
    }
  }

  /** Whether the card is queued before its `ttl_at` and the person has yet to decide it. */
  async #waitsOn(cardId: string, svcUserId: string): Promise<boolean> {
    const { em, clock } = this.#context();
    const rows = await em.execute<{ id: string }[]>(
      `select c.id from card c left join card_approver a on a.card_id = c.id and a.svc_user_id = ?
        where c.id = ? and c.status = 'queued' and c.ttl_at > ?
          and (c.quorum_approve is null or (a.svc_user_id is not null and a.verdict is null))`,
      [svcUserId, cardId, clock.now()],
    );
    return rows.length > 0;
  }

  async #answerOnce(cardId: string, svcUserId: string): Promise<void> {
    const context = this.#context();
    if (!(await this.#waitsOn(cardId, svcUserId))) return;
    const human = await this.#account.getHuman({ svcUserId });
    const verdict =
      human.sandboxEnvironment !== Environment.DEVELOPMENT
        ? undefined
        : human.sandboxBehavior === SandboxBehavior.CONFIRM
          ? "approve"
          : human.sandboxBehavior === SandboxBehavior.DECLINE
            ? "denied"
            : undefined;
    // A person, or a silent sandbox human: nobody answers for them.
    if (verdict === undefined) return;
    const decisions = [{ cardId, verdict }];
    const begun = await beginConfirmation(
      { ...context, account: this.#account },
      { svcUserId, decisions, rpId: new URL(this.#origin).hostname, origin: this.#origin },
    );
    const asserted = await this.#account.sandboxAssert({
      svcUserId,
      optionsJson: begun.optionsJson,
      origin: this.#origin,
    });
    await confirm(context, {
      svcUserId,
      decisions,
      assertion: { challengeId: begun.challengeId, responseJson: asserted.responseJson },
    });
  }

  /**
   * The sandbox sweep: claims at most `limit` queued cards before their `ttl_at` whose sandbox answer is
   * due (`card_sandbox_due`), taken `for update skip locked` and moved `sandboxClaimMs` on in one
   * statement, so replicas sweeping at once never claim the same card; then answers them. Answers how
   * many it claimed. A card past its `ttl_at` is the expire sweep's.
   */
  async sweep(limit: number): Promise<number> {
    if (!this.#honoured) return 0;
    const { em, clock } = this.#context();
    const now = clock.now();
    const claimed = await em.execute<{ id: string }[]>(
      `with due as (
         select id from card where status = 'queued' and sandbox_answer_at <= ? and ttl_at > ?
           order by sandbox_answer_at limit ? for update skip locked)
       update card c set sandbox_answer_at = ? from due where c.id = due.id
       returning c.id`,
      [now, now, limit, new Date(now.getTime() + sandboxClaimMs)],
    );
    const answered = await Promise.allSettled(claimed.map((row) => this.answer(row.id)));
    answered.forEach((outcome, i) => {
      if (outcome.status === "rejected")
        this.#logger.warn("the sandbox sweep could not answer a card; its next claim will retry", {
          cardId: claimed[i]?.id,
          error: outcome.reason,
        });
    });
    return claimed.length;
  }
}

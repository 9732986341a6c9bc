import type { Client } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import { type Clock, type EnvironmentName, type Logger, withBackoff } from "@svc/platform";
import { type AccountService, type GetHumanResponse, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import type { Ceremony, RelyingParty } from "./ceremony.ts";

/** How a sandbox human who answers answers; a silent one is never recorded, as they never answer. */
export type SandboxVerdict = "confirm" | "decline";

/**
 * The process that created a request answers for its sandbox human at once, retrying for about this
 * long; from then on the sandbox sweep may answer instead (the request's `sandbox_answer_at`).
 */
export const sandboxFastPathMs = 5_000;
/** The fast path's waits after a failure: with their jitter (up to 1.5×) about 4.5 s, inside `sandboxFastPathMs`. */
const fastPathRetriesMs = [200, 400, 800, 1600] as const;
/**
 * A sweep's claim on a request: no other sweep answers it for this long. An answer that failed, or a
 * sweeper that died midway, is answered again by the first sweep after the claim ran out.
 */
export const sandboxClaimMs = 10_000;

/**
 * Sandbox humans (development only) answer a request pushed to them by their fixed behavior, through
 * the same path a person's phone takes: confirm opens the request, lets the sandbox human's software
 * passkey answer the assertion, and confirms; decline declines; silent never answers.
 *
 * Their answer is as reliable as a person's: the request records, in the statement that creates it, how
 * its sandbox human answers (`sandbox_behavior`) and from when the sweep may answer for them
 * (`sandbox_answer_at`). The creating process answers at once (`answerSoon`, retried with bounded
 * backoff); when that is lost (the process killed, PostgreSQL, NATS or another service away for longer
 * than the retries), the sandbox sweep of any replica answers every pending request whose time has come,
 * at start and then periodically. Answering is idempotent: each attempt starts from the request's state,
 * and a request that is no longer pending is left alone.
 */
export class SandboxResponder {
  readonly #ceremony: Ceremony;
  readonly #account: Client<typeof AccountService>;
  readonly #rp: RelyingParty;
  readonly #orm: MikroORM;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #honoured: boolean;
  readonly #retriesMs: readonly number[];

  constructor(options: {
    ceremony: Ceremony;
    account: Client<typeof AccountService>;
    rp: RelyingParty;
    orm: MikroORM;
    clock: Clock;
    logger: Logger;
    deployment: "development" | "production";
    /** The fast path's waits after a failure (tests shorten them). */
    retriesMs?: readonly number[];
  }) {
    this.#ceremony = options.ceremony;
    this.#account = options.account;
    this.#rp = options.rp;
    this.#orm = options.orm;
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#honoured = options.deployment !== "production";
    this.#retriesMs = options.retriesMs ?? fastPathRetriesMs;
  }

  /**
   * How a sandbox human of the development environment answers, from account's answer for the person (absent
   * for an unknown one); undefined for everyone else, and for a silent one.
   */
  behaviorOf(
    human: Pick<GetHumanResponse, "sandboxBehavior"> | undefined,
    environment: EnvironmentName,
  ): SandboxVerdict | undefined {
    if (!this.#honoured || environment !== "development" || human === undefined) return undefined;
    if (human.sandboxBehavior === SandboxBehavior.CONFIRM) return "confirm";
    if (human.sandboxBehavior === SandboxBehavior.DECLINE) return "decline";
    return undefined;
  }

  /**
   * The fast path: answers in the background, after the request was committed and returned to the
   * partner. Settles (never rejects) once answered or given up; callers need not wait for it.
   */
  async answerSoon(requestId: string, svcUserId: string, verdict: SandboxVerdict): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    try {
      await withBackoff(() => this.answer(requestId, svcUserId, verdict), {
        delaysMs: this.#retriesMs,
        onRetry: (error, delayMs) =>
          this.#logger.info("sandbox human could not answer yet; retrying", { requestId, delayMs, error }),
      });
    } catch (error) {
      this.#logger.warn("sandbox human could not answer; the sandbox sweep will", { requestId, error });
    }
  }

  /**
   * One answer for the request's sandbox human; nothing when the request is no longer pending. An attempt
   * that fails because another answer ended the request meanwhile (the fast path and a sweep both at it,
   * the second passkey assertion refused, or a confirm finding the request completed) has nothing left to
   * do: only a failure that leaves the request pending is one.
   */
  async answer(requestId: string, svcUserId: string, verdict: SandboxVerdict): Promise<void> {
    try {
      await this.#answerOnce(requestId, svcUserId, verdict);
    } catch (error) {
      const [row] = await this.#orm.em
        .fork()
        .execute<{ pending: boolean }[]>(`select status = 'pending' as pending from requests where id = ?`, [
          requestId,
        ]);
      if (row?.pending) throw error;
    }
  }

  async #answerOnce(requestId: string, svcUserId: string, verdict: SandboxVerdict): Promise<void> {
    const access = { flowSecret: "", svcUserId };
    if (verdict === "decline") return void (await this.#ceremony.decline(requestId, access));
    const opened = await this.#ceremony.open(requestId, access, this.#rp);
    if (opened.status !== "pending") return;
    const asserted = await this.#account.sandboxAssert({
      svcUserId,
      optionsJson: opened.optionsJson,
      origin: this.#rp.origin,
    });
    await this.#ceremony.confirm(requestId, access, {
      ceremonyId: opened.ceremonyId,
      responseJson: asserted.responseJson,
    });
  }

  /**
   * The sandbox sweep: claims at most `limit` pending requests inside their window whose sandbox answer
   * is due (`requests_sandbox_due`), taken `for update skip locked` and moved `sandboxClaimMs` on in one
   * statement, so replicas sweeping at once never claim the same request; then answers them. Answers
   * how many it claimed. A request past its window is the expiry sweep's, not answered late.
   */
  async sweep(limit: number): Promise<number> {
    if (!this.#honoured) return 0;
    const now = this.#clock.now();
    const claimed = await this.#orm.em.fork().execute<Claimed[]>(
      `with due as (
         select id from requests where status = 'pending' and sandbox_answer_at <= ? and expires_at > ?
           order by sandbox_answer_at limit ? for update skip locked)
       update requests r set sandbox_answer_at = ? from due where r.id = due.id
       returning r.id, r.svc_user_id, r.sandbox_behavior`,
      [now, now, limit, new Date(now.getTime() + sandboxClaimMs)],
    );
    const answered = await Promise.allSettled(
      claimed.map((row) => this.answer(row.id, row.svc_user_id, row.sandbox_behavior)),
    );
    answered.forEach((outcome, i) => {
      if (outcome.status === "rejected")
        this.#logger.warn("the sandbox sweep could not answer; its next claim will retry", {
          requestId: claimed[i]?.id,
          error: outcome.reason,
        });
    });
    return claimed.length;
  }
}

interface Claimed {
  id: string;
  svc_user_id: string;
  sandbox_behavior: SandboxVerdict;
}

import type { AttestationLedgerCheck } from "@svc/contracts/attestation";
import type { Clock } from "@svc/platform";
import type { TokenCheckBatcher } from "./verify-token-batcher.ts";

/**
 * The move of the token-check ledger from signing's schema to the gateway's, without a gap. Until
 * `until` (GATEWAY_LEDGER_HANDOVER_UNTIL), a check the gateway's ledger calls first is also recorded in
 * signing's (the deprecated RecordTokenChecks), and signing's answer decides:
 *
 * - a token checked before the upgrade is in signing's ledger only: it still reads as replayed;
 * - during the rollout, a gateway of the previous release still records there: its check and this
 *   gateway's first check of the same token meet in signing's ledger, so exactly one is the first;
 * - copies checked by gateways of this release meet in the gateway's ledger first, so only one of them
 *   ever asks signing.
 *
 * After `until` signing is not asked: every previous gateway has stopped and every token it checked
 * has expired. Without `until` (a new deployment) signing is never asked.
 */
export class LedgerHandover {
  readonly #signing: Pick<TokenCheckBatcher, "record">;
  readonly #until: Date | null;
  readonly #clock: Clock;

  constructor(options: { signing: Pick<TokenCheckBatcher, "record">; until: Date | null; clock: Clock }) {
    this.#signing = options.signing;
    this.#until = options.until;
    this.#clock = options.clock;
  }

  /** Whether the check is the token's first, given what the gateway's ledger answered (`firstHere`). */
  async first(check: AttestationLedgerCheck, firstHere: boolean): Promise<boolean> {
    if (!firstHere || this.#until === null || this.#clock.now() >= this.#until) return firstHere;
    return this.#signing.record(check);
  }
}

import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import type { AttestationLedgerCheck } from "@svc/contracts/attestation";
import { NaturalBatcher } from "@svc/platform";
import { type SigningService, TokenCheckSchema } from "@svc/proto/signing/v1/signing_pb.js";

/** Checks per RecordTokenChecks call (signing takes up to 256): enough to spread the per-call cost thin, few enough to return soon. */
const defaultMaxBatch = 64;

/**
 * Coalesces the ledger writes of concurrent verify-token calls into signing's RecordTokenChecks
 * ({@link NaturalBatcher}): a quiet gateway sends each check at once, a busy one sends many per RPC,
 * round trip and ledger write. Nothing is remembered here: signing's ledger decides which check is the
 * first of its token, across every replica, so replays are detected exactly.
 */
export class TokenCheckBatcher {
  readonly #batcher: NaturalBatcher<AttestationLedgerCheck, boolean>;

  constructor(signing: Pick<Client<typeof SigningService>, "recordTokenChecks">, options: { maxBatch?: number } = {}) {
    this.#batcher = new NaturalBatcher({
      maxBatch: options.maxBatch ?? defaultMaxBatch,
      // The checks one turn of the event loop finished (the requests parsed from one poll's reads) share
      // a call, instead of the first leaving alone: under load each call then carries more of them.
      gatherTurn: true,
      run: async (checks) =>
        (
          await signing.recordTokenChecks({
            checks: checks.map((check) =>
              create(TokenCheckSchema, {
                payloadHash: check.payloadHash,
                expiresAt: timestampFromDate(check.expiresAt),
              }),
            ),
          })
        ).first,
    });
  }

  /** Whether this is the first check of its token; rejects with the RPC's error when the batch it went in failed. */
  record(check: AttestationLedgerCheck): Promise<boolean> {
    return this.#batcher.submit(check);
  }
}

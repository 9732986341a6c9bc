import type { Client } from "@connectrpc/connect";
import { NaturalBatcher } from "@svc/platform";
import type { SigningService, VerifyTokenResponse } from "@svc/proto/signing/v1/signing_pb.js";

export interface TokenCheck {
  token: string;
  audience?: string | undefined;
}

/** Checks per VerifyTokens call (signing takes up to 256): enough to spread the per-call cost thin, few enough to return soon. */
const defaultMaxBatch = 64;

/**
 * Coalesces concurrent verify-token calls into signing's VerifyTokens ({@link NaturalBatcher}): a quiet
 * gateway sends each check at once, a busy one sends many per RPC, round trip and ledger write.
 * Signing still decides every token; nothing is cached here, so replays are detected exactly.
 */
export class VerifyTokenBatcher {
  readonly #batcher: NaturalBatcher<TokenCheck, VerifyTokenResponse>;

  constructor(signing: Pick<Client<typeof SigningService>, "verifyTokens">, options: { maxBatch?: number } = {}) {
    this.#batcher = new NaturalBatcher({
      maxBatch: options.maxBatch ?? defaultMaxBatch,
      run: async (checks) => (await signing.verifyTokens({ requests: checks })).responses,
    });
  }

  /** Signing's answer for this token; rejects with the RPC's error when the batch it went in failed. */
  verify(check: TokenCheck): Promise<VerifyTokenResponse> {
    return this.#batcher.submit(check);
  }
}

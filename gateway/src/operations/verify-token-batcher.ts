import type { Client } from "@connectrpc/connect";
import type { SigningService, VerifyTokenResponse } from "@svc/proto/signing/v1/signing_pb.js";

export interface TokenCheck {
  token: string;
  audience?: string | undefined;
}

interface Waiting {
  check: TokenCheck;
  resolve(response: VerifyTokenResponse): void;
  reject(error: unknown): void;
}

/** Checks per VerifyTokens call (signing takes up to 256): enough to spread the per-call cost thin, few enough to return soon. */
const defaultMaxBatch = 64;

/**
 * Coalesces concurrent verify-token calls into signing's VerifyTokens ("natural batching"). A call
 * made while no batch is in flight goes out at once, alone, so a quiet gateway adds no latency. Calls
 * made while one is in flight queue and leave together when it returns, at most `maxBatch` per RPC.
 * Under load each RPC, each round trip to signing and each ledger write then carries many checks.
 * Signing still decides every token; nothing is cached here, so replays are detected exactly.
 */
export class VerifyTokenBatcher {
  readonly #signing: Pick<Client<typeof SigningService>, "verifyTokens">;
  readonly #maxBatch: number;
  #queue: Waiting[] = [];
  #inFlight = false;

  constructor(signing: Pick<Client<typeof SigningService>, "verifyTokens">, options: { maxBatch?: number } = {}) {
    this.#signing = signing;
    this.#maxBatch = options.maxBatch ?? defaultMaxBatch;
  }

  /** Signing's answer for this token; rejects with the RPC's error when the batch it went in failed. */
  verify(check: TokenCheck): Promise<VerifyTokenResponse> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ check, resolve, reject });
      if (!this.#inFlight) this.#send();
    });
  }

  #send(): void {
    const batch = this.#queue.splice(0, this.#maxBatch);
    if (batch.length === 0) return;
    this.#inFlight = true;
    void this.#settle(batch).finally(() => {
      this.#inFlight = false;
      this.#send();
    });
  }

  async #settle(batch: Waiting[]): Promise<void> {
    try {
      const { responses } = await this.#signing.verifyTokens({ requests: batch.map(({ check }) => check) });
      if (responses.length !== batch.length) throw new Error(`signing answered ${responses.length} of ${batch.length} token checks`);
      batch.forEach((waiting, i) => waiting.resolve(responses[i]!));
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
    }
  }
}

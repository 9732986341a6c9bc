import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { NaturalBatcher } from "@svc/platform";
import type {
  AgentService,
  CheckStatusRequest,
  CheckStatusResponse,
  CheckStatusResult,
} from "@svc/proto/agentlink/v1/agentlink_pb.js";

/** Reads per CheckStatuses call (agentlink takes up to 1000, one statement per 256). */
const maxBatch = 256;

type Read = Pick<CheckStatusRequest, "caller" | "requestId">;

/**
 * Coalesces concurrent check-status reads into agentlink's CheckStatuses ({@link NaturalBatcher}): a
 * quiet gateway sends each read at once; a burst (thousands of agents starting long-polls together)
 * sends a few calls instead of one RPC per poll, which is what kept a 10,000-poll burst from being
 * answered within the deadline. agentlink still decides every read.
 */
export class CheckStatusBatcher {
  readonly #batcher: NaturalBatcher<Read, CheckStatusResult>;

  constructor(agentlink: Pick<Client<typeof AgentService>, "checkStatuses">) {
    this.#batcher = new NaturalBatcher({
      maxBatch,
      gatherTurn: true,
      run: async (reads) => {
        const { results } = await agentlink.checkStatuses({ reads });
        if (results.length !== reads.length)
          throw new Error(`CheckStatuses answered ${results.length} results for ${reads.length} reads`);
        return results;
      },
    });
  }

  /** The calling agent's card as CheckStatus answers it; rejects as CheckStatus would refuse it. */
  async read(read: Read): Promise<CheckStatusResponse> {
    const { outcome } = await this.#batcher.submit(read);
    if (outcome.case === "answer") return outcome.value;
    // As agentlink's own CheckStatus refuses it, so the partner reads the same 404.
    throw new ConnectError(outcome.value ?? "no proposal with that request_id for this agent", Code.NotFound);
  }
}

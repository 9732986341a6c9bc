import type { Client } from "@connectrpc/connect";
import type { EnvironmentName, Logger } from "@svc/platform";
import { type AccountService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import type { Card } from "../proposals/card.entity.ts";
import { beginConfirmation } from "./begin-confirmation.ts";
import { type ConfirmationContext, confirm } from "./confirm.ts";

/**
 * Sandbox humans (development only) answer a card by their fixed behaviour, through the path a person's
 * phone takes: confirm-challenge, their software passkey's assertion over it, confirm. `confirm` approves,
 * `decline` denies, `silent` never answers. Production never honours them.
 */
export class SandboxAnswers {
  readonly #context: () => ConfirmationContext;
  readonly #account: Pick<Client<typeof AccountService>, "getHuman" | "beginPasskeyAssertion" | "sandboxAssert">;
  readonly #origin: string;
  readonly #logger: Logger;
  readonly #honoured: boolean;

  constructor(options: {
    context: () => ConfirmationContext;
    account: Pick<Client<typeof AccountService>, "getHuman" | "beginPasskeyAssertion" | "sandboxAssert">;
    /** The gateway's public origin: the relying party of the sandbox passkey's assertion. */
    passkeyOrigin: string;
    logger: Logger;
    deployment: "development" | "production";
  }) {
    this.#context = options.context;
    this.#account = options.account;
    this.#origin = options.passkeyOrigin;
    this.#logger = options.logger;
    this.#honoured = options.deployment !== "production";
  }

  /** Answers in the background, after the card was committed and returned to the agent. */
  answer(environment: EnvironmentName | undefined, card: Pick<Card, "id" | "svcUserId">): void {
    if (!this.#honoured || environment !== "development") return;
    const run = async () => {
      const human = await this.#account.getHuman({ svcUserId: card.svcUserId });
      if (human.sandboxEnvironment !== Environment.DEVELOPMENT) return;
      const verdict =
        human.sandboxBehavior === SandboxBehavior.CONFIRM
          ? "approve"
          : human.sandboxBehavior === SandboxBehavior.DECLINE
            ? "denied"
            : undefined;
      if (verdict === undefined) return;
      const decisions = [{ cardId: card.id, verdict }];
      const context = this.#context();
      const begun = await beginConfirmation(
        { ...context, account: this.#account },
        { svcUserId: card.svcUserId, decisions, rpId: new URL(this.#origin).hostname, origin: this.#origin },
      );
      const asserted = await this.#account.sandboxAssert({
        svcUserId: card.svcUserId,
        optionsJson: begun.optionsJson,
        origin: this.#origin,
      });
      await confirm(context, {
        svcUserId: card.svcUserId,
        decisions,
        assertion: { challengeId: begun.challengeId, responseJson: asserted.responseJson },
      });
    };
    setImmediate(() => {
      run().catch((error: unknown) =>
        this.#logger.warn("sandbox human could not answer a card", { cardId: card.id, error }),
      );
    });
  }
}

import type { Client } from "@connectrpc/connect";
import type { EnvironmentName, Logger } from "@svc/platform";
import { type AccountService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import type { Ceremony, RelyingParty } from "./ceremony.ts";

/**
 * Sandbox humans (development only) answer a request pushed to them by their fixed behavior, through
 * the same path a person's phone takes: confirm opens the request, lets the sandbox human's software
 * passkey answer the assertion, and confirms; decline declines; silent never answers.
 */
export class SandboxResponder {
  readonly #ceremony: Ceremony;
  readonly #account: Client<typeof AccountService>;
  readonly #rp: RelyingParty;
  readonly #logger: Logger;
  readonly #honoured: boolean;

  constructor(options: {
    ceremony: Ceremony;
    account: Client<typeof AccountService>;
    rp: RelyingParty;
    logger: Logger;
    deployment: "development" | "production";
  }) {
    this.#ceremony = options.ceremony;
    this.#account = options.account;
    this.#rp = options.rp;
    this.#logger = options.logger;
    this.#honoured = options.deployment !== "production";
  }

  /** The behavior of a sandbox human in the development environment; undefined for everyone else. */
  async behaviorOf(svcUserId: string, environment: EnvironmentName): Promise<SandboxBehavior | undefined> {
    if (!this.#honoured || environment !== "development") return undefined;
    const human = await this.#account.getHuman({ svcUserId });
    if (human.sandboxBehavior === SandboxBehavior.UNSPECIFIED) return undefined;
    return human.sandboxBehavior;
  }

  /** Answers in the background, after the request was committed and returned to the partner. */
  answer(requestId: string, svcUserId: string, behavior: SandboxBehavior): void {
    const access = { flowSecret: "", svcUserId };
    const run = async () => {
      if (behavior === SandboxBehavior.DECLINE) return void (await this.#ceremony.decline(requestId, access));
      if (behavior !== SandboxBehavior.CONFIRM) return;
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
    };
    setImmediate(() => {
      run().catch((error: unknown) => this.#logger.warn("sandbox human could not answer", { requestId, error }));
    });
  }
}

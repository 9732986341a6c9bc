import { randomBytes } from "node:crypto";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Clock } from "@svc/platform";
import type { AccountService } from "@svc/proto/account/v1/account_pb.js";
import { accountRefusal } from "./account-answers.ts";
import { assertionBinding, checkedDecisions, confirmChallenge } from "./decisions.ts";
import { decidedCards } from "./person-cards.ts";

export interface BegunConfirmation {
  challengeId: string;
  optionsJson: string;
  expiresAt: Date;
  nonce: string;
  decisionsJson: string;
}

/**
 * `confirm-challenge`: checks the decisions as confirm will (the person's, queued), then begins a passkey
 * assertion whose challenge is base64url(SHA-256(nonce ‖ decisions document)) and whose binding names the
 * document. The nonce and the document are returned so the app can recompute what the passkey signs.
 */
export async function beginConfirmation(
  ctx: { em: EntityManager; clock: Clock; account: Pick<Client<typeof AccountService>, "beginPasskeyAssertion"> },
  input: { svcUserId: string; decisions: readonly { cardId: string; verdict: string }[]; rpId: string; origin: string },
): Promise<BegunConfirmation> {
  const decisions = checkedDecisions(input.decisions);
  const { document } = await decidedCards(ctx.em, input.svcUserId, decisions, ctx.clock.now());
  const nonce = randomBytes(32);
  const begun = await ctx.account
    .beginPasskeyAssertion({
      svcUserId: input.svcUserId,
      rpId: input.rpId,
      origin: input.origin,
      binding: assertionBinding(document),
      challenge: confirmChallenge(nonce, document),
    })
    .catch(accountRefusal);
  if (!begun.expiresAt) throw new Error("the account service began an assertion without expires_at");
  return {
    challengeId: begun.ceremonyId,
    optionsJson: begun.optionsJson,
    expiresAt: timestampDate(begun.expiresAt),
    nonce: nonce.toString("base64url"),
    decisionsJson: document,
  };
}

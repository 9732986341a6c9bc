import { ok } from "../http/route.ts";
import { defineRoute } from "../services.ts";
import { sessionUserId } from "./session-user.ts";

/** The exact phrase the person types to confirm; anything else is a 400 and deletes nothing. */
const confirmation = "delete my account";

/**
 * App API: the person deletes their account. agentlink erases their bindings first, account deletes
 * the person last (every active link ends by human, reason human; everything else of theirs is
 * erased). Each step is idempotent, so a retry after a partial failure finishes the job, and account
 * goes last so that the person can still be found until everything else is gone.
 */
export const deleteAccountRoute = defineRoute({
  operationId: "appDeleteAccount",
  method: "POST",
  path: "/app/account/delete",
  summary:
    'Delete the signed-in person: every secured account is unlinked (by human), passkeys, devices, age evidence and agent bindings are erased. Idempotent. confirm must be exactly "delete my account".',
  auth: { accepts: ["user_session"] },
  input: {
    type: "object",
    properties: { confirm: { type: "string", enum: [confirmation], description: "Exactly: delete my account" } },
    required: ["confirm"],
  },
  envelope: "nested",
  output: { type: "object", properties: { deleted: { type: "boolean" } } },
  async handle(_input, { caller, services }) {
    const svcUserId = sessionUserId(caller);
    await services.agentlink.eraseHuman({ svcUserId });
    await services.account.deleteHuman({ svcUserId });
    // Account tells every replica; this one forgets at once, before the person's next request can reach it.
    services.userSessions.forgetHuman(svcUserId);
    return ok({ deleted: true });
  },
});

import { Code, ConnectError } from "@connectrpc/connect";
import { OperationError } from "../http/errors.ts";
import { ok } from "../http/route.ts";
import { defineRoute } from "../services.ts";

/** The account service's deliberate refusals keep their mapped status; anything else is "retry". */
const refusals = new Set([Code.Unauthenticated, Code.PermissionDenied, Code.InvalidArgument]);

/**
 * `POST /secured-accounts/report-credential-change` (decisions.md "Reporting a changed sign-in
 * detail"): the partner's server reports that a sign-in detail of its user changed. The active link
 * of the reference ends by `platform`, reason `credential_changed`; the account service sends
 * `account.unlinked` and leaves the person a `relink_offer`. `{unlinked: false}` when the reference
 * has no active link, so a retry is harmless. Secret API keys only; authentication refusals are the
 * usual 401 without a code (the list's codes are that operation's own table).
 */
export const reportCredentialChangeRoute = defineRoute({
  operationId: "reportCredentialChange",
  method: "POST",
  path: "/secured-accounts/report-credential-change",
  summary:
    "Report that a sign-in detail of one of your users changed: the secured account of that reference is unlinked (account.unlinked by platform, reason credential_changed) and the person is offered re-linking.",
  auth: { accepts: ["secret_key"] },
  input: {
    type: "object",
    properties: {
      platform_user_ref: {
        type: "string",
        minLength: 1,
        maxLength: 512,
        pattern: "\\S",
        description:
          "Your reference of the user whose sign-in detail changed, as sent to create-verification-link (exact match; hashed on the server, never stored readably). 1-512 characters, not blank.",
      },
    },
    required: ["platform_user_ref"],
  },
  envelope: "nested",
  output: {
    type: "object",
    properties: {
      unlinked: {
        type: "boolean",
        description:
          "Whether this report ended an active link; false when the reference had none in the key's environment (never secured, already unlinked, or ended by an earlier report).",
      },
      handle: {
        type: "string",
        pattern: "^OP_[A-Za-z0-9]{12}$",
        description: "The unlinked account's handle, as account.unlinked carries it; only with `unlinked: true`.",
      },
    },
  },
  async handle(input, { caller, services }) {
    try {
      const answer = await services.account.reportCredentialChange({
        caller,
        partnerUserRef: input.platform_user_ref,
      });
      return ok(answer.unlinked ? { unlinked: true, handle: answer.handle } : { unlinked: false });
    } catch (error) {
      if (error instanceof ConnectError && !refusals.has(error.code))
        throw new OperationError(500, "the report could not be recorded; retry with backoff (a retry is harmless)", {
          code: "secured_accounts_unavailable",
        });
      throw error;
    }
  },
});

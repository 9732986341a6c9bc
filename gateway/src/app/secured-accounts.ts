import { Code, ConnectError } from "@connectrpc/connect";
import { SecuredAccountStatus } from "@svc/proto/account/v1/account_pb.js";
import { instant } from "../http/instant.ts";
import { ok } from "../http/route.ts";
import { defineRoute } from "../services.ts";
import { platformSchema, platformsOf } from "./platforms.ts";
import { sessionUserId } from "./session-user.ts";

/** The app API's side of secured accounts: the signed-in person lists their links and ends one. */

const signedIn = { accepts: ["user_session"] } as const;
const dateTime = { type: "string", format: "date-time" } as const;
const handleField = { type: "string", pattern: "^OP_[A-Za-z0-9]{12}$", description: "The link's handle." } as const;

const statusName: Partial<Record<SecuredAccountStatus, "active" | "unlinked">> = {
  [SecuredAccountStatus.ACTIVE]: "active",
  [SecuredAccountStatus.UNLINKED]: "unlinked",
};

const listSecuredAccountsRoute = defineRoute({
  operationId: "appListSecuredAccounts",
  method: "GET",
  path: "/app/secured-accounts",
  summary: "The signed-in person's secured accounts, active and unlinked, newest first, each with its platform's name.",
  auth: signedIn,
  input: { type: "object", properties: {} },
  envelope: "nested",
  output: {
    type: "object",
    properties: {
      accounts: {
        type: "array",
        items: {
          type: "object",
          properties: {
            handle: handleField,
            platform: platformSchema,
            status: { type: "string", enum: ["active", "unlinked"] },
            secured_at: dateTime,
            unlinked_at: { ...dateTime, nullable: true },
            unlinked_by: { type: "string", enum: ["human", "platform"], nullable: true },
            unlink_reason: { type: "string", enum: ["human", "platform", "credential_changed"], nullable: true },
          },
        },
      },
    },
  },
  async handle(_input, { caller, services }) {
    const { accounts } = await services.account.listOwnAccounts({ svcUserId: sessionUserId(caller) });
    const platformOf = await platformsOf(
      services,
      accounts.map((a) => a.organizationId),
    );
    return ok({
      accounts: accounts.map((a) => ({
        handle: a.handle,
        platform: platformOf(a.organizationId),
        status: statusName[a.status] ?? "unlinked",
        secured_at: instant(a.securedAt),
        unlinked_at: instant(a.unlinkedAt),
        unlinked_by: a.unlinkedBy === "" ? null : a.unlinkedBy,
        unlink_reason: a.unlinkReason === "" ? null : a.unlinkReason,
      })),
    });
  },
});

const unlinkSecuredAccountRoute = defineRoute({
  operationId: "appUnlinkSecuredAccount",
  method: "POST",
  path: "/app/secured-accounts/unlink",
  summary:
    "End one of the signed-in person's secured accounts (account.unlinked by human, reason human, sent once). Already unlinked: already_unlinked true. Not the person's: 404.",
  auth: signedIn,
  input: { type: "object", properties: { handle: handleField }, required: ["handle"] },
  envelope: "nested",
  output: {
    type: "object",
    properties: {
      handle: handleField,
      status: { type: "string", enum: ["unlinked"] },
      unlinked_at: dateTime,
      already_unlinked: { type: "boolean" },
    },
  },
  async handle(input, { caller, services }) {
    const ended = await services.account.unlinkOwnAccount({ svcUserId: sessionUserId(caller), handle: input.handle });
    return ok({
      handle: ended.handle,
      status: "unlinked",
      unlinked_at: instant(ended.unlinkedAt),
      already_unlinked: ended.alreadyUnlinked,
    });
  },
});

/**
 * The inbox's notices have two owners, and a notice_id (a UUID either way) does not say which: account's
 * (`account_revoked`, `relink_offer`) are tried first, and one account does not know is agentlink's
 * (`agent_bound`, whose id is the binding's). Not found by either: 404.
 */
const dismissNoticeRoute = defineRoute({
  operationId: "appDismissNotice",
  method: "POST",
  path: "/app/notices/dismiss",
  summary:
    "Dismiss one of the signed-in person's inbox notices (a revoked link, a re-link offer, a new agent binding). Not the person's: 404.",
  auth: signedIn,
  input: { type: "object", properties: { notice_id: { type: "string", format: "uuid" } }, required: ["notice_id"] },
  envelope: "nested",
  output: { type: "object", properties: { dismissed: { type: "boolean" } } },
  async handle(input, { caller, services }) {
    const notice = { svcUserId: sessionUserId(caller), noticeId: input.notice_id };
    try {
      await services.account.dismissNotice(notice);
    } catch (error) {
      if (ConnectError.from(error).code !== Code.NotFound) throw error;
      await services.agentlink.dismissBindingNotice(notice);
    }
    return ok({ dismissed: true });
  },
});

export const securedAccountRoutes = [listSecuredAccountsRoute, unlinkSecuredAccountRoute, dismissNoticeRoute];

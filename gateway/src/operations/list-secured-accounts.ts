import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { environmentName } from "@svc/platform";
import { type SecuredAccount, SecuredAccountStatus } from "@svc/proto/account/v1/account_pb.js";
import { InputValidationError, OperationError } from "../http/errors.ts";
import { fail, ok } from "../http/route.ts";
import { defineRoute } from "../services.ts";

const statuses = { active: SecuredAccountStatus.ACTIVE, unlinked: SecuredAccountStatus.UNLINKED } as const;
const statusNames = new Map<SecuredAccountStatus, string>(
  Object.entries(statuses).map(([name, value]) => [value, name]),
);
const isStatus = (value: string): value is keyof typeof statuses => Object.hasOwn(statuses, value);

/** The account service's cursor: 24 bytes, base64url. What they hold is its business. */
const cursorPattern = "^[A-Za-z0-9_-]{32}$";

/** The spec caps platform_user_ref at 512 characters; the account service hashes it as given. */
const maxReferenceLength = 512;

/**
 * `GET /secured-accounts/list`: the key's environment's secured accounts, newest first, one page and
 * the total. Secret API keys only. The spec's error table names a code for each refusal, so the two
 * filters are the operation's own checks (`data.error` 400 `invalid_platform_user_ref` /
 * `invalid_status`), while `limit` and `offset`, for which it names none, are schema validation (HTTP 400
 * `InputValidationError`, checked first). `cursor` (keyset paging, beyond the spec) is paging too, so a
 * bad one is an `InputValidationError` as well.
 */
export const listSecuredAccountsRoute = defineRoute({
  operationId: "listSecuredAccounts",
  method: "GET",
  path: "/secured-accounts/list",
  summary:
    "List the secured accounts of the key's environment, newest first. Rows carry handles, never the partner's reference or anything about the person.",
  auth: {
    accepts: ["secret_key"],
    codeFor: {
      missing_bearer: "api_key_required",
      credential_not_accepted: "api_key_required",
      unrecognized_credential: "invalid_api_key",
      invalid_key: "invalid_api_key",
      revoked_key: "invalid_api_key",
      expired_key: "invalid_api_key",
    },
  },
  input: {
    type: "object",
    properties: {
      platform_user_ref: {
        type: "string",
        description: `Only the account of this reference (exact match; hashed on the server, never stored readably). 1-${maxReferenceLength} characters, not blank; otherwise \`data.error\` 400 \`invalid_platform_user_ref\`.`,
      },
      status: {
        type: "string",
        description: "`active` or `unlinked`; omit for both. Any other value is `data.error` 400 `invalid_status`.",
      },
      limit: { type: "integer", minimum: 1, maximum: 100, default: 25, description: "Rows per page." },
      offset: {
        type: "integer",
        minimum: 0,
        maximum: 2_147_483_647,
        default: 0,
        description:
          "Rows to skip. Correct at any size, but the database still walks the skipped rows: `cursor` does not.",
      },
      cursor: {
        type: "string",
        pattern: cursorPattern,
        description:
          "Beyond the spec: keyset paging. The `next_cursor` of an earlier page, with the same filters; the page starts after that page's last row, so rows secured meanwhile are not read twice. Instead of `offset` (sending both is an `InputValidationError`); a cursor that is not one this list gave out is an `InputValidationError` too.",
      },
    },
  },
  envelope: "nested",
  output: {
    type: "object",
    properties: {
      rows: {
        type: "array",
        items: {
          type: "object",
          properties: {
            handle: {
              type: "string",
              pattern: "^OP_[A-Za-z0-9]{12}$",
              description: "The same value account.secured and account.unlinked carry.",
            },
            status: { type: "string", enum: ["active", "unlinked"] },
            secured_at: { type: "string", format: "date-time" },
            unlinked_at: { type: "string", format: "date-time", nullable: true },
            unlinked_by: { type: "string", enum: ["platform", "human"], nullable: true },
            unlink_reason: { type: "string", enum: ["credential_changed", "platform", "human"], nullable: true },
            surface_id: {
              type: "string",
              format: "uuid",
              nullable: true,
              description: "The Link-with-ID surface used; null when secured at a gate.",
            },
          },
        },
      },
      total: { type: "integer", description: "Rows matching the filters across all pages." },
      environment: { type: "string", enum: ["development", "production"] },
      limit: { type: "integer" },
      offset: { type: "integer" },
      next_cursor: {
        type: "string",
        nullable: true,
        description:
          "Beyond the spec: pass it as `cursor` for the next page (offset paging gets one too, to switch over); null when this page holds the last matching row.",
      },
    },
  },
  async handle(input, { caller, services }) {
    const reference = input.platform_user_ref;
    if (reference !== undefined && (reference.trim() === "" || reference.length > maxReferenceLength))
      return fail(400, `platform_user_ref must be 1-${maxReferenceLength} characters and not blank`, {
        code: "invalid_platform_user_ref",
      });
    let status = SecuredAccountStatus.UNSPECIFIED;
    if (input.status !== undefined) {
      if (!isStatus(input.status))
        return fail(400, "status must be active or unlinked (omit it for both)", { code: "invalid_status" });
      status = statuses[input.status];
    }
    const { cursor } = input;
    if (cursor !== undefined && input.offset !== 0)
      throw new InputValidationError(input, [
        { propertyPath: "cursor", invalidValue: cursor, message: "send cursor or offset, not both" },
      ]);
    const environment = caller ? environmentName(caller.environment) : undefined;
    if (!caller || environment === undefined)
      return fail(403, "the key names no partner", { code: "partner_not_found" });

    const page = await readingSecuredAccounts(cursor, () =>
      services.account.listSecuredAccounts({
        caller,
        ...(reference !== undefined && { partnerUserRef: reference }),
        status,
        limit: input.limit,
        offset: input.offset,
        ...(cursor !== undefined && { cursor }),
      }),
    );
    return ok({
      rows: page.rows.map(rowOf),
      total: page.total,
      environment,
      limit: page.limit,
      offset: input.offset,
      next_cursor: page.nextCursor === "" ? null : page.nextCursor,
    });
  },
});

function rowOf(row: SecuredAccount) {
  return {
    handle: row.handle,
    status: statusNames.get(row.status),
    secured_at: row.securedAt ? timestampDate(row.securedAt).toISOString() : null,
    unlinked_at: row.unlinkedAt ? timestampDate(row.unlinkedAt).toISOString() : null,
    unlinked_by: row.unlinkedBy === "" ? null : row.unlinkedBy,
    unlink_reason: row.unlinkReason === "" ? null : row.unlinkReason,
    surface_id: row.surfaceId === "" ? null : row.surfaceId,
  };
}

/**
 * The spec's table for this operation: the account service's refusal of the caller is 403
 * `partner_not_found` (or 401 `api_key_required` for a credential kind it does not list for), a refused
 * input keeps its 400, and any other failure, an unreachable service included, is 500
 * `secured_accounts_unavailable` (retry with backoff). Every other input the account service checks was
 * checked here first, so its refusal of a call with a cursor is the cursor's: well formed, but not one it
 * gave out.
 */
async function readingSecuredAccounts<T>(cursor: string | undefined, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!(error instanceof ConnectError)) throw error;
    if (error.code === Code.PermissionDenied)
      throw new OperationError(403, error.rawMessage, { code: "partner_not_found" });
    if (error.code === Code.Unauthenticated)
      throw new OperationError(401, error.rawMessage, { code: "api_key_required" });
    if (error.code === Code.InvalidArgument && cursor !== undefined)
      throw new InputValidationError({ cursor }, [
        { propertyPath: "cursor", invalidValue: cursor, message: error.rawMessage },
      ]);
    if (error.code === Code.InvalidArgument) throw error;
    throw new OperationError(500, "the secured accounts could not be read; retry with backoff", {
      code: "secured_accounts_unavailable",
    });
  }
}

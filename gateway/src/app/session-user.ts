import type { Caller } from "@svc/proto/common/v1/caller_pb.js";

/**
 * The signed-in person's `svc_user_id` on a route that accepts only a user session: authentication
 * has set the caller before the handler runs, so a missing one is a bug, not a refusal.
 */
export function sessionUserId(caller: Pick<Caller, "credentialId"> | undefined): string {
  if (!caller) throw new Error("a user_session route ran without a caller");
  return caller.credentialId;
}

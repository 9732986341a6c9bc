import { type CredentialChangeMessage, credentialChanged } from "@svc/platform";
import { CredentialChange } from "@svc/proto/common/v1/credential_watch_pb.js";

/**
 * A person deleted their account (credential_watch.proto): every gateway forgets the sign-in sessions it
 * resolved to them, so a session's next request finds no one and resolves its identity afresh.
 */
export const humanDeleted = (svcUserId: string): CredentialChangeMessage =>
  credentialChanged({ credential: { case: "svcUserId", value: svcUserId }, change: CredentialChange.DELETED });

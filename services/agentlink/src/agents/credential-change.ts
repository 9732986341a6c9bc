import { type CredentialChangeMessage, credentialChanged } from "@svc/platform";
import type { CredentialChange } from "@svc/proto/common/v1/credential_watch_pb.js";

/** An agent's keys changed (credential_watch.proto): every gateway forgets its cached answers for them. */
export const agentKeysChanged = (agentId: string, change: CredentialChange): CredentialChangeMessage =>
  credentialChanged({ credential: { case: "agentId", value: agentId }, change });

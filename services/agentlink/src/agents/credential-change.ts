import { create, toBinary } from "@bufbuild/protobuf";
import { type CredentialChangeMessage, uuid } from "@svc/platform";
import { type CredentialChange, CredentialChangedSchema } from "@svc/proto/common/v1/credential_watch_pb.js";

/** An agent's keys changed (credential_watch.proto): every gateway forgets its cached answers for them. */
export const agentKeysChanged = (agentId: string, change: CredentialChange): CredentialChangeMessage => ({
  messageId: `credential_changed:${uuid()}`,
  payload: toBinary(
    CredentialChangedSchema,
    create(CredentialChangedSchema, { credential: { case: "agentId", value: agentId }, change }),
  ),
});

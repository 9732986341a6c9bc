import { fromBinary } from "@bufbuild/protobuf";
import { followCredentialChanges, type Logger, type NatsConnection } from "@svc/platform";
import { CredentialChangedSchema } from "@svc/proto/common/v1/credential_watch_pb.js";
import type { AgentKeyResolver } from "./agent-key.ts";

/**
 * Every credential cache of this replica, told by the credentials' owners that one changed
 * (credential_watch.proto): the agent-key answers forget a revoked or rotated agent at once. Reading
 * starts again after any gap (NATS away, the stream gone) by forgetting everything cached.
 */
export function forgetChangedCredentials(options: {
  nc: NatsConnection;
  stream: string;
  subjectPrefix: string;
  agentKeys: Pick<AgentKeyResolver, "forgetAgent" | "forgetAll">;
  logger: Logger;
}): () => Promise<void> {
  const { agentKeys } = options;
  return followCredentialChanges({
    ...options,
    hear(payload) {
      const { credential } = fromBinary(CredentialChangedSchema, payload);
      if (credential.case === "agentId") agentKeys.forgetAgent(credential.value);
    },
    gap: () => agentKeys.forgetAll(),
  });
}

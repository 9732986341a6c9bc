import { fromBinary } from "@bufbuild/protobuf";
import {
  announceCredentialChange,
  credentialChanged,
  followCredentialChanges,
  type Logger,
  type NatsConnection,
} from "@svc/platform";
import { CredentialChange, CredentialChangedSchema } from "@svc/proto/common/v1/credential_watch_pb.js";
import type { AgentKeyResolver } from "./agent-key.ts";
import type { ApiKeyLookup } from "./api-key-cache.ts";
import type { UserSessionResolver } from "./user-session.ts";

/**
 * Every credential cache of this replica, told by the credentials' owners that one changed
 * (credential_watch.proto): the agent-key answers forget a revoked or rotated agent at once, the API keys
 * a revoked key, the user sessions a deleted person. Reading starts again after any gap (NATS away, the
 * stream gone) by forgetting everything cached.
 */
export function forgetChangedCredentials(options: {
  nc: NatsConnection;
  stream: string;
  subjectPrefix: string;
  agentKeys: Pick<AgentKeyResolver, "forgetAgent" | "forgetAll">;
  apiKeys: Pick<ApiKeyLookup, "forgetKey" | "forgetAll">;
  userSessions: Pick<UserSessionResolver, "forgetHuman" | "forgetAll">;
  logger: Logger;
}): () => Promise<void> {
  const { agentKeys, apiKeys, userSessions } = options;
  return followCredentialChanges({
    ...options,
    hear(payload) {
      const { credential } = fromBinary(CredentialChangedSchema, payload);
      if (credential.case === "agentId") agentKeys.forgetAgent(credential.value);
      if (credential.case === "apiKeyId") apiKeys.forgetKey(credential.value);
      if (credential.case === "svcUserId") userSessions.forgetHuman(credential.value);
    },
    gap: () => {
      agentKeys.forgetAll();
      apiKeys.forgetAll();
      userSessions.forgetAll();
    },
  });
}

/**
 * The console's word that an API key was revoked, to every gateway replica (this one forgets it itself).
 * The gateway keeps no outbox: should NATS not take the word, the revoke still stands and the other replicas
 * refuse the key once their cache entry expires (GATEWAY_API_KEY_CACHE_TTL), which the log line says.
 */
export class ApiKeyRevocations {
  #nc: NatsConnection | undefined;
  readonly #subjectPrefix: string;
  readonly #logger: Logger;

  constructor(options: { subjectPrefix: string; logger: Logger }) {
    this.#subjectPrefix = options.subjectPrefix;
    this.#logger = options.logger;
  }

  attach(nc: NatsConnection): void {
    this.#nc = nc;
  }

  async announce(keyId: string): Promise<void> {
    const change = credentialChanged({
      credential: { case: "apiKeyId", value: keyId },
      change: CredentialChange.REVOKED,
    });
    try {
      if (!this.#nc) throw new Error("not connected to NATS");
      await announceCredentialChange(this.#nc, this.#subjectPrefix, change);
    } catch (error) {
      this.#logger.warn("API key revocation not announced; other replicas refuse the key when their cache expires", {
        error,
        key_id: keyId,
      });
    }
  }
}

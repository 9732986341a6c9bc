import { createHash } from "node:crypto";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import { type Clock, type EnvironmentName, environmentProto } from "@svc/platform";
import {
  type AgentKeyRefusal,
  type AgentService,
  AgentKeyRefusal as Refusal,
} from "@svc/proto/agentlink/v1/agentlink_pb.js";
import type { AuthFailure } from "../http/credential.ts";
import { AnswerCache } from "./answer-cache.ts";
import type { CredentialResolver, Resolution } from "./resolver.ts";

/**
 * Agent keys, `svc_agent_<Name>__<secret>` (decisions.md "Agent keys"), belong to agentlink: the
 * gateway decides only the form, and asks agentlink for the rest.
 */
const agentKeyPrefix = "svc_agent_";
/** The name (letters, digits, `_`, `-`; 3-40), `__`, and 32 bytes of base64url (43 characters). */
const agentKeyForm = /^svc_agent_[A-Za-z0-9_-]{3,40}__[A-Za-z0-9_-]{43}$/;

/** The six 401 causes of Authentication rule 4, as the `cause` field of the gateway's log line. */
export type AgentKeyCause =
  | "missing_bearer"
  | "wrong_key_form"
  | "unknown_agent_name"
  | "other_environment"
  | "revoked_agent"
  | "wrong_secret";

const causeOfRefusal: Partial<Record<AgentKeyRefusal, AgentKeyCause>> = {
  [Refusal.WRONG_KEY_FORM]: "wrong_key_form",
  [Refusal.UNKNOWN_AGENT_NAME]: "unknown_agent_name",
  [Refusal.OTHER_ENVIRONMENT]: "other_environment",
  [Refusal.REVOKED_AGENT]: "revoked_agent",
  [Refusal.WRONG_SECRET]: "wrong_secret",
};

/**
 * The cause of a refused credential on an operation that takes an agent key: the authenticate stage
 * logs it; the partner reads only the same 401 for every cause. Any bearer that is not an agent key
 * (another kind, or no form we issue) is a wrong key form there.
 */
export function agentKeyCause(failure: AuthFailure): AgentKeyCause {
  switch (failure) {
    case "missing_bearer":
      return "missing_bearer";
    case "unknown_agent_name":
    case "other_environment":
    case "revoked_agent":
    case "wrong_secret":
      return failure;
    default:
      return "wrong_key_form";
  }
}

/** agentlink's answer, and when an accepted key stops working (a rotated key's overlap ends). */
interface Answer {
  resolution: Resolution;
  until?: Date | undefined;
}

/** What a partner reads for any of the six causes. */
export const agentKeyRefusalMessage = "a valid agent key is required: Authorization: Bearer svc_agent_<Name>__<secret>";

/**
 * The agent-key resolver, and how it hears that an agent's keys changed (credential-changes.ts):
 * `forgetAgent` drops what it remembers of that agent's keys, `forgetAll` everything (when changes may
 * have been missed).
 */
export interface AgentKeyResolver extends CredentialResolver {
  forgetAgent(agentId: string): void;
  forgetAll(): void;
}

/**
 * Asks agentlink which agent a key stands for, remembering its answers, accepted and refused alike,
 * for `cacheTtlMs` in a bounded cache keyed by the key's SHA-256 (never the key itself): the hot path
 * adds no round trip. A revoked or rotated agent's answers are forgotten the moment agentlink says so,
 * and a key's answer is kept no longer than the key works (a rotated key's overlap); `cacheTtlMs` bounds
 * the delay only when agentlink's word is lost. `environments` are those whose agent keys
 * this gateway serves.
 */
export function agentKeyResolver(options: {
  agentlink: Pick<Client<typeof AgentService>, "authenticateAgentKey">;
  clock: Clock;
  environments: readonly EnvironmentName[];
  cacheTtlMs: number;
  cacheCapacity?: number;
}): AgentKeyResolver {
  const cache = new AnswerCache<Resolution>({
    clock: options.clock,
    ttlMs: options.cacheTtlMs,
    capacity: options.cacheCapacity ?? 10_000,
  });
  const environments = options.environments.map(environmentProto);
  const inFlight = new Map<string, Promise<Answer>>();
  // An answer asked for before a change was heard may predate the change: it is used once, never kept.
  let changesHeard = 0;
  const forget = (matches?: (resolution: Resolution) => boolean) => {
    changesHeard++;
    inFlight.clear();
    cache.forget(matches);
  };
  const ask = async (credential: string): Promise<Answer> => {
    const answer = await options.agentlink.authenticateAgentKey({ agentKey: credential, environments });
    const cause = causeOfRefusal[answer.refusal];
    if (cause !== undefined) return { resolution: { ok: false, failure: cause, message: agentKeyRefusalMessage } };
    if (answer.caller)
      return {
        resolution: { ok: true, credential: { kind: "agent_key", caller: answer.caller, allowedGates: [] } },
        until: answer.keyExpiresAt && timestampDate(answer.keyExpiresAt),
      };
    throw new Error("agentlink answered an agent key with neither a caller nor a refusal");
  };
  return {
    kind: "agent_key",
    recognizes: (credential) => credential.startsWith(agentKeyPrefix),
    async resolve(credential) {
      if (!agentKeyForm.test(credential))
        return { ok: false, failure: "wrong_key_form", message: agentKeyRefusalMessage };
      const digest = createHash("sha256").update(credential).digest("base64url");
      const remembered = cache.get(digest);
      if (remembered) return remembered;
      // Concurrent requests with a key the cache has forgotten share one question: a burst of an agent's
      // long-polls as its entry expires asks agentlink once, not once per request.
      let asking = inFlight.get(digest);
      if (!asking) {
        const question = ask(credential).finally(() => {
          if (inFlight.get(digest) === question) inFlight.delete(digest);
        });
        asking = question;
        inFlight.set(digest, asking);
      }
      const heardBefore = changesHeard;
      const { resolution, until } = await asking;
      if (changesHeard === heardBefore) cache.set(digest, resolution, until);
      return resolution;
    },
    forgetAgent: (agentId) =>
      forget((resolution) => resolution.ok && resolution.credential.caller.credentialId === agentId),
    forgetAll: () => forget(),
  };
}

import { batchSizeSetting, developmentSecret, parse, retentionSetting, type Settings } from "@svc/platform";

/** AGENTLINK_<NAME> variables beside the shared ones; the README lists them with their defaults. */
export const settings = {
  keyPepper: developmentSecret({
    parse: parse.base64Key32,
    developmentDefault: Buffer.from("agentlink development key pepper", "utf8"),
    description: "HMAC-SHA256 key of agent-key secrets at rest, base64 of 32 bytes",
  }),
  opaqueIdKey: developmentSecret({
    parse: parse.base64Key32,
    developmentDefault: Buffer.from("agentlink development opaque id!", "utf8"),
    description: "HMAC-SHA256 key deriving each person's pairwise opaque_id per agent, base64 of 32 bytes",
  }),
  callbackSecretKey: developmentSecret({
    parse: parse.base64Key32,
    developmentDefault: Buffer.from("agentlink dev callback secret k!", "utf8"),
    description: "AES-256-GCM key sealing agents' callback secrets at rest, base64 of 32 bytes",
  }),
  keyOverlap: {
    parse: parse.duration,
    default: 24 * 3600 * 1000,
    description: "how long an agent's older keys keep working after rotate-key issued a new one",
  },
  accountUrl: {
    parse: parse.url,
    default: "http://127.0.0.1:9093",
    description:
      "base URL of the account service (inquire looks up a svc_user_id; confirm verifies the passkey assertion; sandbox humans)",
  },
  signingUrl: {
    parse: parse.url,
    default: "http://127.0.0.1:9091",
    description: "base URL of the signing service (it signs each confirmation's Proofs of Resolution)",
  },
  cardRetention: retentionSetting(
    430 * 86_400_000,
    "how long a card and its audit log are kept after it ended: as long as its proof can still verify",
  ),
  retentionBatch: batchSizeSetting("cards one retention statement deletes at most, with their audit rows"),
  sweepEvery: {
    parse: parse.duration,
    default: 60_000,
    description:
      "how often agentlink runs the expire sweep and the card retention by itself (spec: about every 60 seconds)",
  },
  sandboxSweepEvery: {
    parse: parse.duration,
    default: 1_000,
    description:
      "how often queued development cards whose sandbox human's answer was lost are answered (also once at start)",
  },
  passkeyOrigin: {
    parse: parse.url,
    default: "http://127.0.0.1:8080",
    description:
      "origin (and relying party) of the passkey assertions sandbox humans answer cards with: the gateway's public origin",
  },
} satisfies Settings;

/** The keys the routes hash, derive and seal with, from the settings above. */
export interface AgentlinkSecrets {
  keyPepper: Buffer;
  opaqueIdKey: Buffer;
  callbackSecretKey: Buffer;
}

import { batchSizeSetting, developmentSecret, parse, retentionSetting, type Settings } from "@svc/platform";

const day = 86_400_000;

/** GATE_* settings beside the shared SVC_* ones (see the README). */
export const settings = {
  accountUrl: { parse: parse.url, default: "http://127.0.0.1:9093", description: "base URL of the account service" },
  signingUrl: { parse: parse.url, default: "http://127.0.0.1:9091", description: "base URL of the signing service" },
  refKey: developmentSecret({
    parse: parse.base64Key32,
    developmentDefault: Buffer.from("c3ZjLWdhdGUtZGV2ZWxvcG1lbnQtcmVmLWtleSEhISE=", "base64"),
    description: "32 bytes base64: keys the hashes and seals of partner user references",
  }),
  presenceWindow: {
    parse: parse.duration,
    default: 10 * 60_000,
    description: "how long after a ceremony a returning human passes by Recent Presence",
  },
  sweepEvery: {
    parse: parse.duration,
    default: 30_000,
    description: "how often pending requests past their window are expired",
  },
  sandboxSweepEvery: {
    parse: parse.duration,
    default: 1_000,
    description:
      "how often pending requests whose sandbox human's answer was lost are answered (also once at start); development environments only",
  },
  sessionRetention: retentionSetting(
    day,
    "how long a session (grant token) is kept after it expired; the token is refused from its expiry on",
  ),
  requestRetention: retentionSetting(
    30 * day,
    "how long a request is kept after it ended (completed, failed, expired, revoked, superseded or passed)",
  ),
  retentionBatch: batchSizeSetting("rows one retention statement deletes at most"),
  passkeyOrigin: {
    parse: parse.url,
    default: "http://127.0.0.1:8080",
    description:
      "origin (and relying party) of passkey assertions answered by sandbox humans: the gateway's public origin",
  },
  testCrashAfterCreate: {
    parse: parse.boolean,
    default: false,
    description:
      "test only, refused in production: die by SIGKILL after a create-verification-link commits, before it answers (the Idempotency-Key e2e)",
  },
} satisfies Settings;

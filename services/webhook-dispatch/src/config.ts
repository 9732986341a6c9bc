import { batchSizeSetting, developmentSecret, parse, retentionSetting, type Settings } from "@svc/platform";
import { defaultRetrySchedule } from "./delivery/retry-schedule.ts";

/** WEBHOOK_DISPATCH_<NAME> variables; the README lists them with their defaults. */
export const settings = {
  secretKey: developmentSecret({
    parse: parse.base64Key32,
    developmentDefault: Buffer.from("webhook-dispatch development key", "utf8"),
    description: "AES-256-GCM key for endpoint secrets at rest, base64 of 32 bytes",
  }),
  deliveryTimeout: {
    parse: parse.duration,
    default: 15_000,
    description: "how long an endpoint has to answer an attempt",
  },
  retrySchedule: {
    parse: (raw: string) => raw.split(",").map((part) => parse.duration(part)),
    default: defaultRetrySchedule.map((part) => parse.duration(part)),
    description: "comma-separated delays before each attempt; its length is the number of attempts",
  },
  retryJitterPercent: {
    parse: (raw: string) => {
      const n = Number(raw);
      if (!Number.isInteger(n) || n < 0 || n > 50) throw new Error(`not a whole percentage from 0 to 50: ${raw}`);
      return n;
    },
    default: 20,
    description: "random spread of each retry delay, plus or minus this percentage",
  },
  retryAfterMax: {
    parse: parse.duration,
    default: 3_600_000,
    description: "the longest wait a receiver's Retry-After can ask for",
  },
  perEndpointConcurrency: {
    parse: parse.positiveInt,
    default: 4,
    description: "attempts in flight to one endpoint at a time",
  },
  globalConcurrency: {
    parse: parse.positiveInt,
    default: 64,
    description: "attempts in flight in this process at a time",
  },
  heartbeatEvery: {
    parse: parse.duration,
    default: 2000,
    description: "how often this dispatcher renews its heartbeat and looks for dispatchers that are gone",
  },
  instanceStaleAfter: {
    parse: parse.duration,
    default: 30_000,
    description:
      "a dispatcher whose heartbeat is older than this counts as gone even while its connection holds its lock (hung, or its host cut off)",
  },
  pollInterval: {
    parse: parse.duration,
    default: 1000,
    description: "how often the worker looks for due retries when nothing woke it",
  },
  autoDisableAfter: {
    parse: parse.duration,
    default: 5 * 86_400_000,
    description: "an endpoint whose every attempt failed for this long is disabled",
  },
  messageRetention: retentionSetting(
    90 * 86_400_000,
    "how long a message and its deliveries are kept after it arrived (replay and the console read them)",
  ),
  retentionBatch: batchSizeSetting("messages one retention statement deletes at most, with their deliveries"),
  agentlinkUrl: {
    parse: parse.url,
    default: "http://127.0.0.1:9094",
    description: "base URL of agentlink, asked for the callback target of each resolution's agent",
  },
  consumerName: { parse: parse.string, default: "webhook-dispatch", description: "durable JetStream consumer name" },
  ackWait: {
    parse: parse.duration,
    default: 30_000,
    description: "JetStream redelivers an event not acknowledged within this time",
  },
} satisfies Settings;

import { createInternalClient, createLogger, openDatabase, openStatementPool, systemClock } from "@svc/platform";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { entities } from "../src/credentials/entities.ts";
import { parseStage } from "../src/http/parse.ts";
import { handleStage, type Stage, validateStage } from "../src/http/pipeline.ts";
import { startPublicServer } from "../src/http/public-server.ts";
import { migrations } from "../src/migrations/index.ts";
import { KeySetCache } from "../src/operations/jwks.ts";
import { LedgerHandover } from "../src/operations/ledger-handover.ts";
import { verifyTokenRoute } from "../src/operations/verify-token.ts";
import { TokenCheckBatcher } from "../src/operations/verify-token-batcher.ts";
import { VerifyingKeys } from "../src/operations/verifying-keys.ts";
import { rateLimitStage } from "../src/rate-limits/rate-limit-stage.ts";
import { decideRateLimits, RateLimiter } from "../src/rate-limits/rate-limiter.ts";
import { aliasStage } from "../src/rename-window/alias-stage.ts";
import { aliasTable, sunset } from "../src/rename-window/aliases.ts";
import type { GatewayServices } from "../src/services.ts";

/**
 * One arm of the edge benchmark (edge.bench.ts) in a process of its own, so that its CPU is its own and the
 * other arm does not share its event loop: POST /v1/sdk/verify-token through the gateway pipeline, `with` the
 * rate limiter (the anonymous tier, a limit nothing reaches, so every request pays the full decision) and the
 * alias stage, or `without` them (the rate-limit stage counts nothing and records the token's check alone).
 * Arguments: the arm, its PostgreSQL URL and its signing service's URL. It prints its URL when it listens.
 */
const [arm, databaseUrl, signingUrl] = process.argv.slice(2);
if ((arm !== "with" && arm !== "without") || !databaseUrl || !signingUrl)
  throw new Error("usage: edge-arm-server.ts with|without DATABASE_URL SIGNING_URL");

const logger = createLogger(`bench-edge-${arm}`, {}, "warn");
const orm = await openDatabase({
  url: databaseUrl,
  schema: "gateway",
  entities,
  migrations,
  storedDefinitions: [decideRateLimits],
  logger,
});
await orm.close();
// Connections stay open between rounds, as under steady traffic: minting the next round's tokens takes
// longer than pg's idle timeout, and a round that opened them again would pay for it.
const pool = openStatementPool({ url: databaseUrl, schema: "gateway", max: 4, logger, idleTimeoutMs: 0 });
const signing = createInternalClient(SigningService, signingUrl, { timeoutMs: 30_000 });
const services = {
  signing,
  keySet: new KeySetCache({ signing, logger }),
  verifyingKeys: new VerifyingKeys({ signing, clock: systemClock, logger }),
  ledgerHandover: new LedgerHandover({ signing: new TokenCheckBatcher(signing), until: null, clock: systemClock }),
  clock: systemClock,
} as unknown as GatewayServices;
const limitStage = (anonymousPerMinute: number) =>
  rateLimitStage({
    limiter: new RateLimiter({ pool, leaseTtlMs: 60_000 }),
    upgradeUrl: "http://127.0.0.1/upgrade",
    anonymousPerMinute,
    trustedProxyHops: 0,
    logger,
  });
const edge: Stage[] =
  arm === "with"
    ? [limitStage(1_000_000_000), aliasStage({ table: aliasTable, sunset, link: "http://127.0.0.1/v1/openapi.json" })]
    : [limitStage(0)];
const server = await startPublicServer({
  host: "127.0.0.1",
  port: 0,
  routes: [verifyTokenRoute],
  stages: [parseStage, ...edge, validateStage, handleStage],
  services,
  clock: systemClock,
  logger,
  ready: async () => {},
});
console.log(server.url);
process.on("SIGTERM", () => {
  void server
    .stop()
    .then(() => pool.end())
    .finally(() => process.exit(0));
});

import { createSecretKey } from "node:crypto";
import {
  type Clock,
  clockFromEnvironment,
  createInternalClient,
  createLogger,
  databaseReachable,
  type Logger,
  migrateSchema,
  openDatabase,
  openStatementPool,
  type Queryable,
  refreshBeforeScrape,
  runAsMain,
  serveConnect,
  startPeriodicJob,
  startTelemetry,
} from "@svc/platform";
import { AccountService } from "@svc/proto/account/v1/account_pb.js";
import { AgentService, type CheckStatusResponse } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { GateConsoleService, GateService } from "@svc/proto/gate/v1/gate_pb.js";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { WebhookCallbackService } from "@svc/proto/webhook/v1/webhook_pb.js";
import { OrganizationNameCache } from "./app/organization-names.ts";
import { loadGatewayConfig } from "./config.ts";
import { devSessionMinter } from "./console/dev-sessions.ts";
import { consoleForwarding } from "./console/forwarding.ts";
import { gateConsoleRenames } from "./console/gate-console-renames.ts";
import { operatorCredential, operatorCredentialRefusal } from "./console/operator-credential.ts";
import { consoleRoutes } from "./console/routes.ts";
import { agentKeyResolver } from "./credentials/agent-key.ts";
import { cachedApiKeys } from "./credentials/api-key-cache.ts";
import { apiKeyResolvers, authenticateStage } from "./credentials/authenticate.ts";
import { ApiKeyRevocations, forgetChangedCredentials } from "./credentials/credential-changes.ts";
import { CredentialDirectory } from "./credentials/directory.ts";
import { entities } from "./credentials/entities.ts";
import { grantTokenResolver } from "./credentials/grant-token.ts";
import { loadOidcConfig, userSessionResolver } from "./credentials/user-session.ts";
import { heldLongPolls } from "./http/edge-metrics.ts";
import { openApiPath } from "./http/openapi/document.ts";
import { parseStage } from "./http/parse.ts";
import { handleStage, type Stage, validateStage } from "./http/pipeline.ts";
import { basePath, startPublicServer } from "./http/public-server.ts";
import { idempotencyStage } from "./idempotency/idempotency-stage.ts";
import { IdempotencyStore, sweepExpiredKeys } from "./idempotency/idempotency-store.ts";
import { InboxPresence } from "./long-poll/inbox-presence.ts";
import type { InboxChange } from "./long-poll/notifications.ts";
import {
  cardNotifications,
  inboxNotifications,
  listenForNotifications,
  requestNotifications,
} from "./long-poll/notifications.ts";
import { Waiters } from "./long-poll/waiters.ts";
import { proofVerifier } from "./mcp/in-process-operations.ts";
import { mcpRoute } from "./mcp/mcp-endpoint.ts";
import { migrations } from "./migrations/index.ts";
import { CheckStatusBatcher } from "./operations/check-status-batcher.ts";
import { rawRoutes, routes } from "./operations/index.ts";
import { KeySetCache } from "./operations/jwks.ts";
import { LedgerHandover } from "./operations/ledger-handover.ts";
import { TokenCheckBatcher } from "./operations/verify-token-batcher.ts";
import { VerifyingKeys } from "./operations/verifying-keys.ts";
import { loadWidgetScript } from "./operations/widget-script.ts";
import { KeyLimits } from "./rate-limits/key-limits.ts";
import { rateLimitStage } from "./rate-limits/rate-limit-stage.ts";
import { decideRateLimits, RateLimiter } from "./rate-limits/rate-limiter.ts";
import { aliasStage } from "./rename-window/alias-stage.ts";
import { aliasTable, sunset } from "./rename-window/aliases.ts";
import type { GatewayServices } from "./services.ts";

/** check-status answers without webhook-dispatch's report rather than wait long for it. */
const webhookCallbacksTimeoutMs = 1000;

export interface RunningGateway {
  /** The public API's origin; `{base_url}` is `${url}/v1`. */
  url: string;
  port: number;
  /** The internal console service (Connect). */
  consoleUrl: string;
  stop(): Promise<void>;
}

/** A dependency is reachable when its process answers its liveness probe (plain HTTP/1.1). */
async function reachable(baseUrl: string, name: string): Promise<void> {
  const response = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(2000) }).catch((error: Error) => {
    throw new Error(`${name} unreachable: ${error.message}`);
  });
  await response.body?.cancel();
  if (!response.ok) throw new Error(`${name} unhealthy: HTTP ${response.status}`);
}

const gatewaySchema = { schema: "gateway", entities, migrations, storedDefinitions: [decideRateLimits] };

/**
 * The gateway starts without `startService`: it emits no events (no stream, no outbox to open; its one
 * NATS connection hears the notifications that wake long-polls and event streams), and it serves two servers, the
 * public JSON API and the console, where `startService` serves one Connect server.
 */
export async function startGateway(
  options: { env?: NodeJS.ProcessEnv; clock?: Clock; logger?: Logger } = {},
): Promise<RunningGateway> {
  const env = options.env ?? process.env;
  // First: the Postgres instrumentation and the RPC interceptors are set up only once tracing is on.
  const telemetry = await startTelemetry("gateway", env);
  const logger = options.logger ?? createLogger("gateway");
  const config = loadGatewayConfig(env, logger);
  const clock = options.clock ?? clockFromEnvironment(env);

  const orm = await openDatabase({
    ...gatewaySchema,
    url: config.databaseUrl,
    logger,
    migrationMode: config.migrations,
  });
  const signing = createInternalClient(SigningService, config.signingUrl);
  const directory = new CredentialDirectory({ orm, pepper: config.keyPepper, clock });
  const apiKeys = cachedApiKeys({ directory, clock, ttlMs: config.apiKeyCacheTtl });
  const apiKeyRevocations = new ApiKeyRevocations({ subjectPrefix: config.eventSubjectPrefix, logger });
  const gate = createInternalClient(GateService, config.gateUrl);
  const account = createInternalClient(AccountService, config.accountUrl);
  const agentlink = createInternalClient(AgentService, config.agentlinkUrl);
  const cardWaiters = new Waiters<CheckStatusResponse>();
  const requestWaiters = new Waiters();
  const inboxWaiters = new Waiters<InboxChange>();
  const stopMeasuringWaits = refreshBeforeScrape(async () => {
    heldLongPolls.set({ kind: "card_status" }, cardWaiters.size);
    heldLongPolls.set({ kind: "verification_status" }, requestWaiters.size);
    heldLongPolls.set({ kind: "inbox" }, inboxWaiters.size);
  });
  const inboxPresence = new InboxPresence({ subjectPrefix: config.eventSubjectPrefix, logger });
  const oidc = loadOidcConfig(env);
  const userSessions = userSessionResolver({ oidc, account, clock, cacheTtlMs: config.userSessionCacheTtl });
  const services: GatewayServices = {
    signing,
    keySet: new KeySetCache({ signing, logger }),
    verifyingKeys: new VerifyingKeys({ signing, clock, logger }),
    ledgerHandover: new LedgerHandover({
      signing: new TokenCheckBatcher(signing),
      until: config.ledgerHandoverUntil,
      clock,
    }),
    gate,
    account,
    agentlink,
    cardStatuses: new CheckStatusBatcher(agentlink),
    webhookCallbacks: createInternalClient(WebhookCallbackService, config.webhookDispatchUrl, {
      timeoutMs: webhookCallbacksTimeoutMs,
    }),
    cardWaiters,
    requestWaiters,
    inboxWaiters,
    inboxPresence,
    organizations: new OrganizationNameCache(directory),
    userSessions,
    clock,
    publicOrigin: config.publicOrigin,
    widget: loadWidgetScript(logger),
  };
  // The web app signs in with the configured issuer once it has a client id there.
  const signIn =
    oidc.oidcIssuer !== "" && oidc.oidcClientId !== ""
      ? { issuer: oidc.oidcIssuer, clientId: oidc.oidcClientId }
      : undefined;
  const ready = async () => {
    await databaseReachable(orm);
    await reachable(config.signingUrl, "signing");
  };
  const meshUrls = {
    signing: config.signingUrl,
    gate: config.gateUrl,
    account: config.accountUrl,
    agentlink: config.agentlinkUrl,
    "webhook-dispatch": config.webhookDispatchUrl,
  };
  const meshHealth = async () =>
    Object.fromEntries(
      await Promise.all(
        Object.entries(meshUrls).map(async ([name, url]) => [
          name,
          await reachable(url, name).then(
            () => "up" as const,
            () => "down" as const,
          ),
        ]),
      ),
    );

  const agentKeys = agentKeyResolver({
    agentlink,
    clock,
    environments: config.agentEnvironments,
    cacheTtlMs: config.agentKeyCacheTtl,
  });

  // A few connections suffice: every statement decides a whole batch of requests.
  const rateLimitPool = openStatementPool({ url: config.databaseUrl, schema: "gateway", max: 4, logger });
  const limiter = new RateLimiter({ pool: rateLimitPool, leaseTtlMs: config.inFlightLease });
  const idempotencyPool = openStatementPool({ url: config.databaseUrl, schema: "gateway", max: 4, logger });
  const pepper = createSecretKey(config.keyPepper);
  const openApiLink = `${config.publicOrigin}${basePath}${openApiPath}`;

  // The public pipeline, outermost first. Rate limiting goes after authenticate (it counts per
  // credential), alias handling before validate (it renames old fields so the schema sees new ones).
  const authenticate = authenticateStage([
    ...apiKeyResolvers(apiKeys, clock),
    grantTokenResolver(gate, pepper),
    agentKeys,
    userSessions,
  ]);
  const rateLimit = rateLimitStage({
    limiter,
    upgradeUrl: config.upgradeUrl,
    anonymousPerMinute: config.rateLimitAnonymousPerMinute,
    trustedProxyHops: config.trustedProxyHops,
    logger,
  });
  const stages: Stage[] = [
    parseStage,
    authenticate,
    rateLimit,
    aliasStage({ table: aliasTable, sunset, link: openApiLink }),
    validateStage,
    idempotencyStage({ store: new IdempotencyStore(idempotencyPool), pepper, logger }),
    handleStage,
  ];
  // An MCP request is authenticated once; each tool call is counted and run as a request of its agent route
  // (no rename window or Idempotency-Key: the agent routes have no old names, and a tool call carries no key).
  const mcp = mcpRoute({
    authenticate,
    perCall: [rateLimit, validateStage, handleStage],
    services,
    clock,
    logger,
    verifier: proofVerifier(config.publicOrigin, services.keySet),
  });
  const sweeps = [
    startPeriodicJob({
      everyMs: limitSweepEveryMs,
      logger,
      steps: [{ name: "rate-limit and token-check ledger sweep", run: () => limiter.sweep(clock.now()) }],
    }),
    startPeriodicJob({
      everyMs: keySweepEveryMs,
      logger,
      steps: [{ name: "Idempotency-Key sweep", run: () => sweepKeys(idempotencyPool, clock) }],
    }),
  ];
  const stopSweeping = () => Promise.all(sweeps.map((job) => job.stop()));
  let stopForgetting = async () => {};
  const stopListening = listenForNotifications({
    natsUrl: config.natsUrl,
    subscriptions: [
      cardNotifications(config.eventSubjectPrefix, cardWaiters),
      requestNotifications(config.eventSubjectPrefix, requestWaiters),
      inboxNotifications(config.eventSubjectPrefix, inboxWaiters),
    ],
    connected: (nc) => {
      inboxPresence.attach(nc);
      apiKeyRevocations.attach(nc);
      stopForgetting = forgetChangedCredentials({
        nc,
        stream: config.eventStream,
        subjectPrefix: config.eventSubjectPrefix,
        agentKeys,
        apiKeys,
        userSessions,
        logger,
      });
    },
    logger,
  });

  let publicServer: Awaited<ReturnType<typeof startPublicServer>> | undefined;
  try {
    publicServer = await startPublicServer({
      host: config.host,
      port: config.port,
      routes,
      stages,
      services,
      clock,
      logger,
      ready,
      meshHealth,
      fetchRoutes: [mcp],
      rawRoutes: rawRoutes({
        keySet: services.keySet,
        signIn,
        account: services.account,
        publicOrigin: config.publicOrigin,
        widget: services.widget,
      }),
    });
    const consoleServer = await serveConnect({
      name: "gateway-console",
      host: config.consoleHost,
      port: config.consolePort,
      logger: logger.child({ component: "console" }),
      // The network policy admits only operators' pods to this port; the credential is the second wall.
      authenticate: { check: operatorCredential(config.consoleToken), refusal: operatorCredentialRefusal },
      routes: (router) => {
        consoleRoutes({
          directory,
          keyRevoked: async (keyId) => {
            apiKeys.forgetKey(keyId);
            await apiKeyRevocations.announce(keyId);
          },
          signing,
          keyLimits: new KeyLimits({ orm, clock }),
          ...(config.devIdpIssuer === "" ? {} : { mintDevSession: devSessionMinter(config.devIdpIssuer) }),
        })(router);
        // Gate's console goes through the rename window instead of being forwarded unchanged.
        gateConsoleRenames({ gate: createInternalClient(GateConsoleService, config.gateUrl), clock })(router);
      },
      fallback: consoleForwarding(
        {
          "svc.account.v1": config.accountUrl,
          "svc.agentlink.v1": config.agentlinkUrl,
          "svc.webhook.v1": config.webhookDispatchUrl,
        },
        logger.child({ component: "console" }),
      ),
      ready,
      onStop: async () => {},
      logStopped: false,
    });
    const running = publicServer;
    let stopping: Promise<void> | undefined;
    return {
      url: running.url,
      port: running.port,
      consoleUrl: consoleServer.url,
      stop: () =>
        (stopping ??= (async () => {
          await stopSweeping();
          // Held long-polls answer now (read again) and event streams end, so closing the server waits for no one.
          cardWaiters.close();
          requestWaiters.close();
          inboxWaiters.close();
          await Promise.all([running.stop(), consoleServer.stop()]);
          await stopForgetting();
          await stopListening();
          await rateLimitPool.end();
          await idempotencyPool.end();
          await orm.close();
          stopMeasuringWaits();
          await telemetry.stop();
          logger.info("stopped");
        })()),
    };
  } catch (error) {
    await stopSweeping();
    await stopForgetting();
    await stopListening();
    await publicServer?.stop();
    await rateLimitPool.end();
    await idempotencyPool.end();
    await orm.close(true);
    stopMeasuringWaits();
    await telemetry.stop();
    throw error;
  }
}

/** Expired rate counters and leases go every 10 minutes, in batches until none is left. */
const limitSweepEveryMs = 10 * 60_000;

/** Expired Idempotency-Keys go in bounded batches, a few per minute: enough for any rate of new keys. */
const keySweepEveryMs = 60_000;
const keySweepBatch = 1000;
const keySweepBatchesPerRound = 10;

async function sweepKeys(pool: Queryable, clock: Clock): Promise<void> {
  for (let i = 0; i < keySweepBatchesPerRound; i++)
    if ((await sweepExpiredKeys(pool, clock.now(), keySweepBatch)) < keySweepBatch) return;
}

runAsMain(
  import.meta.url,
  "gateway",
  () => startGateway(),
  () => migrateSchema({ ...gatewaySchema, envPrefix: "GATEWAY", logger: createLogger("gateway") }),
);

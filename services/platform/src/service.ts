import type { ConnectRouter } from "@connectrpc/connect";
import type { EntitySchema, MigrationObject } from "@mikro-orm/core";
import type { MikroORM } from "@mikro-orm/postgresql";
import type pg from "pg";
import { type Clock, clockFromEnvironment, testClockRefusal } from "./clock.ts";
import { ConfigError, type ConfigOf, commonSettings, loadConfig, parse, type Settings } from "./config.ts";
import { databaseReachable, migrateSchema, openDatabase, openStatementPool } from "./database.ts";
import { createLogger, type Logger } from "./logger.ts";
import { connectEventBus, type EventBus, eventStreamSettings, natsReachable } from "./nats.ts";
import { OutboxEvent, type OutboxRelay, outboxMigrations, outboxSettings, startOutboxRelay } from "./outbox.ts";
import { type RunningService, serveConnect } from "./server.ts";
import type { StoredDefinition } from "./stored-definitions.ts";
import { startTelemetry } from "./telemetry.ts";

export interface ServiceDefinition<S extends Settings, B> {
  /** Service name as in logs and the process list, e.g. "webhook-dispatch". */
  name: string;
  /** Prefix of the service's own environment variables, e.g. "WEBHOOK_DISPATCH". */
  envPrefix: string;
  defaultPort: number;
  settings: S;
  /** The schema the service owns; the outbox table is added to it. */
  schema: string;
  entities: EntitySchema[];
  migrations: MigrationObject[];
  /** Stored functions in `.sql` files beside their callers (see `sqlDefinition`). */
  storedDefinitions?: readonly StoredDefinition[];
  /**
   * The service's bundle (stores, clients, the parts its background work shares with its routes), built
   * once with plain constructors after the database and the bus are open, before anything serves.
   */
  build: (context: ServiceContext<S>) => B | Promise<B>;
  routes: (bundle: B, context: ServiceContext<S>) => (router: ConnectRouter) => void;
  /** Background work (consumers, sweeps); the returned function stops it. */
  background?: (bundle: B, context: ServiceContext<S>) => Promise<() => Promise<void>>;
}

export interface ServiceContext<S extends Settings> {
  config: ConfigOf<S> & ConfigOf<typeof baseSettings>;
  /** The environment the configuration was read from, for settings a part reads itself. */
  env: NodeJS.ProcessEnv;
  orm: MikroORM;
  /** Prepared statements on hot paths, outside the ORM (see `openStatementPool`). */
  statements: pg.Pool;
  bus: EventBus;
  outbox: OutboxRelay;
  clock: Clock;
  logger: Logger;
}

export interface StartOptions {
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
  logger?: Logger;
}

const baseSettings = {
  ...commonSettings,
  host: { parse: parse.string, default: "127.0.0.1", description: "address to listen on" },
  statementPoolSize: {
    parse: parse.positiveInt,
    default: 8,
    description: "connections for the prepared statements on hot paths (besides the ORM's pool)",
  },
} satisfies Settings;

/** A service definition, typed from its literal; `startService` and `migrateService` take it. */
export const defineService = <S extends Settings, B>(definition: ServiceDefinition<S, B>) => definition;

/** The service's `--migrate-only`: its schema's migrations (the outbox's first) and stored definitions. */
export function migrateService<S extends Settings, B>(
  definition: ServiceDefinition<S, B>,
  options: Pick<StartOptions, "env" | "logger"> = {},
): Promise<void> {
  return migrateSchema({
    envPrefix: definition.envPrefix,
    env: options.env,
    schema: definition.schema,
    entities: [OutboxEvent, ...definition.entities],
    migrations: [...outboxMigrations, ...definition.migrations],
    storedDefinitions: definition.storedDefinitions,
    logger: options.logger ?? createLogger(definition.name),
  });
}

/**
 * The wiring every event-emitting service shares: configuration (development secrets refused in
 * production), its database schema with migrations, the event bus with the outbox relay, the service's
 * bundle (`build`) handed to its routes and background work, the Connect server with health probes,
 * and an orderly stop.
 */
export async function startService<S extends Settings, B>(
  definition: ServiceDefinition<S, B>,
  options: StartOptions = {},
): Promise<RunningService> {
  const env = options.env ?? process.env;
  // First: the Postgres instrumentation and the RPC interceptors are set up only once tracing is on.
  const telemetry = await startTelemetry(definition.name, env);
  const settings = {
    ...baseSettings,
    port: { parse: parse.port, default: definition.defaultPort, description: "port to listen on" },
    ...definition.settings,
  };
  const logger = options.logger ?? createLogger(definition.name);
  const config = loadConfig(definition.envPrefix, settings, env, logger) as ServiceContext<S>["config"] & {
    port: number;
  };
  const mesh = loadConfig("SVC", { ...eventStreamSettings, ...outboxSettings }, env, logger);
  const clockRefusal = testClockRefusal(config.deployment, env);
  if (clockRefusal) throw new ConfigError(`invalid configuration:\n  ${clockRefusal}`);
  const clock = options.clock ?? clockFromEnvironment(env);

  const orm = await openDatabase({
    url: config.databaseUrl,
    schema: definition.schema,
    entities: [OutboxEvent, ...definition.entities],
    migrations: [...outboxMigrations, ...definition.migrations],
    storedDefinitions: definition.storedDefinitions,
    logger,
    migrationMode: config.migrations,
  });
  const statements = openStatementPool({
    url: config.databaseUrl,
    schema: definition.schema,
    max: config.statementPoolSize,
    logger,
  });
  let bus: EventBus | undefined;
  let outbox: OutboxRelay | undefined;
  let stopBackground = async () => {};
  // Also what a failed start runs, so it leaves no connection or timer behind.
  const release = async () => {
    await stopBackground();
    await outbox?.stop();
    await bus?.nc.drain();
    await statements.end();
    await orm.close();
    await telemetry.stop();
  };
  try {
    bus = await connectEventBus({
      url: config.natsUrl,
      name: definition.name,
      stream: config.eventStream,
      subjectPrefix: config.eventSubjectPrefix,
      maxAgeMs: mesh.eventStreamMaxAge,
    });
    outbox = startOutboxRelay({ statements, bus, logger, clock, retentionMs: mesh.outboxRetention });
    const context: ServiceContext<S> = { config, env, orm, statements, bus, outbox, clock, logger };
    const bundle = await definition.build(context);
    if (definition.background) stopBackground = await definition.background(bundle, context);
    const connectedBus = bus;
    return await serveConnect({
      name: definition.name,
      host: config.host,
      port: config.port,
      logger,
      routes: definition.routes(bundle, context),
      ready: async () => {
        await databaseReachable(orm);
        await natsReachable(connectedBus);
      },
      onStop: release,
    });
  } catch (error) {
    await release();
    throw error;
  }
}

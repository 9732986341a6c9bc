import { join } from "node:path";
import { startNats } from "./nats.ts";
import { serverSettings, startPostgres } from "./postgres.ts";
import { type Log, silent } from "./process-tools.ts";

export type InfrastructureOptions = {
  dir: string;
  durable: boolean;
  /** More PostgreSQL server settings (`name=value`). */
  postgresSettings?: readonly string[];
  log?: Log;
  /** Keeps Ctrl-C in a terminal away from the servers, so the caller stops them after the mesh (npm start). */
  detached?: boolean;
};

export type Infrastructure = { postgresUrl: string; natsUrl: string; stop(): Promise<void> };

type Stoppable = { stop(): Promise<unknown> };

const RUNTIME_PROBE_TIMEOUT_MS = 3_000;

/**
 * One PostgreSQL and one JetStream-enabled nats-server: in containers where a container runtime
 * answers, from local binaries otherwise. SVC_INFRA=local|containers forces the choice.
 */
export async function startInfrastructure(options: InfrastructureOptions): Promise<Infrastructure> {
  const log = options.log ?? silent;
  const mode = await chooseMode();
  log(`infrastructure: ${mode}`);
  return mode === "containers"
    ? startContainers(serverSettings(options.durable, options.postgresSettings))
    : startLocal(options, log);
}

async function chooseMode(): Promise<"local" | "containers"> {
  const forced = process.env.SVC_INFRA;
  if (forced === "local" || forced === "containers") return forced;
  if (forced) throw new Error(`SVC_INFRA must be "local" or "containers", not "${forced}"`);
  return (await containerRuntimeAnswers()) ? "containers" : "local";
}

async function containerRuntimeAnswers(): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    // Imported on demand: testcontainers is a test dependency, absent where only the mesh is deployed.
    const { getContainerRuntimeClient } = await import("testcontainers");
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("container runtime probe timed out")), RUNTIME_PROBE_TIMEOUT_MS);
    });
    await Promise.race([getContainerRuntimeClient(), timeout]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

async function startLocal(options: InfrastructureOptions, log: Log): Promise<Infrastructure> {
  const [postgres, nats] = await startTogether(
    startPostgres({
      dataDir: join(options.dir, "postgres"),
      durable: options.durable,
      settings: options.postgresSettings,
      log,
    }),
    startNats({ storeDir: join(options.dir, "nats"), log, detached: options.detached === true }),
  );
  return {
    postgresUrl: postgres.url,
    natsUrl: nats.url,
    stop: async () => {
      await Promise.all([postgres.stop(), nats.stop()]);
    },
  };
}

/** Containers keep nothing across restarts; `settings` are PostgreSQL's (`durable` only decides whether it syncs to disk). */
async function startContainers(settings: string[]): Promise<Infrastructure> {
  const { GenericContainer, Wait } = await import("testcontainers");
  const [postgres, nats] = await startTogether(
    new GenericContainer("postgres:15")
      .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: "trust" })
      .withCommand(["postgres", ...settings.flatMap((setting) => ["-c", setting])])
      .withExposedPorts(5432)
      // The image's entrypoint runs a temporary server for initialisation before the real one.
      .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
      .start(),
    new GenericContainer("nats:2.10")
      .withCommand(["-js"])
      .withExposedPorts(4222)
      .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
      .start(),
  );
  return {
    postgresUrl: `postgres://postgres@${postgres.getHost()}:${postgres.getMappedPort(5432)}/postgres`,
    natsUrl: `nats://${nats.getHost()}:${nats.getMappedPort(4222)}`,
    stop: async () => {
      await Promise.all([postgres.stop(), nats.stop()]);
    },
  };
}

/** Starts both; when one fails, stops the other so nothing is left running. */
async function startTogether<A extends Stoppable, B extends Stoppable>(a: Promise<A>, b: Promise<B>): Promise<[A, B]> {
  const [first, second] = await Promise.allSettled([a, b]);
  if (first.status === "fulfilled" && second.status === "fulfilled") return [first.value, second.value];
  const results = [first, second];
  await Promise.allSettled(results.map((result) => (result.status === "fulfilled" ? result.value.stop() : undefined)));
  throw results.find((result): result is PromiseRejectedResult => result.status === "rejected")?.reason;
}

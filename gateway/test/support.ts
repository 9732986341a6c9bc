import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import { createServer } from "node:net";
import type { Client } from "@connectrpc/connect";
import { createClient } from "@connectrpc/connect";
import { createInternalClient, type ManualClock } from "@svc/platform";
import { ConsoleService } from "@svc/proto/console/v1/console_pb.js";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { startSigning } from "@svc/signing";
import { consoleTransport } from "../../test/harness/console-transport.ts";
import { createTestDatabase, type TestDatabase } from "../../test/harness/index.ts";
import { type RunningGateway, startGateway } from "../src/server.ts";
import { memoryLogger } from "./memory-logger.ts";

export { memoryLogger };

/** `iss` of every token in these tests: the gateway's public origin as signing knows it. */
export const issuer = "https://api.svc.test";

/** A TCP port nothing listens on (taken, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface TestMesh {
  database: TestDatabase;
  gateway: RunningGateway;
  signingUrl: string;
  signing: Client<typeof SigningService>;
  console: Client<typeof ConsoleService>;
  /** The console port's operator credential this gateway was configured with (GATEWAY_CONSOLE_TOKEN). */
  consoleToken: string;
  logger: ReturnType<typeof memoryLogger>;
  /** Environment of this mesh's gateway, for starting another one beside it. */
  env: NodeJS.ProcessEnv;
  stop(): Promise<void>;
}

/** Signing and the gateway in-process on free ports, on a database of their own, moved by `clock`. */
export async function startTestMesh(label: string, clock: ManualClock): Promise<TestMesh> {
  const database = await createTestDatabase(label);
  const logger = memoryLogger();
  const stops: (() => Promise<void>)[] = [() => database.drop()];
  const stop = async () => {
    for (const step of stops.reverse()) await step();
  };
  try {
    const signing = await startSigning({
      env: {
        SVC_DATABASE_URL: database.url,
        SIGNING_PORT: "0",
        SIGNING_ISSUER: issuer,
        SIGNING_KEK: randomBytes(32).toString("base64"),
      },
      clock,
      logger: logger.child({ service: "signing" }),
    });
    stops.push(() => signing.stop());
    const env = {
      SVC_DATABASE_URL: database.url,
      GATEWAY_PORT: "0",
      GATEWAY_CONSOLE_PORT: "0",
      GATEWAY_SIGNING_URL: signing.url,
      GATEWAY_PUBLIC_ORIGIN: issuer,
      GATEWAY_KEY_PEPPER: randomBytes(32).toString("base64"),
      GATEWAY_CONSOLE_TOKEN: randomBytes(32).toString("base64url"),
    };
    const gateway = await startGateway({ env, clock, logger: logger.child({ service: "gateway" }) });
    stops.push(() => gateway.stop());
    return {
      database,
      gateway,
      signingUrl: signing.url,
      signing: createInternalClient(SigningService, signing.url),
      console: createClient(ConsoleService, consoleTransport(gateway.consoleUrl, env.GATEWAY_CONSOLE_TOKEN)),
      consoleToken: env.GATEWAY_CONSOLE_TOKEN,
      logger,
      env,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

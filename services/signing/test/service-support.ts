import { randomBytes } from "node:crypto";
import { createInternalClient, type ManualClock } from "@svc/platform";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { type RunningSigning, startSigning } from "../src/server.ts";
import { memoryLogger } from "./support.ts";

export const testKek = (): string => randomBytes(32).toString("base64");

/** The service in-process on a free port, on the given database, with a clock the test moves. */
export async function startTestSigning(
  databaseUrl: string,
  options: { clock: ManualClock; env?: NodeJS.ProcessEnv; logger?: ReturnType<typeof memoryLogger> },
) {
  const logger = options.logger ?? memoryLogger();
  const service: RunningSigning = await startSigning({
    env: { SVC_DATABASE_URL: databaseUrl, SIGNING_PORT: "0", ...options.env },
    clock: options.clock,
    logger,
  });
  return { service, logger, client: createInternalClient(SigningService, service.url) };
}

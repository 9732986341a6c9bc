import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RunningNats, startNats } from "@svc/local-mesh/nats";
import { freePort } from "@svc/local-mesh/process-tools";

export interface OwnNats {
  url: string;
  /** Stops the server (SIGTERM): every client of it loses NATS until `start`. */
  stop(): Promise<void>;
  /** Starts it again on the same port and file store, so streams and consumers come back. */
  start(): Promise<void>;
  /** Stops it and deletes its store. */
  remove(): Promise<void>;
}

/**
 * A nats-server of one test file's own, JetStream on a file store, for a test that takes NATS away from
 * a mesh and gives it back; the shared server of the run stays untouched.
 */
export async function startOwnNats(label: string): Promise<OwnNats> {
  const storeDir = mkdtempSync(join(tmpdir(), `nats-${label}-`));
  const port = await freePort();
  let running: RunningNats | undefined = await startNats({ storeDir, port });
  const stop = async () => {
    await running?.stop();
    running = undefined;
  };
  return {
    url: running.url,
    stop,
    async start() {
      running ??= await startNats({ storeDir, port });
    },
    async remove() {
      await stop();
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Client, createClient, type Transport } from "@connectrpc/connect";
import { consoleTransport } from "@svc/local-mesh/console-client";
import { type Mesh, type ServiceName, startMesh } from "@svc/local-mesh/mesh";
import { ConsoleService } from "@svc/proto/console/v1/console_pb.js";
import { writeClockFile } from "./clock-file.ts";
import { type DocumentedFetch, documentedFetch } from "./documented-fetch.ts";
import { createTestDatabase, natsUrl, uniqueName } from "./index.ts";

export interface TestMesh extends Mesh {
  console: Client<typeof ConsoleService>;
  /** A transport to the console port carrying this mesh's operator credential, for the services' console clients. */
  consoleTransport(httpVersion?: "1.1" | "2"): Transport;
  /** The settings every process got: database, NATS, this mesh's own stream and subject prefix, clock file. */
  env: Record<string, string>;
  /** Moves the clock of every process of this mesh; `null` returns it to the system time. */
  setClock(at: Date | string | null): void;
  /** What the processes printed, for a failing test's message. */
  logs(): string;
  /**
   * `fetch` holding every answer of the gateway's public API to the document it serves (`documentedFetch`):
   * what every client of the public API in the tests calls. `stop()` fails if any answer was undocumented.
   */
  fetch: DocumentedFetch;
}

/**
 * The real mesh as separate processes on free ports, with its own database, its own event stream
 * and subjects, and its own clock file, so e2e files run side by side without seeing each other.
 * `env` adds settings to every process; each service reads only its own (`AGENTLINK_…` reaches agentlink).
 */
export async function startTestMesh(
  label: string,
  options: {
    only?: ServiceName[];
    clockAt?: Date | string;
    env?: Record<string, string>;
    /** Every line every process prints, as it comes (`logs()` keeps only the last 500). */
    onLog?: (line: string) => void;
  } = {},
): Promise<TestMesh> {
  const database = await createTestDatabase(label);
  const dir = mkdtempSync(join(tmpdir(), `mesh-${label}-`));
  const clockFile = join(dir, "clock");
  const setClock = (at: Date | string | null) => writeClockFile(clockFile, at);
  setClock(options.clockAt ?? null);
  const stream = uniqueName(label).toUpperCase();
  const lines: string[] = [];
  const env = {
    SVC_DATABASE_URL: database.url,
    SVC_NATS_URL: natsUrl(),
    SVC_EVENT_STREAM: stream,
    SVC_EVENT_SUBJECT_PREFIX: `ev_${stream.toLowerCase()}`,
    SVC_CLOCK_FILE: clockFile,
    SVC_LOG_LEVEL: "warn",
    ...options.env,
  };
  const mesh = await startMesh({
    env,
    ports: "free",
    only: options.only,
    log: (line) => {
      options.onLog?.(line);
      lines.push(line);
      if (lines.length > 500) lines.shift();
    },
  });
  const checkedFetch = documentedFetch(mesh.gatewayUrl);
  // Compiled while the test sets up; its first answer waits for it. A failure shows at that answer.
  checkedFetch.prepare().catch(() => undefined);
  return {
    ...mesh,
    env,
    fetch: checkedFetch,
    console: createClient(ConsoleService, consoleTransport(mesh.consoleUrl, mesh.consoleToken)),
    consoleTransport: (httpVersion = "2") => consoleTransport(mesh.consoleUrl, mesh.consoleToken, httpVersion),
    setClock,
    logs: () => lines.join("\n"),
    async stop() {
      await mesh.stop();
      await database.drop();
      rmSync(dir, { recursive: true, force: true });
      if (checkedFetch.undocumented.length > 0)
        throw new Error(`answers the OpenAPI document does not describe:\n${checkedFetch.undocumented.join("\n")}`);
    },
  };
}

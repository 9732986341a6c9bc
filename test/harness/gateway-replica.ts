import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { signInEnv } from "@svc/local-mesh/mesh";
import { freePort } from "@svc/local-mesh/process-tools";
import { type DocumentedFetch, documentedFetch } from "./documented-fetch.ts";
import type { TestMesh } from "./test-mesh.ts";

const gatewayEntry = fileURLToPath(new URL("../../gateway/src/server.ts", import.meta.url));

export interface GatewayReplica {
  url: string;
  consoleUrl: string;
  /** Every answer held to the document this replica serves. */
  fetch: DocumentedFetch;
  child: ChildProcess;
  /** What the process printed, for a failing test's message. */
  output: string[];
  /** SIGTERM, and waits for the exit. */
  stop(): Promise<void>;
}

/**
 * What a further gateway of `mesh` needs: the mesh's settings, the address of each of its services, and its
 * development identity provider, so that a person's session signs in on every replica.
 */
export function replicaEnvOf(mesh: TestMesh): Record<string, string> {
  return {
    ...mesh.env,
    ...signInEnv(mesh.devIdpIssuer),
    ...Object.fromEntries(
      Object.entries(mesh.urls).flatMap(([name, url]) =>
        name === "gateway" || url === undefined ? [] : [[`GATEWAY_${name.toUpperCase().replace("-", "_")}_URL`, url]],
      ),
    ),
  };
}

/**
 * One more gateway process, as a second replica behind one address is: `env` and its own free ports, the console
 * behind `consoleToken` (a fresh one unless given). It returns once `/readyz` answers, or throws with its output.
 */
export async function startGatewayReplica(
  env: Record<string, string>,
  consoleToken = randomBytes(32).toString("base64url"),
): Promise<GatewayReplica> {
  const [port, consolePort] = [await freePort(), await freePort()];
  const output: string[] = [];
  const child = spawn(process.execPath, [gatewayEntry], {
    env: {
      ...process.env,
      ...env,
      GATEWAY_PORT: String(port),
      GATEWAY_CONSOLE_PORT: String(consolePort),
      GATEWAY_CONSOLE_TOKEN: consoleToken,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout?.on("data", (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => output.push(chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  };
  const replica = {
    url,
    consoleUrl: `http://127.0.0.1:${consolePort}`,
    fetch: documentedFetch(url),
    child,
    output,
    stop,
  };
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && child.exitCode === null) {
    const ready = await fetch(`${url}/readyz`).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) return replica;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill("SIGKILL");
  throw new Error(`gateway replica did not become ready:\n${output.join("")}`);
}

import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startInfrastructure } from "../../deploy/local/src/infrastructure.ts";
import { ensureChromiumInstalled } from "./chromium.ts";

declare module "vitest" {
  export interface ProvidedContext {
    postgresUrl: string;
    natsUrl: string;
    chromiumPath: string;
  }
}

/**
 * One PostgreSQL and one nats-server for the whole run; each test file makes its own database and names.
 * Everything the suite needs is found or installed here, once, before any file runs.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = await mkdtemp(join(tmpdir(), "svc-test-"));
  const removeDir = () => rm(dir, { recursive: true, force: true });
  try {
    // mkdtemp makes the directory private; as root, PostgreSQL runs as the postgres user and must get in.
    await chmod(dir, 0o755);
    const log = (line: string) => console.log(`[test infrastructure] ${line}`);
    // Before the infrastructure, not beside it: two apt-get installs at once would fight over the dpkg lock.
    project.provide("chromiumPath", await ensureChromiumInstalled(log));
    const infrastructure = await startInfrastructure({ dir, durable: false, log });
    project.provide("postgresUrl", infrastructure.postgresUrl);
    project.provide("natsUrl", infrastructure.natsUrl);
    return async () => {
      await infrastructure.stop();
      await removeDir();
    };
  } catch (error) {
    await removeDir();
    throw error;
  }
}

import { execFile } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { createServer } from "node:net";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

export type Log = (line: string) => void;

export const silent: Log = () => {};

export function isRoot(): boolean {
  return process.getuid?.() === 0;
}

export function findExecutable(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

export type DebianProgram = {
  /** The executable looked up on PATH. */
  program: string;
  /** The Debian package that provides it. */
  debianPackage: string;
  /** What else would do, for the message when it cannot be installed here. */
  alternative: string;
};

/**
 * Returns the path of a program on PATH. When it is missing and we are root on a Debian-like machine,
 * installs its package with apt-get; otherwise fails at once with the command that would install it.
 */
export async function ensureDebianProgram(
  { program, debianPackage, alternative }: DebianProgram,
  log: Log = silent,
): Promise<string> {
  const found = findExecutable(program);
  if (found) return found;
  if (!isRoot() || !findExecutable("apt-get")) {
    throw new Error(
      `${program} is not on PATH. Install it (Debian/Ubuntu: \`sudo apt-get install -y ${debianPackage}\`) or ${alternative}.`,
    );
  }
  log(`${program} is missing; installing ${debianPackage} with apt-get`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const install = () => run("apt-get", ["install", "-y", debianPackage], { env });
  await install().catch(async () => {
    // A fresh machine may have no package lists yet.
    await run("apt-get", ["update"], { env });
    await install();
  });
  const installed = findExecutable(program);
  if (!installed) throw new Error(`apt-get installed ${debianPackage}, but ${program} is not on PATH`);
  return installed;
}

/** Runs a program to completion and returns its stdout; a failure's message carries its stderr. */
export async function run(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<string> {
  const { stdout } = await execFileAsync(command, args, { ...options, maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

/** Asks the kernel for a port that is free on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("could not read the port of a TCP listener");
  return address.port;
}

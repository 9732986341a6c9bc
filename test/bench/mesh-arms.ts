import { readdirSync, readFileSync } from "node:fs";
import { Agent } from "node:http";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import type { Mesh, MeshOptions, ServiceName } from "@svc/local-mesh/mesh";
import { createInternalClient } from "@svc/platform";
import { CredentialKind, Environment } from "@svc/proto/common/v1/caller_pb.js";
import { ConsoleService, KeyType } from "@svc/proto/console/v1/console_pb.js";
import { GateConsoleService, GateService, GateType } from "@svc/proto/gate/v1/gate_pb.js";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { consoleTransport } from "../harness/console-transport.ts";
import { median, startBenchMesh } from "./bench-infrastructure.ts";
import { mintAttestations, postgresProcesses, withChildren } from "./process-cpu.ts";

/**
 * A whole mesh for one arm of a comparison: its own PostgreSQL and NATS, and its processes started by the
 * mesh module of `root` (this checkout, or another commit's from `checkoutAt`), so each arm runs its own code.
 * An organization with a development secret key whose limits nothing reaches and a gate `bench` are made
 * through the console, so each arm can create verification links and verify attestation tokens.
 */
async function startArmMesh(root: string, env: Record<string, string>) {
  const { startMesh } = (await import(join(root, "deploy/local/src/mesh.ts"))) as {
    startMesh(options: MeshOptions): Promise<Mesh>;
  };
  const mesh = await startBenchMesh(undefined, { env, startMesh });
  const stop = () => mesh.stop();
  try {
    const transport = consoleTransport(mesh.consoleUrl, mesh.consoleToken);
    const console_ = createClient(ConsoleService, transport);
    const { organizationId } = await console_.createOrganization({ name: "bench" });
    const { keyId } = await console_.createKey({
      organizationId,
      environment: Environment.DEVELOPMENT,
      type: KeyType.SECRET,
    });
    for (const bucket of ["per_minute", "hourly", "daily", "in_flight"])
      await console_.setKeyLimits({ keyId, bucket, limit: 10_000_000 });
    await createClient(GateConsoleService, transport).createGate({
      organizationId,
      environment: Environment.DEVELOPMENT,
      key: "bench",
      type: GateType.HUMAN,
      status: "active",
    });
    const gate = createInternalClient(GateService, mesh.urls.gate!, { timeoutMs: 30_000 });
    const signing = createInternalClient(SigningService, mesh.urls.signing!, { timeoutMs: 30_000 });
    const caller = {
      organizationId,
      environment: Environment.DEVELOPMENT,
      credentialId: keyId,
      credentialKind: CredentialKind.SECRET_KEY,
    };
    return {
      gatewayUrl: mesh.gatewayUrl,
      databaseUrl: mesh.databaseUrl,
      /** Grant tokens straight from gate, as the gateway's create-session gets them, 200 at a time. */
      async grants(count: number): Promise<string[]> {
        const out: string[] = [];
        while (out.length < count)
          out.push(
            ...(await Promise.all(
              Array.from({ length: Math.min(200, count - out.length) }, () =>
                gate.createSession({ caller }).then((session) => session.anchorGrantToken),
              ),
            )),
          );
        return out;
      },
      attestations: (count: number) => mintAttestations(signing, count),
      /** Every process of the mesh (and any child) and of its PostgreSQL, as they are now. */
      processes: (): string[] => [
        ...withChildren(
          (Object.keys(mesh.urls) as ServiceName[]).flatMap((name) => {
            const pid = mesh.pid(name);
            return pid === undefined ? [] : [String(pid)];
          }),
        ),
        ...postgresProcesses(mesh.databaseUrl),
      ],
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

export type ArmMesh = Awaited<ReturnType<typeof startArmMesh>>;

/** Arms started side by side (each start mostly waits); if one fails, those that started are stopped. */
export async function startArmMeshes(arms: { root: string; env: Record<string, string> }[]): Promise<ArmMesh[]> {
  const started = await Promise.allSettled(arms.map((arm) => startArmMesh(arm.root, arm.env)));
  const failed = started.find((result) => result.status === "rejected");
  const meshes = started.flatMap((result) => (result.status === "fulfilled" ? [result.value] : []));
  if (failed === undefined) return meshes;
  await Promise.all(meshes.map((mesh) => mesh.stop()));
  throw failed.reason;
}

/**
 * On-CPU time of each process's threads so far, in µs, from their schedstat (nanoseconds). /proc/<pid>/stat
 * counts 10 ms ticks per process, which over a dozen processes and a round of a few hundred calls is an error of
 * several percent; a thread that ends within a round takes its time with it, which a Node process or a
 * PostgreSQL backend does not do while it serves.
 */
export function threadCpu(pids: string[]): Map<string, number> {
  const reading = new Map<string, number>();
  for (const pid of pids) {
    try {
      let nanoseconds = 0;
      for (const thread of readdirSync(`/proc/${pid}/task`))
        nanoseconds += Number(readFileSync(`/proc/${pid}/task/${thread}/schedstat`, "utf8").split(" ")[0]);
      reading.set(pid, nanoseconds / 1000);
    } catch {
      // gone since it was listed
    }
  }
  return reading;
}

/** CPU of `pids` since `before`; a process that started since (a PostgreSQL backend a pool opened) counts all of its own. */
export const cpuSince = (before: Map<string, number>, pids: string[]): number =>
  [...threadCpu(pids)].reduce((sum, [pid, micros]) => sum + micros - (before.get(pid) ?? 0), 0);

/**
 * Server CPU per operation of one arm's round: `operations` calls of `call`, `inFlight` at a time, then `settleMs`
 * with nothing sent, so that the work a call leaves behind (an outbox relayed, spans exported on their
 * schedule) is counted in its own round. The idle part costs both arms alike. Each round opens its own
 * connections: a kept-alive one left idle while the next round's inputs are made may be closed by the server
 * just as it is reused.
 */
export async function costedRound(
  arm: Pick<ArmMesh, "processes">,
  inputs: string[],
  inFlight: number,
  settleMs: number,
  call: (input: string, agent: Agent) => Promise<void>,
): Promise<{ cpuUsPerOp: number; opsPerSecond: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: inFlight });
  const before = threadCpu(arm.processes());
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < inputs.length) await call(inputs[next++]!, agent);
    }),
  ).finally(() => agent.destroy());
  const opsPerSecond = inputs.length / ((performance.now() - started) / 1000);
  await new Promise((resolve) => setTimeout(resolve, settleMs));
  return { cpuUsPerOp: cpuSince(before, arm.processes()) / inputs.length, opsPerSecond };
}

export type Figures = { cpuUsPerOp: number; opsPerSecond: number };

/** Each arm's figures, in round order, from `measure`, which gives one round's figures in the order of `arms`. */
async function inRounds<Arm extends string>(
  arms: readonly Arm[],
  rounds: number,
  measure: (index: number) => Promise<Figures[]>,
): Promise<Record<Arm, Figures[]>> {
  const figures = Object.fromEntries(arms.map((arm) => [arm, []])) as unknown as Record<Arm, Figures[]>;
  for (let index = 0; index < rounds; index++) {
    const measured = await measure(index);
    for (const [at, arm] of arms.entries()) figures[arm].push(measured[at]!);
    process.stderr.write(
      `round ${index + 1} of ${rounds}: ${arms.map((arm, at) => `${arm} ${Math.round(measured[at]!.cpuUsPerOp)} µs/op`).join(", ")}\n`,
    );
  }
  return figures;
}

/**
 * One round on every arm at once: every arm's inputs made first, then every arm's calls started together, the
 * arm started first rotating with `round`. Made inside each arm's own round, the first arm's inputs were ready
 * first, so its calls always started first and another's last calls ran alone (tracing-off read 1.022 with every
 * one of six blocks above 1, then 1.003 so). Each arm's figures, in the order of `arms`.
 */
export async function atOnce<Arm extends string>(
  arms: readonly Arm[],
  round: number,
  inputs: (arm: Arm) => Promise<string[]>,
  phase: (arm: Arm, inputs: string[]) => Promise<Figures>,
): Promise<Figures[]> {
  const made = await Promise.all(arms.map((arm) => inputs(arm)));
  const figures: Figures[] = [];
  await Promise.all(
    arms.map(async (_, k) => {
      const at = (round + k) % arms.length;
      figures[at] = await phase(arms[at]!, made[at]!);
    }),
  );
  return figures;
}

/**
 * Arms measured at the same time, each round's calls to every arm sent together (`atOnce`): the machine's load,
 * which on a shared machine moves within seconds, weighs on both figures of a round alike, where alternating
 * rounds would give each arm a different moment. Each arm's figures, in round order.
 */
export function simultaneous<Arm extends string>(
  arms: readonly Arm[],
  rounds: number,
  inputs: (arm: Arm) => Promise<string[]>,
  phase: (arm: Arm, inputs: string[]) => Promise<Figures>,
): Promise<Record<Arm, Figures[]>> {
  return inRounds(arms, rounds, (index) => atOnce(arms, index, inputs, phase));
}

/**
 * The median of the per-round ratios of `over` to `under` with their interquartile range (how far a verdict
 * near the goal can be trusted), and each arm's median CPU per operation.
 */
export function cpuRatio(
  over: { cpuUsPerOp: number }[],
  under: { cpuUsPerOp: number }[],
): { ratio: number; ratio_iqr: [number, number]; over_cpu_us: number; under_cpu_us: number; round_ratios: number[] } {
  const ratios = over.map((o, index) => o.cpuUsPerOp / under[index]!.cpuUsPerOp);
  const sorted = [...ratios].sort((a, b) => a - b);
  const quartile = (q: number) => round3(sorted[Math.round((sorted.length - 1) * q)]!);
  return {
    ratio: round3(median(ratios)),
    ratio_iqr: [quartile(0.25), quartile(0.75)],
    over_cpu_us: Math.round(median(over.map((o) => o.cpuUsPerOp))),
    under_cpu_us: Math.round(median(under.map((u) => u.cpuUsPerOp))),
    round_ratios: ratios.map(round3),
  };
}

const round3 = (n: number) => Math.round(n * 1000) / 1000;

import { fileURLToPath } from "node:url";
import { startOtlpReceiver } from "../harness/otlp-receiver.ts";
import { postCreateLink } from "./gateway-calls.ts";
import { type ArmMesh, atOnce, costedRound, cpuRatio, simultaneous, startArmMeshes } from "./mesh-arms.ts";

/**
 * What tracing at 100% sampling costs the servers: two meshes of this checkout, one exporting every span over
 * OTLP/HTTP to a receiver in this process (OTEL_TRACES_SAMPLER=always_on), one with tracing off, each with its
 * own PostgreSQL and NATS. Each round sends the same number of POST /v1/sdk/create-verification-link through
 * both gateways at the same time (16 in flight each), and then waits out the exporters' 500 ms schedule, so a
 * round's spans are exported within it. Both at once, not one after the other: the two arms' figures of a round
 * then share the machine's load of that moment (alternating rounds read 1.05 and 1.21 from one commit, their
 * round ratios spread 0.8 to 1.6; at once, the spread roughly halved). Server CPU per create-link is that of every mesh
 * process and its PostgreSQL, from /proc; this process (the load and the receiver) is not counted.
 * `ratio` is the median of the rounds' ratios, traced to untraced. `spans_per_op` and `exported` say the traced
 * arm paid for every span: the gateway's operation spans received, per create-link it answered.
 */
// The median of 15 ratios moves less than that of 7. A round's CPU counts the settle after it, when an idle mesh
// spends 0 to 23 ms in any 0.7 s (pollers and sweeps), a twentieth of a round of 500 create-links: at 500, rounds
// of one run read 0.78 to 1.41 and three runs 1.18, 1.12 and 1.12 (tracing-off's rounds of verify-token, the same
// method with this checkout in both arms, read 0.77 to 1.24 at 500 and 0.98 to 1.06 at 2,000).
const rounds = 15;
const perRound = 2000;
const inFlight = 16;
const settleMs = 1000;

const root = fileURLToPath(new URL("../../", import.meta.url));
const receiver = await startOtlpReceiver();
const arms: Partial<Record<"traced" | "untraced", ArmMesh>> = {};
try {
  [arms.traced, arms.untraced] = await startArmMeshes([
    { root, env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: "always_on" } },
    { root, env: {} },
  ]);
  const operation = "POST /v1/sdk/create-verification-link";
  const operationSpans = () => receiver.spans.filter((s) => s.service === "gateway" && s.name === operation).length;

  const names = ["traced", "untraced"] as const;
  const grants = (count: number) => async (name: (typeof names)[number]) => {
    const made = await arms[name]!.grants(count);
    // The grants' own spans leave on the exporters' schedule before the round starts counting.
    await new Promise((resolve) => setTimeout(resolve, settleMs));
    return made;
  };
  const creates = (name: (typeof names)[number], made: string[]) =>
    costedRound(arms[name]!, made, inFlight, settleMs, (grant, agent) =>
      postCreateLink(arms[name]!.gatewayUrl, grant, agent),
    );
  // Warm both (JIT, pools, plans) with a round that is not counted.
  await atOnce(names, 0, grants(200), creates);
  const spansBefore = receiver.spans.length;
  const operationSpansBefore = operationSpans();
  const figures = await simultaneous(names, rounds, grants(perRound), creates);
  const sent = rounds * perRound;

  const { ratio, ratio_iqr, over_cpu_us, under_cpu_us, round_ratios } = cpuRatio(figures.traced, figures.untraced);
  console.log(
    JSON.stringify({
      name: "tracing-on",
      ratio,
      ratio_iqr,
      traced_cpu_us: over_cpu_us,
      untraced_cpu_us: under_cpu_us,
      round_ratios,
      spans_per_op: Math.round(((receiver.spans.length - spansBefore) / sent) * 10) / 10,
      exported: (operationSpans() - operationSpansBefore) / sent,
      ops_per_second: {
        traced: figures.traced.map((f) => Math.round(f.opsPerSecond)),
        untraced: figures.untraced.map((f) => Math.round(f.opsPerSecond)),
      },
      route: operation,
      rounds,
      per_round: perRound,
      in_flight: inFlight,
    }),
  );
} finally {
  await Promise.all([arms.traced?.stop(), arms.untraced?.stop()]);
  await receiver.close();
}

import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { postVerifyToken } from "../../gateway/bench/verify-token-post.ts";
import { checkoutAt } from "./baseline-checkout.ts";
import { postCreateLink } from "./gateway-calls.ts";
import { type ArmMesh, costedRound, cpuRatio, type Figures, startArmMeshes } from "./mesh-arms.ts";

/**
 * What tracing costs while it is off, as the goal states it: the edge route's server CPU with tracing off stays
 * within 3% of the previous commit's, on the same machine. A mesh of this checkout and one of the baseline
 * (`checkoutAt`), both without OTEL_EXPORTER_OTLP_ENDPOINT, each with its own PostgreSQL and NATS. The baseline
 * is SVC_BENCH_BASELINE, by default the first parent of this commit (or of SVC_BENCH_HERE's).
 *
 * It was the main-line commit before tracing until session 24. Against it the verdict flipped between runs of one
 * commit (0.97, 0.98 and 1.04 in one `--repeat 3`): the two meshes differed by two months of code besides
 * tracing, and how two different meshes share two cores moves whole runs by about 4% (rounds 0.8 to 1.2), where
 * the same code in both arms reads 0.98 to 1.06 a round. Off, no tracing code runs but a few `tracingOn()` checks
 * (the SDK is not loaded and no interceptor is installed), so what the merge that brought tracing cost was
 * measured once against its own parent (`SVC_BENCH_HERE=e1ad3e0 SVC_BENCH_BASELINE=e1ad3e0^1`: verify-token 0.93
 * and 0.993, create-link 1.00 and 1.095; deploy/observability/README.md), and every commit since is held to the
 * commit before it. SVC_BENCH_BASELINE=cfb67e9 still measures against the commit before tracing.
 *
 * Each round sends POST /v1/sdk/verify-token (the edge benchmark's route) through both gateways at the same time,
 * 16 in flight each, then, once both are done, create-verification-link the same way: both arms' figures of a
 * round share the machine's load of that moment (alternating rounds, 7 of them, spread their ratios from 0.75 to
 * 1.6). The phases wait for each other, so that one arm's links never meet the other's verifies. A round is 2,000
 * verifies: an idle mesh spends 0 to 23 ms of CPU in any 0.7 s (pollers and sweeps), a tenth of a round of 500,
 * and with the same code in both arms rounds of 500 read 0.77 to 1.24 and rounds of 2,000 0.98 to 1.06 (one 1.16).
 * Server CPU per request is that of every mesh process and its PostgreSQL, from /proc. `ratio` is the median of the rounds'
 * ratios for verify-token, this checkout to the baseline, with their interquartile range (`ratio_iqr`);
 * `create_link_ratio` the same for create-link.
 *
 * 45 rounds, not 15: a round's ratio spreads about ±6% around the arms' true ratio (same code in both arms, session
 * 27: rounds 0.83 to 1.16), so the median of 15 moved by about 4% between runs (1.038, 0.939, 1.011 of one
 * commit), more than the 3% it judges; three times the rounds narrow that to about 1.5% (interquartile 0.983 to
 * 1.038, median 1.006, in 2 min 21 s).
 */
const rounds = 45;
const tokensPerRound = 2000;
const linksPerRound = 200;
const inFlight = 16;
const settleMs = 500;

const root = fileURLToPath(new URL("../../", import.meta.url));
const git = (...args: string[]) => execFileSync("git", args, { cwd: root, encoding: "utf8" }).trim();
/** SVC_BENCH_HERE puts another commit in this checkout's place, to see which change between the two costs what. */
const hereRef = process.env.SVC_BENCH_HERE;
const hereRoot = hereRef === undefined ? root : checkoutAt(hereRef).root;
const baselineRef = process.env.SVC_BENCH_BASELINE ?? `${hereRef ?? "HEAD"}^1`;
const baseline = checkoutAt(baselineRef);

const arms: Partial<Record<"here" | "baseline", ArmMesh>> = {};
try {
  [arms.here, arms.baseline] = await startArmMeshes([
    { root: hereRoot, env: {} },
    { root: baseline.root, env: {} },
  ]);
  const verifyRound = async (arm: ArmMesh, count: number) =>
    costedRound(arm, await arm.attestations(count), inFlight, settleMs, (token, agent) =>
      postVerifyToken(arm.gatewayUrl, token, agent),
    );
  const linkRound = async (arm: ArmMesh, count: number) =>
    costedRound(arm, await arm.grants(count), inFlight, settleMs, (grant, agent) =>
      postCreateLink(arm.gatewayUrl, grant, agent),
    );
  await Promise.all(
    [arms.here!, arms.baseline!].map(async (arm) => {
      await verifyRound(arm, 400);
      await linkRound(arm, 200);
    }),
  );
  const names = ["here", "baseline"] as const;
  const tokens: Record<(typeof names)[number], Figures[]> = { here: [], baseline: [] };
  const links: Record<(typeof names)[number], Figures[]> = { here: [], baseline: [] };
  for (let round = 0; round < rounds; round++) {
    const verified = await Promise.all(names.map((name) => verifyRound(arms[name]!, tokensPerRound)));
    const linked = await Promise.all(names.map((name) => linkRound(arms[name]!, linksPerRound)));
    names.forEach((name, index) => {
      tokens[name].push(verified[index]!);
      links[name].push(linked[index]!);
    });
  }

  const verify = cpuRatio(tokens.here, tokens.baseline);
  const link = cpuRatio(links.here, links.baseline);
  console.log(
    JSON.stringify({
      name: "tracing-off",
      ratio: verify.ratio,
      ratio_iqr: verify.ratio_iqr,
      here_cpu_us: verify.over_cpu_us,
      baseline_cpu_us: verify.under_cpu_us,
      round_ratios: verify.round_ratios,
      create_link_ratio: link.ratio,
      create_link_ratio_iqr: link.ratio_iqr,
      create_link_here_cpu_us: link.over_cpu_us,
      create_link_baseline_cpu_us: link.under_cpu_us,
      create_link_round_ratios: link.round_ratios,
      baseline: `${baselineRef} (${baseline.commit.slice(0, 12)})`,
      here:
        hereRef === undefined
          ? git("rev-parse", "--short=12", "HEAD")
          : `${hereRef} (${checkoutAt(hereRef).commit.slice(0, 12)})`,
      route: "POST /v1/sdk/verify-token",
      rounds,
      per_round: { verify_token: tokensPerRound, create_link: linksPerRound },
      in_flight: inFlight,
    }),
  );
} finally {
  await Promise.all([arms.here?.stop(), arms.baseline?.stop()]);
}

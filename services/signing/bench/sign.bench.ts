/**
 * Attestation signing CPU, ours against jose's SignJWT on the same key and the same claims.
 * Prints one JSON line: {"name":"sign-attestation","ours_cpu_us":…,"jose_cpu_us":…,"ratio":…}, where ratio is
 * the median over interleaved rounds of jose's CPU per signature divided by ours.
 * Run: node services/signing/bench/sign.bench.ts [rounds]
 */
import { createPrivateKey, randomUUID } from "node:crypto";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { SignJWT } from "jose";
import { type AttestationInput, attestationClaims, signAttestation } from "../src/attestation-token.ts";
import { createSigner } from "../src/compact-jws.ts";
import { generateSigningKey } from "../src/key-generation.ts";

setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

const issuer = "http://127.0.0.1:8080";
const generated = generateSigningKey();
const privateKey = createPrivateKey({ key: generated.pkcs8, format: "der", type: "pkcs8" });
const signer = createSigner(generated.kid, privateKey);
const input: AttestationInput = {
  requestId: `req_${"0123456789abcdef".repeat(2)}`,
  verified: true,
  organizationId: "org_bench",
  audience: "org_bench",
  verifiedAt: new Date(),
  trusted: true,
  trustedSince: new Date("2026-01-01T00:00:00Z"),
};

const ours = async () => {
  signAttestation(input, signer, { issuer, now: new Date() });
};
// jose gets the same work to do: the same claims (fresh nonce included) and the same header.
const jose = async () => {
  await new SignJWT(attestationClaims(input, { issuer, now: new Date(), nonce: randomUUID() }))
    .setProtectedHeader({ alg: "ES256", kid: generated.kid, typ: "JWT" })
    .sign(privateKey);
};

const signaturesPerRound = 1000;
/**
 * CPU microseconds of this process per signature. Wall-clock ops/s swung with the other processes on the machine;
 * the collection before (outside) and after (inside) makes each arm pay for its own garbage, not the other's.
 */
async function cpuPerSignature(work: () => Promise<void>): Promise<number> {
  collectGarbage();
  const before = process.cpuUsage();
  for (let i = 0; i < signaturesPerRound; i++) await work();
  collectGarbage();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / signaturesPerRound;
}

const median = (values: readonly number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

const rounds = Number(process.argv[2] ?? 15);
await cpuPerSignature(ours);
await cpuPerSignature(jose);
const oursCpu: number[] = [];
const joseCpu: number[] = [];
const ratios: number[] = [];
for (let round = 0; round < rounds; round++) {
  // The order swaps each round, so neither arm always runs on the heap or the CPU the other left behind.
  const first = round % 2 === 0 ? ours : jose;
  const firstCpu = await cpuPerSignature(first);
  const secondCpu = await cpuPerSignature(first === ours ? jose : ours);
  const [o, j] = first === ours ? [firstCpu, secondCpu] : [secondCpu, firstCpu];
  oursCpu.push(o);
  joseCpu.push(j);
  ratios.push(j / o);
}
console.log(
  JSON.stringify({
    name: "sign-attestation",
    rounds,
    ours_cpu_us: Number(median(oursCpu).toFixed(1)),
    jose_cpu_us: Number(median(joseCpu).toFixed(1)),
    ratio: Number(median(ratios).toFixed(2)),
    min_round_ratio: Number(Math.min(...ratios).toFixed(2)),
    max_round_ratio: Number(Math.max(...ratios).toFixed(2)),
  }),
);

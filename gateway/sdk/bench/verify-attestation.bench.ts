/**
 * CPU of `verifyAttestation` with a warm key set against one raw `crypto.verify` of the same token: node:crypto,
 * the key imported once, the signing input and the signature decoded beforehand, the signature in DER, which
 * OpenSSL checks in about 60% of the CPU of the token's own r‖s form (`dsaEncoding: "ieee-p1363"`). Every token is fresh
 * (its own request id), since the verifier refuses a second check of one. Each round verifies the same batch
 * with both arms, in alternating order, and the figure is the median of the rounds' ratios. Prints one line:
 * {"name":"sdk-verify-attestation","ours_cpu_us":…,"raw_cpu_us":…,"ratio":…}.
 * Run: node gateway/sdk/bench/verify-attestation.bench.ts [tokens per round]
 */
import { createPublicKey, verify } from "node:crypto";
import { derSignature as der } from "../src/es256.ts";
import { Verifier } from "../src/index.ts";
import { es256Key, keySetServer } from "../test/key-server.ts";
import { cpuPerOp, median } from "./cpu.ts";

const issuer = "https://api.svc.test";
const organizationId = "org_7f3a";
const key = await es256Key("k1");
const server = await keySetServer([key.jwk]);
const verifier = new Verifier({ issuer, jwksUrl: server.url });
const publicKey = createPublicKey({ key: key.jwk, format: "jwk" });

let sequence = 0;
/** Tokens as the signing service mints them: one request each, issued now, living 120 seconds. */
async function freshTokens(count: number): Promise<string[]> {
  const issuedAt = Math.floor(Date.now() / 1000);
  return Promise.all(
    Array.from({ length: count }, () =>
      key.sign({
        iss: issuer,
        request_id: `req_${(sequence++).toString(16).padStart(32, "0")}`,
        verified: true,
        organization_id: organizationId,
        audience: organizationId,
        nonce: crypto.randomUUID(),
        timestamp: new Date(issuedAt * 1000).toISOString(),
        issued_at: issuedAt,
        expires_at: issuedAt + 120,
        exp: issuedAt + 120,
        trusted: false,
      }),
    ),
  );
}

const ours = async (tokens: string[]) => {
  for (const token of tokens) {
    const result = await verifier.verifyAttestation(token, { organizationId, maxAgeSeconds: 60 });
    if (!result.valid) throw new Error(`the bench token was refused: ${result.reason}`);
  }
};

const raw = async (tokens: string[]) => {
  const prepared = tokens.map((token) => {
    const dot = token.lastIndexOf(".");
    return { input: Buffer.from(token.slice(0, dot)), signature: der(Buffer.from(token.slice(dot + 1), "base64url")) };
  });
  return async () => {
    for (const { input, signature } of prepared)
      if (!verify("sha256", input, publicKey, signature)) throw new Error("the raw baseline did not verify");
  };
};

const perRound = Number(process.argv[2] ?? 4000);
const rounds = 15;
try {
  await ours(await freshTokens(500));
  await (await raw(await freshTokens(500)))();
  const ratios: number[] = [];
  const spent = { ours: [] as number[], raw: [] as number[] };
  for (let round = 0; round < rounds; round++) {
    const tokens = await freshTokens(perRound);
    const baseline = await raw(tokens);
    const arms = [
      async () => spent.ours.push(await cpuPerOp(() => ours(tokens), perRound)),
      async () => spent.raw.push(await cpuPerOp(baseline, perRound)),
    ];
    for (const arm of round % 2 === 0 ? arms : arms.reverse()) await arm();
    ratios.push((spent.ours.at(-1) as number) / (spent.raw.at(-1) as number));
  }
  console.log(
    JSON.stringify({
      name: "sdk-verify-attestation",
      ours_cpu_us: Number(median(spent.ours).toFixed(1)),
      raw_cpu_us: Number(median(spent.raw).toFixed(1)),
      ratio: Number(median(ratios).toFixed(2)),
    }),
  );
} finally {
  await server.close();
}

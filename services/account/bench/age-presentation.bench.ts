/**
 * CPU of verifying one SD-JWT VC presentation with its KB-JWT (our verifier, status list included)
 * against two raw crypto.subtle.verify calls (ECDSA P-256, SHA-256) over inputs of the same sizes:
 * the issuer's JWS and the KB-JWT. Prints one JSON line:
 * {"name":"age-presentation","ours_cpu_us":…,"raw_cpu_us":…,"ratio":…}, where ratio is the median over
 * interleaved rounds (which arm goes first swaps each round) of our CPU per presentation over the raw pair's.
 * Run: node services/account/bench/age-presentation.bench.ts [iterations per round]
 */
import { createHash, generateKeyPairSync, sign, webcrypto } from "node:crypto";
import { ManualClock } from "@svc/platform";
import { cpuPerOp, median } from "../../../gateway/sdk/bench/cpu.ts";
import { verifySdJwtVcPresentation } from "../src/age/wallet/sd-jwt-vc-verifier.ts";
import { walletDependencies } from "../src/age/wallet/wallet-setup.ts";
import { settings } from "../src/config.ts";

const now = new Date("2026-11-22T10:00:00Z");
const clientId = "https://verify.example";
const nonce = "bench-nonce-0123456789abcdefghijklmnopqrstuv";
const wallet = walletDependencies({
  verifierKey: settings.verifierKey.default as Buffer,
  verifierCertificate: settings.verifierCertificate.default as Buffer,
  devWalletIssuerKey: Buffer.alloc(32, 5),
  walletIssuers: [],
  walletIacaRoots: [],
  walletCredentialTypes: ["urn:eudi:pid:1"],
  clock: new ManualClock(now),
});

const holder = generateKeyPairSync("ec", { namedCurve: "P-256" });
const credential = await wallet.devIssuers.issue({
  birthDate: "1996-05-17",
  holderJwk: holder.publicKey.export({ format: "jwk" }),
  issuer: "development",
  format: "sd-jwt-vc",
  revoked: false,
  now,
});
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
const [issuerJwt = "", ...disclosures] = credential.split("~").filter((part) => part !== "");
const asked = disclosures.filter((d) => JSON.parse(Buffer.from(d, "base64url").toString())[1] === "18");
const presented = `${[issuerJwt, ...asked].join("~")}~`;
const bindingInput = `${b64({ typ: "kb+jwt", alg: "ES256" })}.${b64({
  iat: Math.floor(now.getTime() / 1000),
  aud: clientId,
  nonce,
  sd_hash: createHash("sha256").update(presented).digest("base64url"),
})}`;
const bindingSignature = sign("sha256", Buffer.from(bindingInput), {
  key: holder.privateKey,
  dsaEncoding: "ieee-p1363",
});
const vpToken = JSON.stringify({ age: [`${presented}${bindingInput}.${bindingSignature.toString("base64url")}`] });
const expected = { nonce, audience: clientId, thresholds: [18], credentialTypes: ["urn:eudi:pid:1"], now };

const ours = async () => {
  const verification = await verifySdJwtVcPresentation(vpToken, expected, wallet.verifier);
  if (!verification.accepted) throw new Error(`the bench presentation was refused: ${verification.reason}`);
};

// The raw baseline: the same two signatures over the same bytes, keys imported once beforehand.
const algorithm = { name: "ECDSA", hash: "SHA-256" };
const importKey = (jwk: webcrypto.JsonWebKey) =>
  webcrypto.subtle.importKey("jwk", jwk, { name: "ECDSA", namedCurve: "P-256" }, false, ["verify"]);
const issuerKey = await importKey(wallet.devIssuers.trusted()?.keys[0] as webcrypto.JsonWebKey);
const holderKey = await importKey(holder.publicKey.export({ format: "jwk" }) as webcrypto.JsonWebKey);
const issuerInput = Buffer.from(issuerJwt.slice(0, issuerJwt.lastIndexOf(".")));
const issuerSignature = Buffer.from(issuerJwt.slice(issuerJwt.lastIndexOf(".") + 1), "base64url");
const raw = async () => {
  const both = await Promise.all([
    webcrypto.subtle.verify(algorithm, issuerKey, issuerSignature, issuerInput),
    webcrypto.subtle.verify(algorithm, holderKey, bindingSignature, Buffer.from(bindingInput)),
  ]);
  if (!both.every(Boolean)) throw new Error("the raw baseline did not verify");
};

const repeatedly = (work: () => Promise<void>, iterations: number) => async () => {
  for (let i = 0; i < iterations; i++) await work();
};

const iterations = Number(process.argv[2] ?? 1000);
const rounds = 11;
// Warm up (JIT tiers, the thread pool) before anything is counted.
await cpuPerOp(repeatedly(ours, 500), 500);
await cpuPerOp(repeatedly(raw, 500), 500);
const spent = { ours: [] as number[], raw: [] as number[] };
const ratios: number[] = [];
for (let round = 0; round < rounds; round++) {
  const arms = [
    async () => spent.ours.push(await cpuPerOp(repeatedly(ours, iterations), iterations)),
    async () => spent.raw.push(await cpuPerOp(repeatedly(raw, iterations), iterations)),
  ];
  // The order swaps each round, so neither arm always runs on the heap or the CPU the other left behind.
  for (const arm of round % 2 === 0 ? arms : arms.reverse()) await arm();
  ratios.push((spent.ours.at(-1) as number) / (spent.raw.at(-1) as number));
}
console.log(
  JSON.stringify({
    name: "age-presentation",
    rounds,
    ours_cpu_us: Math.round(median(spent.ours)),
    raw_cpu_us: Math.round(median(spent.raw)),
    ratio: Number(median(ratios).toFixed(2)),
    min_round_ratio: Number(Math.min(...ratios).toFixed(2)),
    max_round_ratio: Number(Math.max(...ratios).toFixed(2)),
  }),
);

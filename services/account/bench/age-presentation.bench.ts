/**
 * CPU of verifying one SD-JWT VC presentation with its KB-JWT (our verifier, status list included)
 * against two raw crypto.subtle.verify calls (ECDSA P-256, SHA-256) over inputs of the same sizes:
 * the issuer's JWS and the KB-JWT. Prints one JSON line:
 * {"name":"age-presentation","ours_cpu_us":…,"raw_cpu_us":…,"ratio":…}.
 * Run: node services/account/bench/age-presentation.bench.ts [iterations per round]
 */
import { createHash, generateKeyPairSync, sign, webcrypto } from "node:crypto";
import { ManualClock } from "@svc/platform";
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

/** CPU microseconds (user + system, every thread of the process) per operation over `iterations`. */
async function cpuPerOp(work: () => Promise<void>, iterations: number): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < iterations; i++) await work();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / iterations;
}

const iterations = Number(process.argv[2] ?? 2000);
await cpuPerOp(ours, 200);
await cpuPerOp(raw, 200);
// Alternating rounds, best of each, so a burst of noise on the machine does not decide the ratio.
const best = { ours: Number.POSITIVE_INFINITY, raw: Number.POSITIVE_INFINITY };
for (let round = 0; round < 3; round++) {
  best.ours = Math.min(best.ours, await cpuPerOp(ours, iterations));
  best.raw = Math.min(best.raw, await cpuPerOp(raw, iterations));
}
console.log(
  JSON.stringify({
    name: "age-presentation",
    ours_cpu_us: Math.round(best.ours),
    raw_cpu_us: Math.round(best.raw),
    ratio: Number((best.ours / best.raw).toFixed(2)),
  }),
);

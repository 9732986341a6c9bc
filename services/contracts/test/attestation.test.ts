import { createHash, generateKeyPairSync, sign } from "node:crypto";
import { ManualClock } from "@svc/platform/clock";
import { describe, expect, it } from "vitest";
import { type AttestationLedgerCheck, checkAttestation } from "../src/attestation.ts";

const issuer = "https://api.example";
const kid = "key-1";
const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
/** The order of P-256's group: (r, n − s) is a second valid signature of every message. */
const groupOrder = BigInt("0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");

const segment = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

function token(claims: Record<string, unknown>, header: Record<string, unknown> = { alg: "ES256", kid, typ: "JWT" }) {
  const input = `${segment(header)}.${segment(claims)}`;
  const signature = sign("sha256", Buffer.from(input), { key: privateKey, dsaEncoding: "ieee-p1363" });
  return `${input}.${signature.toString("base64url")}`;
}

const expiresAt = new Date("2026-11-20T10:02:00Z");
const claims = {
  iss: issuer,
  request_id: `req_${"a".repeat(32)}`,
  verified: true,
  organization_id: "org_a",
  exp: expiresAt.getTime() / 1000,
  expires_at: expiresAt.getTime() / 1000,
};

/** The single-token path the gateway runs: the ledger is a list of what was recorded, answering `first` as told. */
function checker(clock: ManualClock, first = true, onLookup: () => void = () => {}) {
  const recorded: AttestationLedgerCheck[] = [];
  return {
    recorded,
    check: (jwt: string, audience?: string) =>
      checkAttestation(jwt, audience, {
        keys: {
          lookup: async (wanted) => {
            onLookup();
            return { issuer, key: wanted === kid ? publicKey : undefined };
          },
        },
        record: async (check) => {
          recorded.push(check);
          return first;
        },
        clock,
      }),
  };
}

describe("checkAttestation, one token through every rule", () => {
  it("records a valid token's payload digest and expiry, and answers its claims", async () => {
    const { check, recorded } = checker(new ManualClock("2026-11-20T10:00:00Z"));
    const jwt = token(claims);
    expect(await check(jwt, "org_a")).toEqual({ kind: "valid", claims, replayed: false });
    expect(recorded).toEqual([{ payloadHash: createHash("sha256").update(jwt.split(".")[1]!).digest(), expiresAt }]);
  });

  it("keys the ledger on the payload: the malleated signature (r, n − s) of a token is the same token", async () => {
    const { check, recorded } = checker(new ManualClock("2026-11-20T10:00:00Z"));
    const jwt = token(claims);
    const [header, payload, signature] = jwt.split(".") as [string, string, string];
    const raw = Buffer.from(signature, "base64url");
    const s = BigInt(`0x${raw.subarray(32).toString("hex")}`);
    const flipped = Buffer.from((groupOrder - s).toString(16).padStart(64, "0"), "hex");
    const twin = `${header}.${payload}.${Buffer.concat([raw.subarray(0, 32), flipped]).toString("base64url")}`;
    expect(twin).not.toBe(jwt);
    expect(await check(jwt)).toMatchObject({ kind: "valid" });
    expect(await check(twin)).toMatchObject({ kind: "valid" });
    expect(recorded[0]!.payloadHash.equals(recorded[1]!.payloadHash)).toBe(true);
  });

  it("a check the ledger did not call first is reported before 15 November 2026 and refused from then", async () => {
    const before = checker(new ManualClock("2026-11-14T23:59:59Z"), false);
    const early = { ...claims, exp: Date.parse("2026-11-15T00:01:00Z") / 1000 };
    expect(await before.check(token(early))).toEqual({ kind: "valid", claims: early, replayed: true });
    const after = checker(new ManualClock("2026-11-20T10:00:00Z"), false);
    expect(await after.check(token(claims))).toEqual({ kind: "invalid", reason: "replayed", claims, replayed: true });
  });

  it("reads the clock for the expiry once the key is known, and records nothing it refused", async () => {
    const clock = new ManualClock("2026-11-20T10:01:59Z");
    // A first check of a process waits for the key set: the expiry is judged at the instant after that wait.
    const { check, recorded } = checker(clock, true, () => clock.set(new Date("2026-11-20T10:02:00Z")));
    expect(await check(token(claims))).toEqual({
      kind: "invalid",
      reason: "expired",
      claims,
      expiredAt: expiresAt,
      replayed: false,
    });
    expect(await check(token({ ...claims, iss: "https://elsewhere.example" }))).toMatchObject({
      reason: "wrong_issuer",
    });
    expect(await check(token(claims, { alg: "ES256", kid: "key-2" }))).toMatchObject({ reason: "unknown_key" });
    const [h, p] = token(claims).split(".");
    expect(await check(`${h}.${p}.${Buffer.alloc(64, 1).toString("base64url")}`)).toEqual({
      kind: "invalid",
      reason: "bad_signature",
      replayed: false,
    });
    expect(recorded).toEqual([]);
  });
});

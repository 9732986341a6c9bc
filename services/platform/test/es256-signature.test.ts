import { generateKeyPairSync, sign, verify } from "node:crypto";
import { describe, expect, it } from "vitest";
import { derToJose, joseToDer, SignatureEncodingError } from "../src/es256-signature.ts";

const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });

/** Lengths of the r and s INTEGER bodies in a DER signature. */
function integerLengths(der: Buffer): [number, number] {
  const r = der[3] ?? 0;
  return [r, der[5 + r] ?? 0];
}

describe("DER and raw (JOSE) ECDSA signatures", () => {
  it("converts what OpenSSL signs into a signature Node checks in ieee-p1363 form, and back to the same DER", () => {
    for (let i = 0; i < 300; i++) {
      const data = Buffer.from(`message ${i}`);
      const der = sign("sha256", data, privateKey);
      const raw = derToJose(der);
      expect(raw).toHaveLength(64);
      expect(verify("sha256", data, { key: publicKey, dsaEncoding: "ieee-p1363" }, raw)).toBe(true);
      expect(joseToDer(raw).equals(der)).toBe(true);
    }
  });

  it("handles real signatures whose r or s is shorter than 32 bytes or needs a leading 0x00", () => {
    const seen = { short: 0, padded: 0 };
    for (let i = 0; i < 20_000 && (seen.short < 3 || seen.padded < 3); i++) {
      const data = Buffer.from(`edge ${i}`);
      const der = sign("sha256", data, privateKey);
      const lengths = integerLengths(der);
      const short = lengths.some((n) => n < 32);
      const padded = lengths.some((n) => n === 33);
      if (!short && !padded) continue;
      if (short) seen.short++;
      if (padded) seen.padded++;
      const raw = derToJose(der);
      expect(raw).toHaveLength(64);
      expect(verify("sha256", data, { key: publicKey, dsaEncoding: "ieee-p1363" }, raw)).toBe(true);
      expect(joseToDer(raw).equals(der)).toBe(true);
    }
    expect(seen.short).toBeGreaterThanOrEqual(3);
    expect(seen.padded).toBeGreaterThanOrEqual(3);
  });

  it("right-aligns a hand-made short r and strips the sign byte of a hand-made 33-byte s", () => {
    const r = Buffer.alloc(30, 0x11);
    const s = Buffer.concat([Buffer.from([0x00]), Buffer.alloc(32, 0xee)]);
    const der = Buffer.concat([
      Buffer.from([0x30, 4 + r.length + s.length, 0x02, r.length]),
      r,
      Buffer.from([0x02, s.length]),
      s,
    ]);
    const raw = derToJose(der);
    expect(raw.subarray(0, 32).toString("hex")).toBe(`0000${"11".repeat(30)}`);
    expect(raw.subarray(32).toString("hex")).toBe("ee".repeat(32));
    expect(joseToDer(raw).equals(der)).toBe(true);
  });

  it("encodes a zero-led raw part minimally and a high-bit part with its 0x00", () => {
    const raw = Buffer.concat([Buffer.from([0, 0, 0x7f]), Buffer.alloc(29, 1), Buffer.alloc(32, 0x80)]);
    const der = joseToDer(raw);
    expect(integerLengths(der)).toEqual([30, 33]);
    expect(derToJose(der).equals(raw)).toBe(true);
  });

  it("refuses what is not a DER signature or a 64-byte raw one", () => {
    expect(() => derToJose(Buffer.from("3006020101020101", "hex").subarray(0, 7))).toThrow(SignatureEncodingError);
    expect(() => derToJose(Buffer.from("31060201010201010000", "hex"))).toThrow(SignatureEncodingError);
    expect(() =>
      derToJose(
        Buffer.concat([Buffer.from([0x30, 38, 0x02, 34, 0x01]), Buffer.alloc(33, 1), Buffer.from([0x02, 0x00])]),
      ),
    ).toThrow(SignatureEncodingError);
    expect(() => joseToDer(Buffer.alloc(63))).toThrow(SignatureEncodingError);
  });
});

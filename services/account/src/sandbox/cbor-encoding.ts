/**
 * The little CBOR (RFC 8949) an authenticator writes: integers, byte and text strings, and maps in the
 * order given (WebAuthn's COSE keys and attestation objects need nothing more). Deterministic, so a
 * test can compare bytes.
 */
export type CborValue = number | string | Uint8Array | CborMap;
type CborMap = ReadonlyArray<readonly [CborValue, CborValue]>;

export function encodeCbor(value: CborValue): Buffer {
  const parts: Buffer[] = [];
  write(value, parts);
  return Buffer.concat(parts);
}

function write(value: CborValue, parts: Buffer[]): void {
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new RangeError(`CBOR here encodes only integers, not ${value}`);
    if (value >= 0) parts.push(head(0, value));
    else parts.push(head(1, -1 - value));
  } else if (typeof value === "string") {
    const bytes = Buffer.from(value, "utf8");
    parts.push(head(3, bytes.length), bytes);
  } else if (value instanceof Uint8Array) {
    parts.push(head(2, value.length), Buffer.from(value));
  } else {
    parts.push(head(5, value.length));
    for (const [key, item] of value) {
      write(key, parts);
      write(item, parts);
    }
  }
}

/** The initial byte (major type and argument) with the argument in its shortest form. */
function head(major: number, argument: number): Buffer {
  const type = major << 5;
  if (argument < 24) return Buffer.from([type | argument]);
  if (argument < 0x100) return Buffer.from([type | 24, argument]);
  if (argument < 0x10000) {
    const out = Buffer.alloc(3);
    out[0] = type | 25;
    out.writeUInt16BE(argument, 1);
    return out;
  }
  if (argument < 0x100000000) {
    const out = Buffer.alloc(5);
    out[0] = type | 26;
    out.writeUInt32BE(argument, 1);
    return out;
  }
  const out = Buffer.alloc(9);
  out[0] = type | 27;
  out.writeBigUInt64BE(BigInt(argument), 1);
  return out;
}

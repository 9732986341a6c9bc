/** Deeper than any mdoc nests (DeviceResponse → document → IssuerSigned → COSE headers → x5chain). */
const maxDepth = 24;
const tagEncodedCbor = 24;

/**
 * Whether `bytes` are exactly one well-formed CBOR item of definite lengths nested at most `maxDepth`
 * deep, the same holding inside every tag-24 (encoded CBOR) byte string. Checked in one pass before
 * the bytes reach the mdoc library's decoder, which spends seconds on four bytes of indefinite-length
 * arrays (`9f 9f 9f 9f`). ISO 18013-5 data uses definite lengths, so nothing honest is refused here.
 */
export function isBoundedCbor(bytes: Uint8Array): boolean {
  return itemEnd(bytes, 0, 0) === bytes.length;
}

/** The offset after the item at `offset`, or -1 when it is not well-formed or too deep. */
function itemEnd(bytes: Uint8Array, start: number, depth: number): number {
  let offset = start;
  // How many items are still owed at each open level; the item at `start` is the one owed first.
  const owed = [1];
  while (owed.length > 0) {
    const level = owed.length - 1;
    if ((owed[level] as number) === 0) {
      owed.pop();
      continue;
    }
    owed[level] = (owed[level] as number) - 1;
    if (offset >= bytes.length) return -1;
    const initial = bytes[offset] as number;
    const major = initial >> 5;
    const info = initial & 31;
    offset += 1;
    let argument: number;
    if (info < 24) argument = info;
    else if (info <= 27) {
      const size = 1 << (info - 24);
      if (offset + size > bytes.length) return -1;
      argument = 0;
      for (let i = 0; i < size; i += 1) argument = argument * 256 + (bytes[offset + i] as number);
      offset += size;
    } else return -1; // 28–30 are reserved; 31 is an indefinite length or a break.
    if (major === 2 || major === 3) {
      if (argument > bytes.length - offset) return -1;
      offset += argument;
    } else if (major === 4 || major === 5) {
      const items = major === 4 ? argument : argument * 2;
      // Every item takes a byte at least: a count beyond what is left cannot be honest.
      if (items > bytes.length - offset) return -1;
      if (depth + owed.length > maxDepth) return -1;
      owed.push(items);
    } else if (major === 6) {
      if (argument === tagEncodedCbor) {
        const content = encodedCbor(bytes, offset, depth + owed.length);
        if (content < 0) return -1;
        offset = content;
      } else {
        if (depth + owed.length > maxDepth) return -1;
        owed.push(1);
      }
    }
  }
  return offset;
}

/** After a tag 24: a byte string holding one bounded CBOR item; the offset after it, or -1. */
function encodedCbor(bytes: Uint8Array, offset: number, depth: number): number {
  const end = itemEnd(bytes, offset, depth);
  if (end < 0 || (bytes[offset] as number) >> 5 !== 2) return -1;
  const header = (bytes[offset] as number) & 31;
  const headerSize = 1 + (header < 24 ? 0 : 1 << (header - 24));
  const inner = bytes.subarray(offset + headerSize, end);
  return itemEnd(inner, 0, depth + 1) === inner.length ? end : -1;
}

import { cborEncode, DataItem } from "@animo-id/mdoc";
import { describe, expect, it } from "vitest";
import { isBoundedCbor } from "../src/age/wallet/cbor-guard.ts";

const hex = (text: string) => Buffer.from(text.replaceAll(" ", ""), "hex");

describe("the CBOR guard in front of the mdoc decoder", () => {
  it("takes well-formed definite-length CBOR, tag-24 contents included", () => {
    expect(
      isBoundedCbor(
        cborEncode(
          new Map<string, unknown>([
            ["version", "1.0"],
            ["documents", [1, -2, true]],
          ]),
        ),
      ),
    ).toBe(true);
    expect(isBoundedCbor(cborEncode(DataItem.fromData(["DeviceAuthentication", null, new Uint8Array(3)])))).toBe(true);
    expect(isBoundedCbor(hex("fb 3ff0000000000000"))).toBe(true);
  });

  it("refuses indefinite lengths, the four bytes that cost the decoder seconds", () => {
    expect(isBoundedCbor(hex("9f 9f 9f 9f"))).toBe(false);
    expect(isBoundedCbor(hex("9f 01 ff"))).toBe(false);
    expect(isBoundedCbor(hex("5f 41 00 ff"))).toBe(false);
  });

  it("refuses truncated items, counts beyond the bytes left, reserved values and trailing bytes", () => {
    expect(isBoundedCbor(hex("83 01 02"))).toBe(false);
    expect(isBoundedCbor(hex("9b ffffffffffffffff 00"))).toBe(false);
    expect(isBoundedCbor(hex("58 ff 00"))).toBe(false);
    expect(isBoundedCbor(hex("1c"))).toBe(false);
    expect(isBoundedCbor(hex("01 01"))).toBe(false);
    expect(isBoundedCbor(new Uint8Array())).toBe(false);
  });

  it("refuses nesting deeper than any mdoc, also hidden inside a tag-24 byte string", () => {
    expect(isBoundedCbor(Buffer.concat([Buffer.alloc(24, 0x81), hex("00")]))).toBe(true);
    expect(isBoundedCbor(Buffer.concat([Buffer.alloc(25, 0x81), hex("00")]))).toBe(false);
    expect(isBoundedCbor(hex("d8 18 44 9f 9f 9f 9f"))).toBe(false);
    expect(isBoundedCbor(hex("d8 18 42 01 01"))).toBe(false);
    expect(isBoundedCbor(hex("d8 18 01"))).toBe(false);
  });
});

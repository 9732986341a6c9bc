import { deflateSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { boundedJwtStatusList, inflateBounded, readCapped } from "../src/age/wallet/status-list-bounds.ts";

/** A status list token whose `lst` is `bytes` zero bytes, deflated (all valid); the signature is not read here. */
const tokenWithList = (bytes: number) => {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const lst = deflateSync(Buffer.alloc(bytes)).toString("base64url");
  return `${part({ alg: "ES256", typ: "statuslist+jwt" })}.${part({ status_list: { bits: 1, lst } })}.c2ln`;
};

/** A response whose body arrives in `chunks` chunks of `size` bytes, with no Content-Length. */
const streamed = (chunks: number, size: number) =>
  new Response(
    new ReadableStream({
      start(controller) {
        for (let i = 0; i < chunks; i++) controller.enqueue(new Uint8Array(size).fill(i));
        controller.close();
      },
    }),
  );

describe("status list bounds", () => {
  it("a list inflates up to 1 MiB (8 million one-bit entries) and no further", () => {
    expect(inflateBounded(deflateSync(Buffer.alloc(1024 * 1024))).length).toBe(1024 * 1024);
    // A deflate bomb: 64 MiB of zeros is about 64 KiB deflated, well under the fetch limit.
    const bomb = deflateSync(Buffer.alloc(64 * 1024 * 1024));
    expect(bomb.length).toBeLessThan(256 * 1024);
    expect(() => inflateBounded(bomb)).toThrow(RangeError);
  });

  it("a JWT status list is answered as it came when its list is in bounds, refused when not or when it has none", () => {
    const token = tokenWithList(16 * 1024);
    expect(boundedJwtStatusList(token)).toBe(token);
    expect(() => boundedJwtStatusList(tokenWithList(2 * 1024 * 1024))).toThrow(RangeError);
    expect(() => boundedJwtStatusList("eyJ9.eyJ9.c2ln")).toThrow();
    const noList = `${Buffer.from("{}").toString("base64url")}.${Buffer.from('{"status_list":{}}').toString("base64url")}.c2ln`;
    expect(() => boundedJwtStatusList(noList)).toThrow("a status list token without status_list.lst");
  });

  it("a body is read up to its limit, and refused as soon as it passes it", async () => {
    expect(await readCapped(streamed(4, 1000), 4000)).toEqual(
      Buffer.concat([0, 1, 2, 3].map((i) => Buffer.alloc(1000, i))),
    );
    await expect(readCapped(streamed(5, 1000), 4000)).rejects.toThrow("a status list longer than 4000 bytes");
  });
});

import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { destinationPolicyFor, refusalForUrl, specialPurposeRange } from "../src/delivery/destination-guard.ts";
import { createHttpSender, type SendOutcome } from "../src/delivery/http-sender.ts";
import { type Receiver, startReceiver } from "./support/receiver.ts";

const production = destinationPolicyFor("production");
const development = destinationPolicyFor("development");

describe("special-purpose addresses", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.10.20.30", "loopback"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "shared address space (CGNAT)"],
    ["169.254.169.254", "cloud metadata"],
    ["100.100.100.200", "cloud metadata"],
    ["169.254.1.1", "link-local"],
    ["0.0.0.0", "unspecified"],
    ["224.0.0.251", "multicast"],
    ["255.255.255.255", "reserved"],
    ["::1", "loopback"],
    ["::", "unspecified"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["::ffff:10.0.0.1", "private"],
    ["::ffff:169.254.169.254", "cloud metadata"],
    ["::127.0.0.1", "IPv4-compatible (deprecated)"],
    ["fe80::1", "link-local"],
    ["fd12:3456::1", "unique local (private)"],
    ["fd00:ec2::254", "cloud metadata"],
    ["ff02::1", "multicast"],
    ["64:ff9b::a00:1", "private"],
    ["2002:7f00:1::", "loopback"],
    ["2001:db8::1", "documentation"],
  ])("%s is %s", (address, range) => {
    expect(specialPurposeRange(address)).toBe(range);
  });

  it.each([
    "8.8.8.8",
    "93.184.216.34",
    "172.32.0.1",
    "100.128.0.1",
    "::ffff:8.8.8.8",
    "2606:4700:4700::1111",
    "64:ff9b::808:808",
  ])("%s is public", (address) => {
    expect(specialPurposeRange(address)).toBeUndefined();
  });
});

describe("URL rules", () => {
  it("production takes only https, and no IP literal outside the public ranges", () => {
    expect(refusalForUrl(new URL("http://hooks.example.com/"), production)).toBe(
      "production delivers only to https URLs",
    );
    expect(refusalForUrl(new URL("https://[::ffff:127.0.0.1]/"), production)).toBe(
      "::ffff:7f00:1 is not a public address (loopback)",
    );
    expect(refusalForUrl(new URL("https://169.254.169.254/latest/meta-data"), production)).toBe(
      "169.254.169.254 is not a public address (cloud metadata)",
    );
    expect(refusalForUrl(new URL("https://hooks.example.com/"), production)).toBeUndefined();
    expect(refusalForUrl(new URL("https://93.184.216.34/"), production)).toBeUndefined();
  });

  it("development takes plain http and loopback, but never another scheme", () => {
    expect(refusalForUrl(new URL("http://127.0.0.1:8080/"), development)).toBeUndefined();
    expect(refusalForUrl(new URL("ftp://127.0.0.1/"), development)).toBe(
      "only http and https URLs are delivered to, not ftp:",
    );
  });
});

describe("sending over node:http with the guard at connection time", () => {
  let receiver: Receiver;
  const productionSender = createHttpSender(production);
  const developmentSender = createHttpSender(development);
  const post = (sender: typeof productionSender, url: string, timeoutMs = 2000): Promise<SendOutcome> =>
    sender.send({ url, headers: { "content-type": "application/json" }, body: Buffer.from("{}"), timeoutMs });

  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    productionSender.close();
    developmentSender.close();
    await receiver.close();
  });

  it.each([
    ["https://127.0.0.1:{port}/", "127.0.0.1 is not a public address (loopback)"],
    ["https://[::1]:{port}/", "::1 is not a public address (loopback)"],
    ["https://[::ffff:127.0.0.1]:{port}/", "::ffff:7f00:1 is not a public address (loopback)"],
    ["https://10.0.0.8:{port}/", "10.0.0.8 is not a public address (private)"],
    ["https://169.254.169.254/latest/meta-data/", "169.254.169.254 is not a public address (cloud metadata)"],
    ["https://localhost:{port}/", "localhost resolves to"],
    ["http://hooks.example.com/", "production delivers only to https URLs"],
  ])("production refuses %s before any byte is sent", async (template, reason) => {
    const before = receiver.requests.length;
    const outcome = await post(productionSender, template.replace("{port}", String(receiver.port)));
    expect(outcome.kind).toBe("failed");
    expect(outcome.kind === "failed" && outcome.error).toContain(`destination refused: ${reason}`);
    expect(receiver.requests.length).toBe(before);
  });

  it("a name that resolves to loopback is refused by the lookup itself, naming the address", async () => {
    const outcome = await post(productionSender, `https://localhost:${receiver.port}/`);
    expect(outcome.kind === "failed" && outcome.error).toMatch(
      /localhost resolves to (127\.0\.0\.1|::1), which is not a public address \(loopback\)/,
    );
  });

  it("development delivers to the same loopback receiver, so the refusals above are the guard's doing", async () => {
    const before = receiver.requests.length;
    expect(await post(developmentSender, receiver.url)).toEqual({ kind: "delivered", statusCode: 204 });
    expect(receiver.requests.length).toBe(before + 1);
  });

  it("a redirect is a failed attempt and is not followed", async () => {
    const redirecting = await startReceiver(() => ({ status: 307, headers: { location: receiver.url } }));
    const before = receiver.requests.length;
    const outcome = await post(developmentSender, redirecting.url);
    expect(outcome).toMatchObject({ kind: "failed", statusCode: 307, error: "answered HTTP 307" });
    expect(redirecting.requests).toHaveLength(1);
    expect(receiver.requests.length).toBe(before);
    await redirecting.close();
  });

  it("an answer after the timeout is a failed attempt", async () => {
    const slow = await startReceiver(() => new Promise((resolve) => setTimeout(() => resolve({ status: 204 }), 1000)));
    const outcome = await post(developmentSender, slow.url, 200);
    expect(outcome).toMatchObject({ kind: "failed", error: "no answer within 200 ms" });
    await slow.close();
  });

  it("a refused connection is a failed attempt, and Retry-After travels with a failed answer", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    expect(await post(developmentSender, `http://127.0.0.1:${port}/`)).toMatchObject({
      kind: "failed",
      statusCode: undefined,
      error: expect.stringContaining("ECONNREFUSED"),
    });

    const busy = await startReceiver(() => ({ status: 503, headers: { "retry-after": "120" } }));
    expect(await post(developmentSender, busy.url)).toEqual({
      kind: "failed",
      statusCode: 503,
      error: "answered HTTP 503",
      retryAfter: "120",
    });
    await busy.close();
  });
});

import { connect } from "node:http2";
import { toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { createLogger, type RunningService, serveConnect } from "@svc/platform";
import { GetKeySetRequestSchema, SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

/**
 * The platform server answers a binary, uncompressed Connect unary call itself (unary-handler.ts) and leaves
 * every other request to Connect's adapter. A request without `connect-protocol-version` (which Connect does not
 * require) goes to the adapter, so sending each call both ways shows the two answer the same: status, the
 * headers a caller reads, trailers, and the body's bytes.
 */
let service: RunningService;
beforeAll(async () => {
  service = await serveConnect({
    name: "unary-handler-test",
    host: "127.0.0.1",
    port: 0,
    logger: createLogger("unary-handler-test", {}, "error"),
    routes: (router) =>
      router.service(SigningService, {
        getKeySet: (_, context) => {
          context.responseHeader.set("x-answer-header", "h");
          context.responseTrailer.set("x-answer-trailer", "t");
          return { issuer: `asked by ${context.requestHeader.get("x-asked-by")}` };
        },
        signProof: () => {
          throw new ConnectError("the card changed", Code.FailedPrecondition, { "x-refusal": "card" });
        },
        signAttestation: () => {
          throw new Error("a bug, not a refusal");
        },
      }),
    ready: async () => {},
    onStop: async () => {},
  });
});
afterAll(async () => {
  await service?.stop();
});

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: string;
}

function post(method: string, body: Uint8Array, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const session = connect(service.url);
    session.on("error", reject);
    const stream = session.request({
      ":method": "POST",
      ":path": `/${SigningService.typeName}/${method}`,
      "content-type": "application/proto",
      "x-asked-by": "gate",
      ...headers,
    });
    let status = 0;
    let received: Record<string, unknown> = {};
    const chunks: Buffer[] = [];
    stream.on("response", (h) => {
      status = Number(h[":status"]);
      received = h;
    });
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("error", reject);
    stream.on("end", () => {
      session.close();
      const kept = Object.fromEntries(
        Object.entries(received).filter(([name]) => !name.startsWith(":") && name !== "date" && name !== "vary"),
      );
      resolve({ status, headers: kept, body: Buffer.concat(chunks).toString("base64") });
    });
    stream.end(body);
  });
}

/** The call answered by our handler (`connect-protocol-version: 1`) and by Connect's adapter (without it). */
async function bothWays(method: string, body: Uint8Array, headers: Record<string, string> = {}) {
  const ours = await post(method, body, { ...headers, "connect-protocol-version": "1" });
  const adapters = await post(method, body, headers);
  return { ours, adapters };
}

const empty = toBinary(GetKeySetRequestSchema, { $typeName: "svc.signing.v1.GetKeySetRequest" } as never);

describe("a unary call answered by the platform's own handler", () => {
  test("an answer: its message, headers and trailers, as the adapter writes them", async () => {
    const { ours, adapters } = await bothWays("GetKeySet", empty);
    expect(ours.status).toBe(200);
    expect(ours.headers).toMatchObject({
      "content-type": "application/proto",
      "x-answer-header": "h",
      "trailer-x-answer-trailer": "t",
    });
    expect(ours).toEqual(adapters);
  });

  test("a refusal: its code's HTTP status, its JSON error and its metadata", async () => {
    const { ours, adapters } = await bothWays("SignProof", empty);
    expect(ours.status).toBe(400);
    expect(ours.headers).toMatchObject({ "content-type": "application/json", "x-refusal": "card" });
    expect(JSON.parse(Buffer.from(ours.body, "base64").toString())).toEqual({
      code: "failed_precondition",
      message: "the card changed",
    });
    expect(ours).toEqual(adapters);
  });

  test("an implementation's own failure is internal, and says nothing of it", async () => {
    const { ours, adapters } = await bothWays("SignAttestation", empty);
    expect(ours.status).toBe(500);
    expect(JSON.parse(Buffer.from(ours.body, "base64").toString())).toEqual({
      code: "internal",
      message: "internal error",
    });
    expect(ours).toEqual(adapters);
  });

  test("a message that is not protobuf binary is the caller's bad input", async () => {
    const { ours, adapters } = await bothWays("GetKeySet", Uint8Array.of(0x0a, 0x05, 0x61));
    expect(ours.status).toBe(400);
    expect(JSON.parse(Buffer.from(ours.body, "base64").toString())).toMatchObject({ code: "invalid_argument" });
    expect(ours).toEqual(adapters);
  });

  test("a method the service does not implement is unimplemented", async () => {
    const { ours, adapters } = await bothWays("RotateKeys", empty);
    expect(JSON.parse(Buffer.from(ours.body, "base64").toString())).toMatchObject({ code: "unimplemented" });
    expect(ours).toEqual(adapters);
  });

  test("a malformed deadline gets the protocol's own refusal", async () => {
    const { ours, adapters } = await bothWays("GetKeySet", empty, { "connect-timeout-ms": "soon" });
    expect(JSON.parse(Buffer.from(ours.body, "base64").toString())).toEqual({
      code: "invalid_argument",
      message: "protocol error: invalid connect timeout value: soon",
    });
    expect(ours).toEqual(adapters);
  });
});

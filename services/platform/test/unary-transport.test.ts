import { fromJson, toJson } from "@bufbuild/protobuf";
import { StructSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { createInternalClient, createLogger, type RunningService, serveConnect } from "@svc/platform";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

/**
 * The mesh's unary client (unary-transport.ts, behind createInternalClient) against the platform's real server:
 * what Connect's own client did, it does — answers with their headers and trailers, errors with their code,
 * metadata and details, the deadline, cancellation, and a service that went away and came back.
 */
const logger = createLogger("unary-transport-test", {}, "error");
/** Settled by a handler once its call is open on the server, so a test can act while the call is held. */
let heldOpen: () => void = () => {};
let heldEnded: (reason: unknown) => void = () => {};

const start = (port = 0) =>
  serveConnect({
    name: "unary-transport-test",
    host: "127.0.0.1",
    port,
    logger,
    routes: (router) =>
      router.service(SigningService, {
        getKeySet: (_, context) => {
          context.responseHeader.set("x-answer-header", "h");
          context.responseTrailer.set("x-answer-trailer", "t");
          return { issuer: `issuer for ${context.requestHeader.get("x-asked-by")}` };
        },
        signProof: () => {
          throw new ConnectError("the card changed", Code.FailedPrecondition, { "x-refusal": "card" }, [
            { desc: StructSchema, value: fromJson(StructSchema, { reason: "card" }) },
          ]);
        },
        signAttestation: (_, context) =>
          new Promise((_resolve, reject) => {
            context.signal.addEventListener("abort", () => {
              heldEnded(context.signal.reason);
              reject(context.signal.reason);
            });
            heldOpen();
          }),
      }),
    ready: async () => {},
    onStop: async () => {},
  });

let service: RunningService;
beforeAll(async () => {
  service = await start();
});
afterAll(async () => {
  await service?.stop();
});

/** The error a call was refused with; a call that was answered fails the test. */
async function refusal(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error("the call was answered");
}

const held = () => ({
  open: new Promise<void>((resolve) => {
    heldOpen = resolve;
  }),
  ended: new Promise<unknown>((resolve) => {
    heldEnded = resolve;
  }),
});

describe("the mesh's unary client", () => {
  test("sends the caller's headers and reads the answer with its headers and trailers", async () => {
    const signing = createInternalClient(SigningService, service.url);
    let header: Headers | undefined;
    let trailer: Headers | undefined;
    const answer = await signing.getKeySet(
      {},
      {
        headers: { "x-asked-by": "gateway" },
        onHeader: (h) => {
          header = h;
        },
        onTrailer: (t) => {
          trailer = t;
        },
      },
    );
    expect(answer.issuer).toBe("issuer for gateway");
    expect(header?.get("x-answer-header")).toBe("h");
    expect(trailer?.get("x-answer-trailer")).toBe("t");
  });

  test("a refusal arrives with its code, message, metadata and details", async () => {
    const signing = createInternalClient(SigningService, service.url);
    const error = await refusal(signing.signProof({}));
    expect(error.code).toBe(Code.FailedPrecondition);
    expect(error.rawMessage).toBe("the card changed");
    expect(error.metadata.get("x-refusal")).toBe("card");
    expect(error.findDetails(StructSchema).map((struct) => toJson(StructSchema, struct))).toEqual([{ reason: "card" }]);
  });

  test("a method the server lacks is unimplemented", async () => {
    const signing = createInternalClient(SigningService, service.url);
    const error = await refusal(signing.rotateKeys({}));
    expect(error.code).toBe(Code.Unimplemented);
  });

  test("past its deadline a call is deadline_exceeded, and the server's handler is told", async () => {
    const signing = createInternalClient(SigningService, service.url, { timeoutMs: 200 });
    const call = held();
    const error = await refusal(signing.signAttestation({}));
    expect(error.code).toBe(Code.DeadlineExceeded);
    await call.ended;
  });

  test("a cancelled call is canceled, and its stream is reset on the server", async () => {
    const signing = createInternalClient(SigningService, service.url, { timeoutMs: 30_000 });
    const call = held();
    const controller = new AbortController();
    const answer = refusal(signing.signAttestation({}, { signal: controller.signal }));
    await call.open;
    controller.abort();
    expect((await answer).code).toBe(Code.Canceled);
    await call.ended;
  });

  test("a service that stopped is unavailable, and the same client reaches it once it is back", async () => {
    const own = await start();
    const signing = createInternalClient(SigningService, own.url);
    expect((await signing.getKeySet({})).issuer).toBe("issuer for null");
    await own.stop();
    const error = await refusal(signing.getKeySet({}));
    expect(error.code).toBe(Code.Unavailable);
    const again = await start(own.port);
    try {
      expect((await signing.getKeySet({})).issuer).toBe("issuer for null");
    } finally {
      await again.stop();
    }
  });
});

import { fromJson } from "@bufbuild/protobuf";
import { StructSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { describe, expect, test } from "vitest";
import { envelope } from "../src/http/envelope.ts";
import { envelopeErrorOf, InputValidationError, OperationError } from "../src/http/errors.ts";
import { outcomeOf } from "../src/http/pipeline.ts";

describe("envelope", () => {
  test("nests a result once more as data.data", () => {
    expect(envelope({ kind: "ok", data: { valid: true } }, "nested")).toEqual({
      status: 200,
      body: { data: { data: { valid: true } } },
    });
  });

  test("puts a flat route's result directly under data", () => {
    expect(envelope({ kind: "ok", data: { found: false, status: "not_found" } }, "flat")).toEqual({
      status: 200,
      body: { data: { found: false, status: "not_found" } },
    });
  });

  test("answers a refusal as data.error in an HTTP 200, for both styles", () => {
    const refusal = { kind: "error", error: { statusCode: 409, message: "pending request exists" } } as const;
    for (const style of ["nested", "flat"] as const) {
      expect(envelope(refusal, style)).toEqual({
        status: 200,
        body: { data: { error: { statusCode: 409, message: "pending request exists" } } },
      });
    }
  });

  test("puts extras such as _rateLimit beside data, and beside a 400 body", () => {
    const extras = { _rateLimit: { scope: "bs_test" } };
    expect(envelope({ kind: "ok", data: 1 }, "nested", extras).body).toEqual({
      data: { data: 1 },
      _rateLimit: { scope: "bs_test" },
    });
    const invalid = outcomeOf(
      new InputValidationError({ token: 5 }, [
        { propertyPath: "token", invalidValue: 5, message: "token must be a string, not number" },
      ]),
    );
    expect(envelope(invalid, "nested", extras)).toEqual({
      status: 400,
      body: {
        code: "InputValidationError",
        message: "Input validation failed: token must be a string, not number",
        input: { token: 5 },
        errors: [{ propertyPath: "token", invalidValue: 5, message: "token must be a string, not number" }],
        _rateLimit: { scope: "bs_test" },
      },
    });
  });

  test("an unhandled failure is HTTP 500 that reveals nothing", () => {
    const reply = envelope(outcomeOf(new Error("relation api_keys does not exist")), "nested", { _rateLimit: {} });
    expect(reply).toEqual({ status: 500, body: { message: "internal error" } });
  });

  test("a response outside the envelope passes through as it is", () => {
    const body = { errors: [{ message: "slow down", code: "RATE_LIMITED" }] };
    expect(envelope({ kind: "http", status: 403, body }, "nested")).toEqual({ status: 403, body });
  });
});

describe("error mapping", () => {
  test("OperationError keeps code and code-specific fields", () => {
    const error = new OperationError(400, "ttl_seconds is below 60", { code: "ttl_below_floor", min_ttl_seconds: 60 });
    expect(envelopeErrorOf(error)).toEqual({
      statusCode: 400,
      message: "ttl_seconds is below 60",
      code: "ttl_below_floor",
      min_ttl_seconds: 60,
    });
  });

  test("an authentication refusal carries only statusCode and message", () => {
    expect(envelopeErrorOf(new OperationError(401, "the API key is not valid"))).toEqual({
      statusCode: 401,
      message: "the API key is not valid",
    });
  });

  test.each([
    [Code.InvalidArgument, 400],
    [Code.Unauthenticated, 401],
    [Code.PermissionDenied, 403],
    [Code.NotFound, 404],
    [Code.AlreadyExists, 409],
    [Code.FailedPrecondition, 409],
    [Code.ResourceExhausted, 429],
  ])("a business service's Connect code %s is statusCode %s with its message", (code, statusCode) => {
    expect(envelopeErrorOf(new ConnectError("the refusal", code))).toEqual({ statusCode, message: "the refusal" });
  });

  test.each([
    ["unreachable", new ConnectError("connect ECONNREFUSED 10.0.0.7:9091", Code.Unavailable)],
    ["gone in the middle of the call (connection reset)", new ConnectError("read ECONNRESET", Code.Aborted)],
  ])("a service %s is 502, retry, without its internal text", (_, cause) => {
    expect(envelopeErrorOf(cause)).toEqual({
      statusCode: 502,
      message: "a service behind the gateway did not answer; retry with backoff",
    });
  });

  test("an Internal error without a detail is 500 and its text stays out", () => {
    expect(
      envelopeErrorOf(new ConnectError('duplicate key value violates unique constraint "x"', Code.Internal)),
    ).toEqual({
      statusCode: 500,
      message: "the operation failed; retry with backoff",
    });
  });

  test("a Struct detail adds code and fields and may set the status", () => {
    const detail = fromJson(StructSchema, {
      status_code: 422,
      code: "trust_layer_rejected",
      violations: [{ path: "body[0]" }],
    });
    const error = new ConnectError("content rejected", Code.InvalidArgument, undefined, [
      { desc: StructSchema, value: detail },
    ]);
    expect(envelopeErrorOf(error)).toEqual({
      statusCode: 422,
      message: "content rejected",
      code: "trust_layer_rejected",
      violations: [{ path: "body[0]" }],
    });
  });

  test("a detail that arrived over the wire is read the same way", async () => {
    const transport = createRouterTransport(({ service }) =>
      service(SigningService, {
        verifyToken() {
          throw new ConnectError("ttl too short", Code.InvalidArgument, undefined, [
            { desc: StructSchema, value: fromJson(StructSchema, { code: "ttl_below_floor", min_ttl_seconds: 60 }) },
          ]);
        },
      }),
    );
    const received = await createClient(SigningService, transport)
      .verifyToken({ token: "t" })
      .catch((error: unknown) => error);
    expect(received).toBeInstanceOf(ConnectError);
    expect(envelopeErrorOf(received)).toEqual({
      statusCode: 400,
      message: "ttl too short",
      code: "ttl_below_floor",
      min_ttl_seconds: 60,
    });
  });

  test("anything else is unhandled", () => {
    expect(envelopeErrorOf(new TypeError("x is undefined"))).toBeUndefined();
    expect(outcomeOf(new TypeError("x")).kind).toBe("unhandled");
  });
});

import { connect as http2Connect } from "node:http2";
import { Code, ConnectError, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import { codeFromString } from "@connectrpc/connect/protocol-connect";
import { trailerParse } from "@connectrpc/connect/protocol-grpc-web";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { ManualClock } from "@svc/platform";
import { AccountConsoleService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { ConsoleService } from "@svc/proto/console/v1/console_pb.js";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startTestMesh, type TestMesh } from "./support.ts";

/**
 * Internal RPC as a gRPC, gRPC-Web or Connect client sees it, on a service (signing) and on the gateway's
 * console: each protocol is answered in its own terms. A request message that is not valid protobuf is
 * the caller's `invalid_argument`, and a console call without the operator credential is `unauthenticated`
 * (in gRPC's trailers, gRPC-Web's trailer frame, Connect's JSON), never a plain HTTP error.
 */

const clock = new ManualClock("2026-12-01T10:00:00Z");
let mesh: TestMesh;

beforeAll(async () => {
  mesh = await startTestMesh("rpc_protocols", clock);
});
afterAll(() => mesh?.stop());

type Protocol = "connect" | "grpc" | "grpcweb";
const protocols: Protocol[] = ["connect", "grpc", "grpcweb"];

function transport(protocol: Protocol, baseUrl: string, token?: string): Transport {
  const interceptors: Interceptor[] = token
    ? [
        (next) => (request) => {
          request.header.set("authorization", `Bearer ${token}`);
          return next(request);
        },
      ]
    : [];
  const options = { baseUrl, httpVersion: "2" as const, interceptors };
  if (protocol === "grpc") return createGrpcTransport(options);
  if (protocol === "grpcweb") return createGrpcWebTransport(options);
  return createConnectTransport(options);
}

const codeOf = (call: Promise<unknown>) =>
  call.then(
    () => "answered",
    (thrown: unknown) => {
      const error = ConnectError.from(thrown);
      return { code: Code[error.code], message: error.rawMessage };
    },
  );

/** Field 1, length-delimited, promising 5 bytes of which 1 comes: protobuf binary cut short. */
const truncatedMessage = new Uint8Array([0x0a, 0x05, 0x61]);

interface RawAnswer {
  status: number;
  /** The name of grpc-status, or of Connect's JSON error code. */
  code: string | undefined;
  message: string | undefined;
}

/** Sends `message` as the body of a unary call in the protocol's own framing, and reads the status it answers. */
function sendRaw(
  protocol: Protocol,
  url: string,
  message: Uint8Array,
  headers: Record<string, string> = {},
): Promise<RawAnswer> {
  const { origin, pathname } = new URL(url);
  headers = { ...headers, ":method": "POST", ":path": pathname };
  let body: Uint8Array = message;
  if (protocol === "connect") headers["content-type"] = "application/proto";
  else {
    headers["content-type"] = protocol === "grpc" ? "application/grpc+proto" : "application/grpc-web+proto";
    if (protocol === "grpc") headers.te = "trailers";
    body = encodeEnvelope(0, message);
  }
  return new Promise((resolve, reject) => {
    const session = http2Connect(origin);
    session.on("error", reject);
    const stream = session.request(headers);
    let status = 0;
    let trailers: Record<string, unknown> = {};
    const chunks: Buffer[] = [];
    stream.on("response", (h) => {
      status = Number(h[":status"]);
      // A trailers-only gRPC answer carries the status in its headers.
      if (h["grpc-status"] !== undefined) trailers = h;
    });
    stream.on("trailers", (t) => {
      trailers = t;
    });
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("error", reject);
    stream.on("end", () => {
      session.close();
      const bytes = Buffer.concat(chunks);
      if (protocol === "connect") {
        const json = JSON.parse(bytes.toString("utf8")) as { code: string; message: string };
        return resolve({ status, code: Code[codeFromString(json.code) ?? Code.Unknown], message: json.message });
      }
      if (protocol === "grpcweb") {
        // The last frame: flag 0x80, a 4-byte length, then the trailer's header lines.
        const flag = bytes[0];
        expect(flag).toBe(0x80);
        const parsed = trailerParse(bytes.subarray(5));
        trailers = { "grpc-status": parsed.get("grpc-status"), "grpc-message": parsed.get("grpc-message") };
      }
      resolve({
        status,
        code: trailers["grpc-status"] === undefined ? undefined : Code[Number(trailers["grpc-status"])],
        message: decodeURIComponent(String(trailers["grpc-message"] ?? "")),
      });
    });
    stream.end(body);
  });
}

const invalidMessage = (protocol: Protocol): RawAnswer => ({
  // Connect carries the code in the HTTP status too; gRPC and gRPC-Web answer 200 with a status trailer.
  status: protocol === "connect" ? 400 : 200,
  code: "InvalidArgument",
  message: expect.stringMatching(/^parse binary: /),
});

describe.each(protocols)("over %s", (protocol) => {
  test("a service answers a call, and a truncated binary message is invalid_argument, not internal", async () => {
    const signing = createClient(SigningService, transport(protocol, mesh.signingUrl));
    expect((await signing.getKeySet({})).keys.length).toBeGreaterThan(0);
    expect(
      await sendRaw(protocol, `${mesh.signingUrl}/svc.signing.v1.SigningService/GetKeySet`, truncatedMessage),
    ).toEqual(invalidMessage(protocol));
  });

  test("the console without the operator credential is unauthenticated, its own calls and forwarded ones", async () => {
    const refused = { code: "Unauthenticated", message: expect.stringContaining("requires the operator credential") };
    const console = createClient(ConsoleService, transport(protocol, mesh.gateway.consoleUrl));
    expect(await codeOf(console.createOrganization({ name: "Intruder" }))).toEqual(refused);
    // Account does not run in this mesh: a forwarded call that got through would be unavailable.
    const accounts = createClient(AccountConsoleService, transport(protocol, mesh.gateway.consoleUrl));
    expect(
      await codeOf(
        accounts.createSandboxHuman({ environment: Environment.DEVELOPMENT, behavior: SandboxBehavior.CONFIRM }),
      ),
    ).toEqual(refused);
    const wrongToken = createClient(ConsoleService, transport(protocol, mesh.gateway.consoleUrl, "not-the-token"));
    expect(await codeOf(wrongToken.createOrganization({ name: "Intruder" }))).toEqual(refused);
  });

  test("the console with the credential answers, and a truncated message is invalid_argument", async () => {
    const console = createClient(ConsoleService, transport(protocol, mesh.gateway.consoleUrl, mesh.consoleToken));
    const { organizationId } = await console.createOrganization({ name: `Operators over ${protocol}` });
    expect(organizationId).toMatch(/^[0-9a-f-]{36}$/);
    const accounts = createClient(
      AccountConsoleService,
      transport(protocol, mesh.gateway.consoleUrl, mesh.consoleToken),
    );
    expect(
      await codeOf(
        accounts.createSandboxHuman({ environment: Environment.DEVELOPMENT, behavior: SandboxBehavior.CONFIRM }),
      ),
    ).toEqual({ code: "Unavailable", message: "svc.account.v1 console unreachable" });
    const credential = { authorization: `Bearer ${mesh.consoleToken}` };
    expect(
      await sendRaw(
        protocol,
        `${mesh.gateway.consoleUrl}/svc.console.v1.ConsoleService/CreateOrganization`,
        truncatedMessage,
        credential,
      ),
    ).toEqual(invalidMessage(protocol));
  });
});

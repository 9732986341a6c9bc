import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { createLogger, type RunningService, serveConnect } from "@svc/platform";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

/**
 * The platform's server as `buf curl` sees it over each protocol: a server with `authenticate` refuses a
 * caller without the credential as `unauthenticated` in that protocol's terms, and answers one with it.
 * Only a request message that does not parse is re-coded `invalid_argument`: the same parse error out of
 * an implementation (a downstream service's answer it could not read) stays `internal`.
 */

const repository = fileURLToPath(new URL("../../..", import.meta.url));
const buf = join(repository, "node_modules/.bin/buf");
const refusal = "this server requires Authorization: Bearer right";
let service: RunningService;
let dir: string;
/** The proto schema compiled once, so that each `buf curl` only sends. */
let schema: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "rpc-protocols-"));
  schema = join(dir, "schema.binpb");
  await promisify(execFile)(buf, ["build", "-o", schema], { cwd: repository });
  service = await serveConnect({
    name: "protocols-test",
    host: "127.0.0.1",
    port: 0,
    logger: createLogger("protocols-test", {}, "error"),
    authenticate: { check: (req) => req.headers.authorization === "Bearer right", refusal },
    routes: (router) =>
      router.service(SigningService, {
        getKeySet: () => ({ issuer: "https://issuer.test" }),
        signProof: () => {
          throw new ConnectError("parse binary: premature EOF", Code.Internal);
        },
      }),
    ready: async () => {},
    onStop: async () => {},
  });
});
afterAll(async () => {
  await service?.stop();
  await rm(dir, { recursive: true, force: true });
});

interface CurlResult {
  exitCode: number;
  output: unknown;
}

function bufCurl(
  protocol: "grpc" | "grpcweb" | "connect",
  method: string,
  headers: string[] = [],
): Promise<CurlResult> {
  const args = ["curl", "--protocol", protocol, "--http2-prior-knowledge", "--schema", schema, "--data", "{}"];
  for (const header of headers) args.push("--header", header);
  args.push(`${service.url}/svc.signing.v1.SigningService/${method}`);
  return new Promise((resolve) =>
    execFile(buf, args, (error, stdout, stderr) =>
      resolve({
        exitCode: typeof error?.code === "number" ? error.code : 0,
        output: JSON.parse(stdout.trim() || stderr.trim()),
      }),
    ),
  );
}

describe.each(["grpc", "grpcweb", "connect"] as const)("buf curl --protocol %s", (protocol) => {
  test("without the credential: unauthenticated, in the protocol's own terms", async () => {
    const answer = await bufCurl(protocol, "GetKeySet");
    expect(answer.output).toEqual({ code: "unauthenticated", message: refusal });
    expect(answer.exitCode).not.toBe(0);
  });

  test("with it: the answer", async () => {
    expect(await bufCurl(protocol, "GetKeySet", ["Authorization: Bearer right"])).toEqual({
      exitCode: 0,
      output: { issuer: "https://issuer.test" },
    });
  });
});

test("a parse error an implementation throws stays internal: it is not the caller's input", async () => {
  const signing = createClient(
    SigningService,
    createGrpcTransport({
      baseUrl: service.url,
      interceptors: [
        (next) => (request) => {
          request.header.set("authorization", "Bearer right");
          return next(request);
        },
      ],
    }),
  );
  const error = await signing.signProof({}).then(
    () => undefined,
    (thrown: unknown) => ConnectError.from(thrown),
  );
  expect(error?.code).toBe(Code.Internal);
});

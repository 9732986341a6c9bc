import {
  Code,
  ConnectError,
  type ConnectRouterOptions,
  createContextKey,
  type HandlerContext,
} from "@connectrpc/connect";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import { codeToHttpStatus, errorToJson } from "@connectrpc/connect/protocol-connect";
import { contentTypeRegExp as grpcContentType, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import {
  contentTypeRegExp as grpcWebContentType,
  trailerFlag,
  trailerSerialize,
} from "@connectrpc/connect/protocol-grpc-web";
import type { NodeServerRequest, NodeServerResponse } from "./node-handler.ts";

const reachedInterceptors = createContextKey(false, { description: "the request message was parsed" });

/**
 * connect-es answers a request message that is not valid protobuf binary (truncated, or a wrong wire
 * type) as `internal` ("parse binary: premature EOF"), where its JSON codec answers `invalid_argument`:
 * either way it is the caller's bad input. The gate runs before the body is read and the interceptor
 * once the message is parsed, so a parse error between them is the request's own (not a downstream
 * answer's), and it is re-coded when the call is aborted with it, which every protocol does before
 * it writes the error out.
 */
export const malformedRequestsAreInvalid = {
  requestGate(context: HandlerContext) {
    context.signal.addEventListener(
      "abort",
      () => {
        const reason: unknown = context.signal.reason;
        if (
          !context.values.get(reachedInterceptors) &&
          reason instanceof ConnectError &&
          reason.code === Code.Internal &&
          reason.rawMessage.startsWith("parse binary:")
        )
          Object.assign(reason, { code: Code.InvalidArgument });
      },
      { once: true },
    );
  },
  interceptors: [
    (next) => (request) => {
      request.contextValues.set(reachedInterceptors, true);
      return next(request);
    },
  ],
} satisfies Partial<ConnectRouterOptions>;

/**
 * Answers `error` the way the request's protocol carries one, for a call refused before any RPC handler
 * (the console's credential, a console service out of reach): gRPC in trailers, gRPC-Web in a trailer
 * frame, and anything else as Connect's JSON error with its HTTP status.
 */
export function sendRpcError(req: NodeServerRequest, res: NodeServerResponse, error: ConnectError): void {
  const contentType = req.headers["content-type"] ?? "";
  const status = new Headers();
  setTrailerStatus(status, error);
  const grpcWeb = grpcWebContentType.exec(contentType);
  if (grpcWeb) {
    const frame = Buffer.from(encodeEnvelope(trailerFlag, trailerSerialize(status)));
    // gRPC-Web-Text carries every frame in base64.
    const body = grpcWeb[1] === undefined ? frame : Buffer.from(frame.toString("base64"));
    res.writeHead(200, { "content-type": contentType, "content-length": body.length });
    res.end(body);
  } else if (grpcContentType.test(contentType)) {
    res.writeHead(200, { "content-type": contentType });
    const trailers: Record<string, string> = {};
    status.forEach((value, name) => {
      trailers[name] = value;
    });
    res.addTrailers(trailers);
    res.end();
  } else {
    const text = JSON.stringify(errorToJson(error, undefined));
    res.writeHead(codeToHttpStatus(error.code), {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text),
    });
    res.end(text);
  }
}

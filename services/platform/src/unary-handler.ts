import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http";
import { create, type DescMethodUnary, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  createContextValues,
  createServiceImplSpec,
  type HandlerContext,
  type Interceptor,
  type MethodImplSpec,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { mergeNonProtocolHeaders } from "@connectrpc/connect/protocol";
import { codeToHttpStatus, errorToJsonBytes, parseTimeout } from "@connectrpc/connect/protocol-connect";
import type { NodeServerRequest, NodeServerResponse } from "./node-handler.ts";
import { type AnyFn, abortAtDeadline, behindInterceptors } from "./unary-call-parts.ts";

type UnarySpec = Extract<MethodImplSpec, { kind: "unary" }>;

/** The reason a call's signal carries once its answer is written: made once, as no caller ever reads it. */
const callEnded = new ConnectError("the call has ended", Code.Canceled);

/**
 * Answers unary calls of the Connect protocol, binary and uncompressed (what the mesh's own client sends,
 * unary-transport.ts), on Node's request and response directly. Connect's Node adapter spent about 375 µs of
 * CPU on a trivial call, much of it on plumbing a unary call does not need: a web request built from Node's,
 * async iterables for one message each way, three linked abort controllers, and a DOMException made at the
 * end of every call by an abort without a reason. The protocol stays Connect's: its helpers parse the deadline
 * and write an error, the service's implementation and the server's interceptors run as they do under the
 * adapter, and every other request (gRPC, gRPC-Web, JSON, compressed, streaming, GET) goes to the adapter.
 */
export class UnaryCalls {
  private readonly methods = new Map<string, UnarySpec>();
  private readonly interceptors: Interceptor[];

  constructor(interceptors: Interceptor[]) {
    this.interceptors = interceptors;
  }

  /** `router`, also noting each unary method registered without options of its own, which this answers. */
  recording(router: ConnectRouter): ConnectRouter {
    const note = (spec: MethodImplSpec) => {
      if (spec.kind === "unary") this.methods.set(`/${spec.method.parent.typeName}/${spec.method.name}`, spec);
    };
    const recorder: ConnectRouter = {
      get handlers() {
        return router.handlers;
      },
      service: (service, implementation, options) => {
        router.service(service, implementation, options);
        if (options === undefined)
          for (const spec of Object.values(createServiceImplSpec(service, implementation).methods)) note(spec);
        return recorder;
      },
      rpc: (method, impl, options) => {
        router.rpc(method, impl, options);
        if (options === undefined && method.methodKind === "unary") note({ kind: "unary", method, impl } as UnarySpec);
        return recorder;
      },
    };
    return recorder;
  }

  /** Answers the request and says true when it is a call this answers; false leaves it to Connect's adapter. */
  answers(req: NodeServerRequest, res: NodeServerResponse): boolean {
    const spec = req.method === "POST" ? this.methods.get(req.url ?? "") : undefined;
    const headers = req.headers;
    if (
      spec === undefined ||
      headers["content-type"] !== "application/proto" ||
      headers["connect-protocol-version"] !== "1" ||
      (headers["content-encoding"] !== undefined && headers["content-encoding"] !== "identity")
    )
      return false;
    const deadline = headers["connect-timeout-ms"];
    const timeout = parseTimeout(typeof deadline === "string" ? deadline : null, Number.MAX_SAFE_INTEGER);
    // The adapter writes the protocol's own error for a malformed or repeated deadline.
    if (timeout.error || Array.isArray(deadline)) return false;
    this.answer(spec, req, res, timeout.timeoutMs).catch((error: unknown) => res.destroy(error as Error));
    return true;
  }

  private async answer(
    spec: UnarySpec,
    req: NodeServerRequest,
    res: NodeServerResponse,
    timeoutMs: number | undefined,
  ): Promise<void> {
    const { method } = spec;
    const controller = new AbortController();
    const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
    const timer = abortAtDeadline(controller, timeoutMs);
    // Heard only until the answer is written, so a close heard is the caller gone (an HTTP/2 reset, a socket cut).
    const onClose = () => controller.abort(new ConnectError("the caller cancelled the call", Code.Canceled));
    res.once("close", onClose);
    const context: HandlerContext = {
      method,
      service: method.parent,
      requestMethod: "POST",
      protocolName: "connect",
      url: `http://${req.headers[":authority"] ?? req.headers.host ?? "localhost"}${req.url}`,
      signal: controller.signal,
      timeoutMs: () => (deadline === undefined ? undefined : deadline - Date.now()),
      requestHeader: webHeaders(req.headers),
      responseHeader: new Headers(),
      responseTrailer: new Headers(),
      values: createContextValues(),
    };
    let status = 200;
    let contentType = "application/proto";
    let body: Uint8Array;
    try {
      const input = parse(method, await readBody(req));
      body = toBinary(method.output, await this.invoke(spec, context, input));
    } catch (thrown) {
      controller.abort(thrown);
      const error =
        thrown instanceof ConnectError
          ? thrown
          : new ConnectError("internal error", Code.Internal, undefined, undefined, thrown);
      status = codeToHttpStatus(error.code);
      contentType = "application/json";
      if (!error.isWireError) mergeNonProtocolHeaders(context.responseHeader, error.metadata);
      body = errorToJsonBytes(error, undefined);
    } finally {
      clearTimeout(timer);
      res.off("close", onClose);
      controller.abort(callEnded);
    }
    if (res.destroyed || res.writableEnded) return;
    const out: OutgoingHttpHeaders = { "content-type": contentType, "content-length": body.byteLength };
    context.responseHeader.forEach((value, name) => {
      if (name !== "content-type" && name !== "content-length") out[name] = value;
    });
    context.responseTrailer.forEach((value, name) => {
      out[`trailer-${name}`] = value;
    });
    res.writeHead(status, out);
    res.end(body);
  }

  /** The implementation behind the server's interceptors, as Connect's handler runs it. */
  private async invoke(spec: UnarySpec, context: HandlerContext, input: UnaryRequest["message"]) {
    const { method } = spec;
    const implementation: AnyFn = async (call) => {
      const request = call as UnaryRequest;
      const sameAsContext =
        request.header === context.requestHeader &&
        request.signal === context.signal &&
        request.contextValues === context.values;
      const output = await spec.impl(
        request.message,
        sameAsContext
          ? context
          : {
              ...context,
              service: request.service,
              requestHeader: request.header,
              signal: request.signal,
              values: request.contextValues,
            },
      );
      return {
        stream: false,
        service: method.parent,
        method,
        header: context.responseHeader,
        trailer: context.responseTrailer,
        message: create(method.output, output),
      } satisfies UnaryResponse;
    };
    const next = behindInterceptors(this.interceptors, implementation);
    const response = (await next({
      stream: false,
      service: method.parent,
      method,
      requestMethod: "POST",
      url: context.url,
      signal: context.signal,
      header: context.requestHeader,
      contextValues: context.values,
      message: input,
    } satisfies UnaryRequest)) as UnaryResponse;
    replaceHeaders(context.responseHeader, response.header);
    replaceHeaders(context.responseTrailer, response.trailer);
    return response.message;
  }
}

/** A message that is not valid protobuf binary is the caller's bad input, as a JSON one is under Connect. */
function parse(method: DescMethodUnary, bytes: Uint8Array): UnaryRequest["message"] {
  try {
    return fromBinary(method.input, bytes);
  } catch (error) {
    throw new ConnectError(
      `parse binary: ${error instanceof Error ? error.message : String(error)}`,
      Code.InvalidArgument,
    );
  }
}

function readBody(req: NodeServerRequest): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let ended = false;
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.once("end", () => {
      ended = true;
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
    });
    req.once("error", reject);
    req.once("close", () => {
      if (!ended) reject(new ConnectError("the caller cancelled the call before its message arrived", Code.Canceled));
    });
  });
}

function webHeaders(headers: IncomingHttpHeaders): Headers {
  const web = new Headers();
  for (const name in headers) {
    const value = headers[name];
    if (name.startsWith(":") || value === undefined) continue;
    if (Array.isArray(value)) for (const each of value) web.append(name, each);
    else web.append(name, value);
  }
  return web;
}

/** An interceptor may answer with headers of its own; the written answer carries exactly those. */
function replaceHeaders(target: Headers, source: Headers): void {
  if (source === target) return;
  const names: string[] = [];
  target.forEach((_, name) => {
    names.push(name);
  });
  for (const name of names) target.delete(name);
  source.forEach((value, name) => {
    target.set(name, value);
  });
}

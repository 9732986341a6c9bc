import { type ClientHttp2Session, connect, constants, type IncomingHttpHeaders } from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createContextValues,
  type Interceptor,
  type Transport,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import {
  errorFromJsonBytes,
  requestHeader,
  trailerDemux,
  validateResponse,
} from "@connectrpc/connect/protocol-connect";
import { type AnyFn, abortAtDeadline, behindInterceptors } from "./unary-call-parts.ts";

/**
 * Unary calls of the Connect protocol (binary, uncompressed) over one h2c session per service, written on
 * node:http2 directly. Connect's own Node client spent about 500 µs of CPU per call more than a bare http2
 * request of the same bytes, on its stream plumbing (async iterables for one message each way, a session
 * manager's bookkeeping); this one spends about 220 more (services/platform/bench/unary-call.bench.ts), and
 * every hop of the mesh paid the difference. The protocol's rules stay Connect's own: its
 * helpers build the request headers, validate the answer and read an error's JSON, and the interceptors, the
 * deadline and the cancellation run as its `runUnaryCall` runs them. Streaming calls go to `streams`, Connect's
 * transport.
 */
export function unaryTransport(options: {
  baseUrl: string;
  defaultTimeoutMs: number | undefined;
  interceptors: Interceptor[];
  streams: Transport;
}): Transport {
  const sessions = new SessionHolder(options.baseUrl);
  const base = options.baseUrl.replace(/\/$/, "");
  const send: AnyFn = async (call) => {
    const req = call as UnaryRequest;
    const { method } = req;
    const answer = await sessions.post(
      new URL(req.url).pathname,
      req.header,
      toBinary(method.input, req.message),
      req.signal,
    );
    const headers = new Headers();
    for (const [name, value] of Object.entries(answer.headers))
      if (!name.startsWith(":") && value !== undefined)
        for (const each of Array.isArray(value) ? value : [value]) headers.append(name, each);
    const { isUnaryError, unaryError } = validateResponse(method.methodKind, true, answer.status, headers);
    const [responseHeader, trailer] = trailerDemux(headers);
    if (isUnaryError) {
      const metadata = new Headers(responseHeader);
      trailer.forEach((value, name) => {
        metadata.append(name, value);
      });
      throw errorFromJsonBytes(answer.body, metadata, unaryError as ConnectError);
    }
    return {
      stream: false,
      service: method.parent,
      method,
      header: responseHeader,
      message: fromBinary(method.output, answer.body),
      trailer,
    } satisfies UnaryResponse;
  };
  const next = behindInterceptors(options.interceptors, send);
  return {
    stream: (...args) => options.streams.stream(...args),
    async unary(method, signal, timeoutMs, header, message, contextValues) {
      const timeout = timeoutMs === undefined ? options.defaultTimeoutMs : timeoutMs <= 0 ? undefined : timeoutMs;
      const call = callSignal(signal, timeout);
      try {
        return (await next({
          stream: false,
          service: method.parent,
          method,
          requestMethod: "POST",
          url: `${base}/${method.parent.typeName}/${method.name}`,
          header: requestHeader(method.methodKind, true, timeout, header, false),
          contextValues: contextValues ?? createContextValues(),
          message: create(method.input, message),
          signal: call.signal,
        } satisfies UnaryRequest)) as UnaryResponse<typeof method.input, typeof method.output>;
      } catch (thrown) {
        throw call.failed(thrown);
      } finally {
        call.ended();
      }
    },
  };
}

/**
 * The signal a call's interceptors and request carry: aborted by the caller's signal or at the deadline, as
 * Connect's `runUnaryCall` does, but never aborted without a reason once the call ended. That abort made a
 * DOMException, with its stack, at the end of every call: about 45 µs of a call's CPU.
 */
function callSignal(caller: AbortSignal | undefined, timeoutMs: number | undefined) {
  const controller = new AbortController();
  const cancel = () => controller.abort(caller?.reason);
  const deadline = abortAtDeadline(controller, timeoutMs);
  if (caller?.aborted) cancel();
  else caller?.addEventListener("abort", cancel);
  return {
    signal: controller.signal,
    /** The call's error: the abort's reason once the call was aborted, else what it threw. */
    failed(thrown: unknown): ConnectError {
      const error = controller.signal.aborted
        ? ConnectError.from(controller.signal.reason, Code.Canceled)
        : ConnectError.from(thrown);
      controller.abort(error);
      return error;
    },
    ended() {
      clearTimeout(deadline);
      caller?.removeEventListener("abort", cancel);
    },
  };
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Uint8Array;
}

/**
 * One h2c session, opened on first use and again after it closes (the server stopped, a GOAWAY, a network
 * error). It keeps the process alive only while a call is open on it, as a pooled keep-alive socket would.
 */
class SessionHolder {
  private readonly baseUrl: string;
  private live: { session: ClientHttp2Session; open: number } | undefined;

  constructor(baseUrl: string) {
    this.baseUrl = baseUrl;
  }

  private current(): { session: ClientHttp2Session; open: number } {
    const live = this.live;
    if (live && !live.session.closed && !live.session.destroyed) return live;
    const opened = { session: connect(this.baseUrl), open: 0 };
    const forget = () => {
      if (this.live === opened) this.live = undefined;
    };
    // A session's failure reaches each call on it as its stream's error; here it only stops the session's reuse.
    opened.session.on("error", forget);
    opened.session.on("goaway", forget);
    opened.session.on("close", forget);
    opened.session.unref();
    this.live = opened;
    return opened;
  }

  /**
   * One request and its whole answer. A call aborted (cancelled, or past its deadline) resets its stream and
   * rejects with the signal's reason, which `runUnaryCall` turns into the call's error.
   */
  post(path: string, header: Headers, body: Uint8Array, signal: AbortSignal): Promise<Answer> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const live = this.current();
    const { session } = live;
    const outgoing: Record<string, string> = { ":method": "POST", ":path": path };
    header.forEach((value, name) => {
      outgoing[name] = value;
    });
    if (live.open++ === 0) session.ref();
    return new Promise<Answer>((resolve, reject) => {
      const stream = session.request(outgoing);
      const chunks: Buffer[] = [];
      let status = 0;
      let headers: IncomingHttpHeaders = {};
      let settled = false;
      const settle = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener("abort", onAbort);
        if (--live.open === 0 && !session.destroyed) session.unref();
        outcome();
      };
      const failed = (why: string, cause?: unknown) =>
        settle(() =>
          reject(
            signal.aborted
              ? signal.reason
              : new ConnectError(
                  `the service could not be reached: ${why}`,
                  Code.Unavailable,
                  undefined,
                  undefined,
                  cause,
                ),
          ),
        );
      const onAbort = () => {
        stream.close(constants.NGHTTP2_CANCEL);
        failed("cancelled");
      };
      signal.addEventListener("abort", onAbort);
      stream.on("response", (received) => {
        headers = received;
        status = Number(received[":status"]);
      });
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => settle(() => resolve({ status, headers, body: Buffer.concat(chunks) })));
      stream.on("error", (error) => failed(error.message, error));
      // A stream reset before its answer ended (the server stopped, a refused stream after a GOAWAY).
      stream.on("close", () => failed(`the http/2 stream closed with code ${stream.rstCode}`));
      stream.end(body);
    });
  }
}

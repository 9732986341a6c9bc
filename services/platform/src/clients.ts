import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { rpcClientTracing } from "./rpc-tracing.ts";
import { unaryTransport } from "./unary-transport.ts";

/**
 * A client for another service of the mesh: Connect over h2c, with a deadline on every call, and no
 * compression: inside the mesh gzip costs more CPU at both ends than the bytes it saves. Unary calls take
 * our own lean transport (unary-transport.ts); streaming calls Connect's.
 */
export function createInternalClient<S extends DescService>(
  service: S,
  baseUrl: string,
  options: { timeoutMs?: number } = {},
): Client<S> {
  const defaultTimeoutMs = options.timeoutMs ?? 5000;
  const interceptors = rpcClientTracing();
  const streams = createConnectTransport({
    baseUrl,
    httpVersion: "2",
    defaultTimeoutMs,
    acceptCompression: [],
    interceptors,
  });
  return createClient(service, unaryTransport({ baseUrl, defaultTimeoutMs, interceptors, streams }));
}

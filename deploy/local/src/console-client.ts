import type { Interceptor, Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";

/** A transport to the gateway's console port that sends the operator credential on every call. */
export function consoleTransport(baseUrl: string, token: string, httpVersion: "1.1" | "2" = "2"): Transport {
  const withCredential: Interceptor = (next) => (request) => {
    request.header.set("authorization", `Bearer ${token}`);
    return next(request);
  };
  return createConnectTransport({ baseUrl, httpVersion, interceptors: [withCredential] });
}

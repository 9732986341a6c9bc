import { request } from "node:http";
import { Code, ConnectError } from "@connectrpc/connect";
import { type Logger, type NodeServerRequest, type NodeServerResponse, sendRpcError } from "@svc/platform";

/**
 * Each service owns its console operations (`svc.<package>.v1.<Name>ConsoleService`, defined in its own
 * proto and implemented in the service). Operators and `svcctl` still need one address: this console
 * port forwards such calls, unchanged, to the service that owns the package.
 */
export function consoleForwarding(targets: Record<string, string>, logger: Logger) {
  return (req: NodeServerRequest, res: NodeServerResponse): boolean => {
    const path = req.url ?? "";
    const [pathname = ""] = path.split("?");
    const protoPackage = /^\/(svc\.[a-z_]+\.v1)\.[A-Za-z]+ConsoleService\/[A-Za-z]+$/.exec(pathname)?.[1];
    if (protoPackage === undefined) return false;
    const target = targets[protoPackage];
    if (!target) return false;

    const upstream = request(
      new URL(path, target),
      { method: req.method, headers: forwardable(req.headers) },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, forwardable(answer.headers));
        answer.pipe(res as NodeJS.WritableStream);
      },
    );
    upstream.on("error", (error) => {
      logger.warn("console forwarding failed", { target, path, error });
      if (res.headersSent) return void res.end();
      sendRpcError(req, res, new ConnectError(`${protoPackage} console unreachable`, Code.Unavailable));
    });
    (req as NodeJS.ReadableStream).pipe(upstream);
    return true;
  };
}

/** HTTP/2 pseudo-headers and hop-by-hop headers belong to one connection, not to the forwarded call. */
const connectionHeaders = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
  "http2-settings",
  "host",
  "proxy-connection",
  "te",
]);

function forwardable(headers: NodeJS.Dict<string | string[]>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name.startsWith(":") || connectionHeaders.has(name)) continue;
    out[name] = value;
  }
  return out;
}

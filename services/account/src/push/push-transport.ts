import { type ClientRequest, Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { type ClientHttp2Session, type ClientHttp2Stream, connect as connectHttp2, constants } from "node:http2";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import { connect as connectTls, type TLSSocket } from "node:tls";

/** A push service's answer to one push: its status, its `Retry-After`, and the HTTP it came over. */
export interface PushAnswer {
  status: number;
  retryAfter: string | undefined;
  protocol: "2" | "1.1";
}

export interface PushTransport {
  /** Sends one push; rejects when no answer came (no connection, the timeout, or `close`). */
  post(url: URL, headers: Record<string, string | number>, body: Buffer): Promise<PushAnswer>;
  /** Cuts every send in flight short and closes every connection; a later `post` rejects at once. */
  close(): void;
}

/** A connection to a push service that carried nothing for this long is closed. */
const idleMs = 60_000;

/**
 * How pushes reach their push services. Over https the first push to an origin offers HTTP/2 and HTTP/1.1
 * (ALPN); a service that takes HTTP/2 (RFC 8030 §3 expects it: FCM, Mozilla's and Apple's do) gets every later
 * push as a stream on that one connection, its VAPID header sent once and then indexed (HPACK), rather than a
 * TLS connection for each push a burst has in flight at once. An origin that chose HTTP/1.1, and plain http
 * (a loopback receiver in development), use kept-alive HTTP/1.1 connections. A connection that fails, or that
 * the service ends (GOAWAY), is forgotten, and the next push to the origin connects again. Redirects are never
 * followed: a push service answers the endpoint itself (RFC 8030 §5).
 */
export function pushTransport(options: { timeoutMs: number }): PushTransport {
  const { timeoutMs } = options;
  let closed = false;
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  /** Per https origin: its HTTP/2 session (being made, or made), or "1.1" once the service chose HTTP/1.1. */
  const links = new Map<string, Promise<ClientHttp2Session | "1.1">>();
  /** Sends waiting for their answer, each with what cuts it short. */
  const unanswered = new Set<() => void>();
  /** TLS connections still being made. */
  const connecting = new Set<TLSSocket>();

  /** Connects over TLS offering h2 and http/1.1, and keeps what the service chose. */
  const negotiate = (url: URL) =>
    new Promise<ClientHttp2Session | "1.1">((resolve, reject) => {
      const host = url.hostname.replace(/^\[|\]$/g, "");
      const socket = connectTls({
        host,
        port: Number(url.port || 443),
        ...(isIP(host) === 0 && { servername: host }),
        ALPNProtocols: ["h2", "http/1.1"],
      });
      connecting.add(socket);
      const timer = setTimeout(() => socket.destroy(new Error(`no TLS connection in ${timeoutMs} ms`)), timeoutMs);
      const made = () => {
        clearTimeout(timer);
        connecting.delete(socket);
      };
      socket.once("error", (error) => {
        made();
        reject(error);
      });
      socket.once("close", () => {
        made();
        reject(new Error("the TLS connection closed before it was made"));
      });
      socket.once("secureConnect", () => {
        made();
        if (socket.alpnProtocol !== "h2") {
          socket.destroy();
          return resolve("1.1");
        }
        const session = connectHttp2(url.origin, { createConnection: () => socket });
        session.setTimeout(idleMs, () => session.close());
        // A broken session fails its streams, which answer for themselves; the session is then forgotten.
        session.on("error", () => {});
        resolve(session);
      });
    });

  /** Drops `link` as the origin's, unless a newer one has taken its place already. */
  const forgetLink = (origin: string, link: Promise<ClientHttp2Session | "1.1">) => {
    if (links.get(origin) === link) links.delete(origin);
  };

  const linkTo = (url: URL): Promise<ClientHttp2Session | "1.1"> => {
    const kept = links.get(url.origin);
    if (kept) return kept;
    const link = negotiate(url);
    links.set(url.origin, link);
    const forget = () => forgetLink(url.origin, link);
    link.then((session) => {
      if (session === "1.1") return;
      session.once("close", forget);
      session.once("goaway", forget);
    }, forget);
    return link;
  };

  const overHttp1 = (url: URL, headers: Record<string, string | number>, body: Buffer) =>
    new Promise<PushAnswer>((resolve, reject) => {
      const https = url.protocol === "https:";
      const sent: ClientRequest = (https ? httpsRequest : httpRequest)(
        url,
        { method: "POST", headers, agent: https ? agents.https : agents.http },
        (response) => {
          answered();
          response.resume();
          resolve({ status: response.statusCode ?? 0, retryAfter: single(response.headers), protocol: "1.1" });
        },
      );
      const cut = () => sent.destroy(new Error("the push transport is closing"));
      // A timer of its own, not a signal composed of the sender's and a timeout's: `AbortSignal.any` and
      // `AbortSignal.timeout` took about 2% of a push's CPU in a burst.
      const timer = setTimeout(() => sent.destroy(new Error(`no answer in ${timeoutMs} ms`)), timeoutMs);
      const answered = () => {
        clearTimeout(timer);
        unanswered.delete(cut);
      };
      unanswered.add(cut);
      sent.on("error", (error) => {
        answered();
        reject(error);
      });
      sent.end(body);
    });

  const overHttp2 = (session: ClientHttp2Session, url: URL, headers: Record<string, string | number>, body: Buffer) =>
    new Promise<PushAnswer>((resolve, reject) => {
      const fields: Record<string, string | number> = { ":method": "POST", ":path": `${url.pathname}${url.search}` };
      for (const [name, value] of Object.entries(headers)) fields[name.toLowerCase()] = value;
      let stream: ClientHttp2Stream;
      try {
        stream = session.request(fields);
      } catch (error) {
        return reject(new Unprocessed("the connection is closing", { cause: error }));
      }
      let settled = false;
      const settle = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        unanswered.delete(cut);
        outcome();
      };
      const fail = (error: Error) => settle(() => reject(error));
      const cut = () => {
        stream.close(constants.NGHTTP2_CANCEL);
        fail(new Error("the push transport is closing"));
      };
      const timer = setTimeout(() => {
        stream.close(constants.NGHTTP2_CANCEL);
        fail(new Error(`no answer in ${timeoutMs} ms`));
      }, timeoutMs);
      unanswered.add(cut);
      stream.once("response", (answer) => {
        stream.resume();
        const status = Number(answer[":status"]);
        settle(() => resolve({ status, retryAfter: single(answer), protocol: "2" }));
      });
      // A stream refused unprocessed (RFC 9113 §8.7: a GOAWAY crossed it, or the connection was full) is safe to
      // send again.
      const unprocessed = () =>
        stream.rstCode === constants.NGHTTP2_REFUSED_STREAM
          ? new Unprocessed("the push service refused the stream unprocessed")
          : undefined;
      stream.on("error", (error) => fail(unprocessed() ?? error));
      stream.once("close", () =>
        fail(unprocessed() ?? new Error("the push service closed the stream without an answer")),
      );
      stream.end(body);
    });

  return {
    async post(url, headers, body) {
      if (closed) throw new Error("the push transport is closed");
      if (url.protocol !== "https:") return overHttp1(url, headers, body);
      // A kept session that has ended since, or a push it did not process, is tried once more on a new connection.
      for (let tries = 0; ; tries++) {
        const pending = linkTo(url);
        const link = await pending;
        if (link === "1.1") return overHttp1(url, headers, body);
        try {
          if (link.closed || link.destroyed) throw new Unprocessed("the connection has closed");
          return await overHttp2(link, url, headers, body);
        } catch (error) {
          if (!(error instanceof Unprocessed) || tries > 0 || closed) throw error;
          forgetLink(url.origin, pending);
        }
      }
    },
    close() {
      closed = true;
      for (const socket of connecting) socket.destroy();
      for (const cut of unanswered) cut();
      for (const link of links.values())
        link.then(
          (session) => session !== "1.1" && session.destroy(),
          () => {},
        );
      links.clear();
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

/** A push the service never processed: sending it again cannot deliver it twice. */
class Unprocessed extends Error {}

const single = (headers: IncomingHttpHeaders): string | undefined => {
  const value = headers["retry-after"];
  return Array.isArray(value) ? value[0] : value;
};

import { createDecipheriv, createECDH, createHmac, randomBytes } from "node:crypto";
import { createServer, type IncomingHttpHeaders } from "node:http";
import { createSecureServer, type Http2Session } from "node:http2";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { importJWK, type JWTPayload, jwtVerify } from "jose";
import type { TlsCertificate } from "./tls-certificate.ts";

/**
 * A push service (RFC 8030) on a loopback port, for tests of what the sender sends: it checks each push's
 * VAPID (RFC 8292) JWT with jose, decrypts its body with the RFC 8291 aes128gcm decryption written below on
 * node:crypto (independent of the sender's library), records it, and answers what the test queued. With
 * `checkLater` (for benchmarks) it answers every request 201 at once and keeps it for `check`. With `tls` it is
 * https, offering HTTP/2 and HTTP/1.1 as the public push services do (or HTTP/1.1 only, `http2: false`).
 */
interface PushReceipt {
  endpoint: string;
  /** performance.now() when the request reached the service, before any check. */
  arrivedAt: number;
  /** What the service answered. */
  status: number;
  ttl: number;
  urgency: string | null;
  topic: string | null;
  /** The decrypted payload, parsed as JSON. */
  payload: unknown;
  vapid: JWTPayload;
  /** "2.0" or "1.1". */
  httpVersion: string;
}

/** What a browser's PushManager gives the app: the endpoint and the keys the pushes are encrypted to. */
export interface BrowserSubscription {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

type Answer = number | "hang";

/** A request as it arrived, not yet checked. */
export interface ArrivedPush {
  endpoint: string;
  arrivedAt: number;
  httpVersion: string;
  method: string | undefined;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface TestPushService {
  origin: string;
  /** A new browser subscription at this service, with its own key pair and auth secret. */
  subscribe(): BrowserSubscription;
  /** The next pushes to `endpoint` get these answers, in order ("hang" never answers); then 201. */
  answerNext(endpoint: string, ...answers: Answer[]): void;
  received: PushReceipt[];
  /** Pushes refused for a bad VAPID JWT, encryption or header: a correct sender makes none. */
  problems: string[];
  /** Resolves with the next push to `endpoint` that arrives (or has arrived and was not yet taken). */
  next(endpoint: string): Promise<PushReceipt>;
  /** With `checkLater`: the requests arrived since the last call, unchecked. */
  takeArrived(): ArrivedPush[];
  /** Checks arrived requests as pushes (into `received` or `problems`), as the service does without `checkLater`. */
  check(arrived: readonly ArrivedPush[]): Promise<void>;
  /** Connections the service has accepted so far (TLS handshakes, over https). */
  connections(): number;
  /** Ends every connection as a push service going away does: HTTP/2's GOAWAY, then the socket. */
  endConnections(): void;
  stop(): Promise<void>;
}

const label = (text: string) => Buffer.concat([Buffer.from(text), Buffer.from([0])]);
const hmac = (key: Buffer, data: Buffer) => createHmac("sha256", key).update(data).digest();

/** RFC 8291 §3.4 and RFC 8188 §2 for a single record: salt, rs, keyid (the sender's public key), ciphertext. */
function decryptAes128gcm(body: Buffer, receiver: { privateKey: Buffer; publicKey: Buffer; auth: Buffer }) {
  const salt = body.subarray(0, 16);
  const idLength = body[20] ?? 0;
  const senderPublic = body.subarray(21, 21 + idLength);
  const ciphertext = body.subarray(21 + idLength);
  const ecdh = createECDH("prime256v1");
  ecdh.setPrivateKey(receiver.privateKey);
  const secret = ecdh.computeSecret(senderPublic);
  const prkKey = hmac(receiver.auth, secret);
  const ikm = hmac(prkKey, Buffer.concat([label("WebPush: info"), receiver.publicKey, senderPublic, Buffer.from([1])]));
  const prk = hmac(salt, ikm);
  const cek = hmac(prk, Buffer.concat([label("Content-Encoding: aes128gcm"), Buffer.from([1])])).subarray(0, 16);
  const nonce = hmac(prk, Buffer.concat([label("Content-Encoding: nonce"), Buffer.from([1])])).subarray(0, 12);
  const decipher = createDecipheriv("aes-128-gcm", cek, nonce);
  decipher.setAuthTag(ciphertext.subarray(ciphertext.length - 16));
  const padded = Buffer.concat([decipher.update(ciphertext.subarray(0, ciphertext.length - 16)), decipher.final()]);
  // The last record ends with the delimiter 0x02, then zero padding.
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end--;
  if (padded[end] !== 2) throw new Error("the last record does not end with the 0x02 delimiter");
  return padded.subarray(0, end);
}

const readBody = async (req: AsyncIterable<unknown>) => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};

type Incoming = AsyncIterable<unknown> & {
  url?: string | undefined;
  method?: string | undefined;
  headers: IncomingHttpHeaders;
  httpVersion: string;
};

/** What the service needs of a response, over HTTP/1.1 and HTTP/2 alike. */
type Outgoing = { writeHead(status: number, headers?: Record<string, string>): unknown; end(): unknown };

/**
 * `vapidPublicKey`: the VAPID key the JWTs must be signed with (base64url point), as the server serves it.
 * `now`: the sender's clock, which the JWT's expiry follows (the real time unless given).
 */
export async function startPushService(options: {
  vapidPublicKey: () => Promise<string>;
  checkLater?: boolean;
  now?: () => Date;
  tls?: { certificate: TlsCertificate; http2: boolean };
}): Promise<TestPushService> {
  const receivers = new Map<string, { privateKey: Buffer; publicKey: Buffer; auth: Buffer }>();
  const answers = new Map<string, Answer[]>();
  const received: PushReceipt[] = [];
  const taken = new Set<PushReceipt>();
  const waiting: { endpoint: string; resolve: (receipt: PushReceipt) => void }[] = [];
  const problems: string[] = [];
  let arrived: ArrivedPush[] = [];

  const verifyVapid = async (authorization: string, audience: string): Promise<JWTPayload> => {
    const match = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(authorization);
    if (!match) throw new Error(`Authorization is not "vapid t=…, k=…": ${authorization}`);
    const [, token, key] = match as unknown as [string, string, string];
    const expected = await options.vapidPublicKey();
    if (key !== expected) throw new Error(`k is ${key}, not the served key ${expected}`);
    const point = Buffer.from(key, "base64url");
    const jwk = {
      kty: "EC",
      crv: "P-256",
      x: point.subarray(1, 33).toString("base64url"),
      y: point.subarray(33, 65).toString("base64url"),
    };
    const currentDate = options.now?.() ?? new Date();
    const { payload } = await jwtVerify(token, await importJWK(jwk, "ES256"), {
      audience,
      algorithms: ["ES256"],
      currentDate,
    });
    const now = Math.floor(currentDate.getTime() / 1000);
    if (typeof payload.exp !== "number" || payload.exp > now + 24 * 3600)
      throw new Error(`exp must be within 24 hours (RFC 8292 §2): ${payload.exp}`);
    if (typeof payload.sub !== "string" || !/^(mailto:|https:)/.test(payload.sub))
      throw new Error(`sub must be a mailto: or https: URL: ${payload.sub}`);
    return payload;
  };

  /** Checks one request and records it; answers what the service answers (400 for a bad push). */
  const take = async ({ endpoint, arrivedAt, httpVersion, method, headers, body }: ArrivedPush): Promise<Answer> => {
    const receiver = receivers.get(endpoint);
    try {
      if (method !== "POST" || !receiver) throw new Error(`${method} to an unknown endpoint ${endpoint}`);
      if (headers["content-encoding"] !== "aes128gcm")
        throw new Error(`Content-Encoding is ${headers["content-encoding"]}`);
      const ttl = Number(headers.ttl);
      if (!Number.isInteger(ttl) || ttl < 0) throw new Error(`TTL is ${headers.ttl}`);
      const vapid = await verifyVapid(String(headers.authorization), origin);
      const payload = JSON.parse(decryptAes128gcm(body, receiver).toString()) as unknown;
      const answer = answers.get(endpoint)?.shift() ?? 201;
      const receipt: PushReceipt = {
        endpoint,
        arrivedAt,
        status: answer === "hang" ? 0 : answer,
        ttl,
        urgency: (headers.urgency as string | undefined) ?? null,
        topic: (headers.topic as string | undefined) ?? null,
        payload,
        vapid,
        httpVersion,
      };
      received.push(receipt);
      const waiter = waiting.findIndex((w) => w.endpoint === endpoint);
      if (waiter >= 0) {
        taken.add(receipt);
        waiting.splice(waiter, 1)[0]?.resolve(receipt);
      }
      return answer;
    } catch (error) {
      problems.push((error as Error).message);
      return 400;
    }
  };

  const handle = async (req: Incoming, res: Outgoing) => {
    const arrivedAt = performance.now();
    const endpoint = `${origin}${req.url}`;
    const request = {
      endpoint,
      arrivedAt,
      httpVersion: req.httpVersion,
      method: req.method,
      headers: req.headers,
      body: await readBody(req),
    };
    if (options.checkLater) {
      arrived.push(request);
      res.writeHead(201);
      res.end();
      return;
    }
    const answer = await take(request);
    if (answer === "hang") return;
    res.writeHead(answer, answer === 201 ? { Location: `${endpoint}/messages/${randomBytes(4).toString("hex")}` } : {});
    res.end();
  };
  const { tls } = options;
  const server = !tls
    ? createServer(handle)
    : tls.http2
      ? createSecureServer({ ...tls.certificate, allowHTTP1: true }, handle)
      : createHttpsServer({ ...tls.certificate }, handle);
  let accepted = 0;
  const sockets = new Set<Socket>();
  const sessions = new Set<Http2Session>();
  server.on(tls ? "secureConnection" : "connection", (socket: Socket) => {
    accepted++;
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  server.on("session", (session: Http2Session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  const endConnections = () => {
    for (const session of sessions) session.close();
    for (const socket of sockets) socket.end();
  };
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `${tls ? "https" : "http"}://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    origin,
    received,
    problems,
    subscribe() {
      const ecdh = createECDH("prime256v1");
      ecdh.generateKeys();
      const auth = randomBytes(16);
      const endpoint = `${origin}/push/${randomBytes(12).toString("base64url")}`;
      receivers.set(endpoint, { privateKey: ecdh.getPrivateKey(), publicKey: ecdh.getPublicKey(), auth });
      return {
        endpoint,
        keys: { p256dh: ecdh.getPublicKey().toString("base64url"), auth: auth.toString("base64url") },
      };
    },
    answerNext(endpoint, ...queued) {
      answers.set(endpoint, [...(answers.get(endpoint) ?? []), ...queued]);
    },
    next(endpoint) {
      const ready = received.find((receipt) => receipt.endpoint === endpoint && !taken.has(receipt));
      if (ready) {
        taken.add(ready);
        return Promise.resolve(ready);
      }
      return new Promise((resolve) => waiting.push({ endpoint, resolve }));
    },
    takeArrived() {
      const taking = arrived;
      arrived = [];
      return taking;
    },
    async check(requests) {
      for (const request of requests) await take(request);
    },
    connections: () => accepted,
    endConnections,
    async stop() {
      for (const session of sessions) session.destroy();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

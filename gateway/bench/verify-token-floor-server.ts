import { createPublicKey, verify } from "node:crypto";
import { createServer } from "node:http";

/**
 * The floor under verify-token (test/bench/verify-token.bench.ts): a bare node:http server that does the least
 * any verifier must per request — read the POST, parse its JSON, verify the token's ES256 signature with
 * node:crypto on a key object made once, parse the payload, answer JSON in the gateway's envelope — and
 * nothing else: no pipeline, no rate limit, no ledger, no database. Its key is the JWK in argv[2]; it prints
 * its port when it listens.
 */
const key = createPublicKey({ key: JSON.parse(process.argv[2]!), format: "jwk" });

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    const { token } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { token: string };
    const [header, payload, signature] = token.split(".");
    const valid = verify(
      "sha256",
      Buffer.from(`${header}.${payload}`),
      { key, dsaEncoding: "ieee-p1363" },
      Buffer.from(signature!, "base64url"),
    );
    const claims = JSON.parse(Buffer.from(payload!, "base64url").toString("utf8"));
    const body = JSON.stringify({ data: { data: { valid, replayed: false, claims } } });
    res.writeHead(200, {
      "content-type": "application/json; charset=utf-8",
      "content-length": Buffer.byteLength(body),
    });
    res.end(body);
  });
});
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  if (typeof address === "object" && address) console.log(address.port);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));

import { webcrypto } from "node:crypto";
import { Agent, request } from "node:http";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createInternalClient } from "@svc/platform";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { measureThroughput, startBenchMesh } from "./bench-infrastructure.ts";

/**
 * POST /v1/sdk/verify-token through the real gateway and signing service (with its replay ledger)
 * against raw crypto.subtle.verify of the same tokens, both with 16 operations in flight.
 */
const inFlight = 16;
const durationMs = 5000;
const tokenCount = 60_000;

const mesh = await startBenchMesh(["signing"]);
try {
  const signing = createInternalClient(SigningService, mesh.urls.signing!, { timeoutMs: 30_000 });
  const tokens: string[] = [];
  while (tokens.length < tokenCount) {
    const batch = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        signing.signAttestation({
          requestId: `req_${(tokens.length + i).toString(16).padStart(32, "0")}`,
          verified: true,
          organizationId: "bench-org",
          verifiedAt: timestampFromDate(new Date()),
        }),
      ),
    );
    tokens.push(...batch.map((r) => r.token));
  }

  const { keys } = await (await fetch(`${mesh.gatewayUrl}/.well-known/jwks.json`)).json();
  const publicKey = await webcrypto.subtle.importKey("jwk", keys[0], { name: "ECDSA", namedCurve: "P-256" }, false, [
    "verify",
  ]);
  const parts = tokens.map((t) => t.split("."));
  const raw = await measureThroughput(inFlight, durationMs, async (i) => {
    const [header, payload, signature] = parts[i % parts.length]!;
    const ok = await webcrypto.subtle.verify(
      { name: "ECDSA", hash: "SHA-256" },
      publicKey,
      Buffer.from(signature!, "base64url"),
      Buffer.from(`${header}.${payload}`),
    );
    if (!ok) throw new Error("raw verification failed");
  });

  const agent = new Agent({ keepAlive: true, maxSockets: inFlight });
  const url = new URL("/v1/sdk/verify-token", mesh.gatewayUrl);
  const post = (body: string) =>
    new Promise<void>((resolve, reject) => {
      const call = request(
        url,
        {
          method: "POST",
          agent,
          headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (c: Buffer) => chunks.push(c));
          response.on("end", () => {
            const result = JSON.parse(Buffer.concat(chunks).toString());
            if (result.data?.data?.valid !== true) reject(new Error(`unexpected answer: ${Buffer.concat(chunks)}`));
            else resolve();
          });
        },
      );
      call.on("error", reject);
      call.end(body);
    });
  let used = 0;
  const gateway = await measureThroughput(inFlight, durationMs, async () => {
    const token = tokens[used++];
    if (!token) throw new Error("ran out of fresh tokens: raise tokenCount");
    await post(JSON.stringify({ token }));
  });
  agent.destroy();
  console.log(
    JSON.stringify({
      name: "verify-token",
      gateway_ops: Math.round(gateway),
      raw_verify_ops: Math.round(raw),
      ratio: gateway / raw,
      in_flight: inFlight,
    }),
  );
} finally {
  await mesh.stop();
}

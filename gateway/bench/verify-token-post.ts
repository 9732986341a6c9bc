import { type Agent, request } from "node:http";

/** Posts one token to the gateway's verify-token; resolves only when the answer is a valid token. */
export function postVerifyToken(origin: string, token: string, agent: Agent): Promise<void> {
  const body = JSON.stringify({ token });
  return new Promise<void>((resolve, reject) => {
    const call = request(
      new URL("/v1/sdk/verify-token", origin),
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
          if (response.statusCode !== 200 || result.data?.data?.valid !== true)
            reject(new Error(`unexpected answer ${response.statusCode}: ${Buffer.concat(chunks)}`));
          else resolve();
        });
      },
    );
    call.on("error", reject);
    call.end(body);
  });
}

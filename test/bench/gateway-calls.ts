import { type Agent, request } from "node:http";

/** POST /v1/sdk/create-verification-link for the gate `bench` with a grant token; rejects unless it made a request. */
export function postCreateLink(origin: string, grantToken: string, agent: Agent): Promise<void> {
  const body = JSON.stringify({ gate: "bench" });
  return new Promise<void>((resolve, reject) => {
    const call = request(
      new URL("/v1/sdk/create-verification-link", origin),
      {
        method: "POST",
        agent,
        headers: {
          authorization: `Bearer ${grantToken}`,
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (c: Buffer) => chunks.push(c));
        response.on("end", () => {
          const text = Buffer.concat(chunks).toString();
          if (response.statusCode !== 200 || typeof JSON.parse(text).data?.data?.request_id !== "string")
            reject(new Error(`create-verification-link answered ${response.statusCode}: ${text}`));
          else resolve();
        });
      },
    );
    call.on("error", reject);
    call.end(body);
  });
}

import { createServer } from "node:http";

/**
 * A process that answers `POST /v1/sdk/create-session` as the gateway does (the nested envelope, `_rateLimit`),
 * for the SDK's call-overhead bench: it runs apart so that only the client's CPU is measured. Prints its port.
 */
const answer = JSON.stringify({
  data: {
    data: {
      anchor_grant_token: `svcs_${"a".repeat(43)}`,
      organization: { id: "org_7f3a" },
      expires_at: "2026-11-28T10:05:00.000Z",
    },
  },
  _rateLimit: { primary: { limit: 600, remaining: 599, resetIn: 60 } },
});
const server = createServer((request, response) => {
  request.resume();
  request.on("end", () => {
    response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(answer) });
    response.end(answer);
  });
});
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  process.stdout.write(`${typeof address === "object" && address ? address.port : 0}\n`);
});

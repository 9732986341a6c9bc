/**
 * CPU of one unary call between two services of the mesh, on the caller's side: the platform's own client
 * (`createInternalClient`, unary-transport.ts) against Connect's Node client with the same settings
 * (`createConnectTransport`: h2c, no compression, the same deadline), and a bare node:http2 request that sends
 * and reads the same bytes (the floor: what HTTP/2 itself costs). The server is the platform's (`serveConnect`)
 * in a process of its own, answering SigningService.GetKeySet at once; its CPU per call is read from /proc and
 * printed beside, the same server for every arm. A fourth arm sends the bare request without
 * `connect-protocol-version`, which the server leaves to Connect's adapter: its server CPU against the bare arm's
 * is what the server's own unary handler (unary-handler.ts) saves. One call at a time, 15 rounds of 2,000 calls, each round
 * started by another arm, each arm collecting its own garbage inside its figure; figures are medians of the
 * rounds, ratios medians of the rounds' ratios. Reported, not judged: it says what the mesh's own client buys.
 * Prints one line: {"name":"unary-call","ours_cpu_us":…,"connect_cpu_us":…,"bare_h2_cpu_us":…,…}.
 * Run: node services/platform/bench/unary-call.bench.ts [calls per round]
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { connect } from "node:http2";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { GetKeySetRequestSchema, SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { cpuMicrosSince, cpuReading } from "../../../test/bench/process-cpu.ts";
import { createInternalClient } from "../src/clients.ts";

setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

const serverScript = `
  import { createLogger, serveConnect } from "@svc/platform";
  import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
  const service = await serveConnect({
    name: "unary-call-bench", host: "127.0.0.1", port: 0, logger: createLogger("bench", {}, "error"),
    routes: (router) => router.service(SigningService, { getKeySet: () => ({ issuer: "https://issuer.bench" }) }),
    ready: async () => {}, onStop: async () => {},
  });
  process.stdout.write(service.url + "\\n");
`;
const server = spawn(process.execPath, ["--input-type=module", "-e", serverScript], {
  cwd: new URL(".", import.meta.url).pathname,
  stdio: ["ignore", "pipe", "inherit"],
});
const [chunk] = (await once(server.stdout, "data")) as [Buffer];
const url = chunk.toString().trim();
const serverPid = [String(server.pid)];

const timeoutMs = 5000;
const ours = createInternalClient(SigningService, url, { timeoutMs });
const connects = createClient(
  SigningService,
  createConnectTransport({ baseUrl: url, httpVersion: "2", defaultTimeoutMs: timeoutMs, acceptCompression: [] }),
);
const session = connect(url);
const body = toBinary(GetKeySetRequestSchema, { $typeName: "svc.signing.v1.GetKeySetRequest" } as never);
const request = {
  ":method": "POST",
  ":path": `/${SigningService.typeName}/GetKeySet`,
  "content-type": "application/proto",
  "connect-timeout-ms": String(timeoutMs),
};
const send = (headers: Record<string, string>) => () =>
  new Promise<void>((resolve, reject) => {
    const stream = session.request(headers);
    stream.on("data", () => {});
    stream.on("end", resolve);
    stream.on("error", reject);
    stream.end(body);
  });

const arms = {
  ours: () => ours.getKeySet({}).then(() => undefined),
  connect: () => connects.getKeySet({}).then(() => undefined),
  bare: send({ ...request, "connect-protocol-version": "1" }),
  bare_to_adapter: send(request),
};
type Arm = keyof typeof arms;
const perRound = Number(process.argv[2] ?? 2000);
const rounds = 15;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

/** This process's and the server's CPU per call of `calls` calls of `arm`, one at a time. */
async function round(arm: Arm): Promise<{ client: number; server: number }> {
  collectGarbage();
  const serverBefore = cpuReading(serverPid);
  const before = process.cpuUsage();
  for (let i = 0; i < perRound; i++) await arms[arm]();
  collectGarbage();
  const used = process.cpuUsage(before);
  return { client: (used.user + used.system) / perRound, server: cpuMicrosSince(serverBefore, serverPid) / perRound };
}

try {
  for (const arm of Object.keys(arms) as Arm[]) for (let i = 0; i < 500; i++) await arms[arm]();
  const spent: Record<Arm, number[]> = { ours: [], connect: [], bare: [], bare_to_adapter: [] };
  const server: Record<Arm, number[]> = { ours: [], connect: [], bare: [], bare_to_adapter: [] };
  const order = Object.keys(arms) as Arm[];
  for (let r = 0; r < rounds; r++)
    for (let k = 0; k < order.length; k++) {
      const arm = order[(r + k) % order.length] as Arm;
      const measured = await round(arm);
      spent[arm].push(measured.client);
      server[arm].push(measured.server);
    }
  const ratio = (a: number[], b: number[]) => Number(median(a.map((v, i) => v / (b[i] as number))).toFixed(3));
  console.log(
    JSON.stringify({
      name: "unary-call",
      ours_cpu_us: Math.round(median(spent.ours)),
      connect_cpu_us: Math.round(median(spent.connect)),
      bare_h2_cpu_us: Math.round(median(spent.bare)),
      ratio: ratio(spent.ours, spent.connect),
      ours_to_bare: ratio(spent.ours, spent.bare),
      server_cpu_us: {
        ours: Math.round(median(server.ours)),
        connect: Math.round(median(server.connect)),
        bare: Math.round(median(server.bare)),
        bare_to_adapter: Math.round(median(server.bare_to_adapter)),
      },
      server_handler_ratio: ratio(server.bare, server.bare_to_adapter),
    }),
  );
} finally {
  session.close();
  server.kill();
}

import { Agent, request } from "node:http";
import { createClient } from "@connectrpc/connect";
import { consoleTransport } from "@svc/local-mesh/console-client";
import { AccountConsoleService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { AgentConsoleService } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { ConsoleService, type KeyType } from "@svc/proto/console/v1/console_pb.js";
import { GateConsoleService, GateType } from "@svc/proto/gate/v1/gate_pb.js";

/** What a benchmark's partner needs of its mesh ({@link startBenchMesh}'s answer has it). */
type PartnerMesh = { gatewayUrl: string; consoleUrl: string; consoleToken: string };

/** A public API answer: `data` (its inner `data` where the operation has one) and when its last byte arrived. */
type Answer = { body: Record<string, unknown>; at: number };

/** One call to the gateway's JSON API; a refusal (non-200 or `data.error`) rejects with the answer. */
type GatewayCall = (
  method: "GET" | "POST",
  path: string,
  input: Record<string, unknown>,
  credential?: string,
  options?: { origin?: string; agent?: Agent | false; timeoutMs?: number },
) => Promise<Answer>;

/**
 * A partner of the benchmark's mesh, in the development environment: its organization, a caller of the
 * public API over kept-alive connections (`at` read with `clock`, `performance.now()` unless given), and
 * the set-up the wake benchmarks repeat: keys no benchmark's load meets the limits of, the `plain` human
 * gate, agents, sandbox humans and bindings. `close()` ends the kept-alive connections.
 */
export async function benchPartner(mesh: PartnerMesh, name: string, clock: () => number = () => performance.now()) {
  const transport = consoleTransport(mesh.consoleUrl, mesh.consoleToken);
  const operators = createClient(ConsoleService, transport);
  const humans = createClient(AccountConsoleService, transport);
  const agents = createClient(AgentConsoleService, transport);
  const { organizationId } = await operators.createOrganization({ name });
  const environment = Environment.DEVELOPMENT;

  const keepAlive = new Agent({ keepAlive: true });
  const call: GatewayCall = (method, path, input, credential, options = {}) =>
    new Promise((resolve, reject) => {
      const url = new URL(`/v1${path}`, mesh.gatewayUrl);
      if (method === "GET") for (const [k, v] of Object.entries(input)) url.searchParams.set(k, String(v));
      const body = method === "POST" ? JSON.stringify(input) : undefined;
      const headers: Record<string, string | number> = credential ? { authorization: `Bearer ${credential}` } : {};
      if (options.origin) headers.origin = options.origin;
      if (body !== undefined)
        Object.assign(headers, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      const sent = request(url, { method, agent: options.agent ?? keepAlive, headers }, (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (c: Buffer) => chunks.push(c));
        response.on("end", () => {
          const at = clock();
          const parsed = JSON.parse(Buffer.concat(chunks).toString());
          if (response.statusCode !== 200 || parsed.data?.error)
            reject(new Error(`${method} ${path}: ${response.statusCode} ${Buffer.concat(chunks)}`));
          else resolve({ body: parsed.data?.data ?? parsed.data, at });
        });
      });
      sent.on("error", reject);
      if (options.timeoutMs !== undefined)
        sent.setTimeout(options.timeoutMs, () => sent.destroy(new Error(`${method} ${path}: no answer in time`)));
      sent.end(body);
    });

  return {
    organizationId,
    operators,
    call,
    /** A new key whose per-minute, hourly, daily and per-IP limits (those its type has) no benchmark reaches. */
    async key(type: KeyType, allowedOrigins: string[] = []) {
      const created = await operators.createKey({
        organizationId,
        environment,
        type,
        allowedOrigins,
        allowedGates: [],
      });
      for (const bucket of ["per_minute", "hourly", "daily", "per_ip"])
        await operators.setKeyLimits({ keyId: created.keyId, bucket, limit: 1_000_000 }).catch(() => undefined);
      return created;
    },
    /** The human gate `plain`, which create-verification-link names. */
    async plainGate() {
      await createClient(GateConsoleService, transport).createGate({
        organizationId,
        environment,
        key: "plain",
        type: GateType.HUMAN,
        status: "active",
      });
    },
    /** `count` agents, all at once; their keys. */
    registerAgents(count: number, prefix: string, categories: string[]) {
      return Promise.all(
        Array.from({ length: count }, async (_, i) => {
          const registered = await agents.registerAgent({
            organizationId,
            environment,
            name: `${prefix}_${i}`,
            categories,
          });
          return registered.agentKey;
        }),
      );
    },
    /** A sandbox human, silent unless told otherwise (nobody answers for them). */
    sandboxHuman(behavior = SandboxBehavior.SILENT) {
      return humans.createSandboxHuman({ environment, behavior });
    },
    /** Binds the agent to the sandbox human through the public API and the sandbox's claim; the agent's opaque id for them. */
    async bindAgent(agentKey: string, svcUserId: string) {
      const linkCode = (await call("POST", "/agent/bind-session", {}, agentKey)).body.link_code as string;
      await agents.sandboxClaimLinkCode({ svcUserId, linkCode });
      return (await call("GET", "/agent/check-binding", { link_code: linkCode }, agentKey)).body.opaque_id as string;
    },
    close() {
      keepAlive.destroy();
    },
  };
}

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createClient } from "@connectrpc/connect";
import { AgentConsoleService } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { ConsoleService, KeyType } from "@svc/proto/console/v1/console_pb.js";
import { GateConsoleService, GateType } from "@svc/proto/gate/v1/gate_pb.js";
import { consoleTransport } from "./console-client.ts";
import { demoPageOrigin } from "./demo-page.ts";

export interface DemoCredentials {
  organization_id: string;
  development_secret_key: string;
  development_site_key: string;
  site_key_origin: string;
  /** Active development gates: a Human Gate and an Age Gate (18). */
  human_gate: string;
  age_gate: string;
  /** A development agent allowed the category `payments`, for the Agents Ask walk-through. */
  agent_name: string;
  agent_key: string;
  /** A development site key for the widget's demo page (`demo-page.ts`), on its own origin. */
  widget_site_key: string;
}

const demoAgent = { name: "Demo_Agent", displayName: "Demo agent", categories: ["payments"] } as const;

/**
 * On the first start, a demo organization with development keys, gates and an agent (no production key: the
 * banner prints what is provisioned, and a production secret never belongs in a log), so the quickstart's whole flows
 * work at once. Keys are shown once by the console, so they are kept in the local data folder for later starts.
 * No sandbox human: each run of the walk-through creates its own (see start.ts).
 */
export async function provisionDemo(console: { url: string; token: string }, file: string): Promise<DemoCredentials> {
  const transport = consoleTransport(console.url, console.token, "1.1");
  const client = createClient(ConsoleService, transport);
  const agents = createClient(AgentConsoleService, transport);
  const registerAgent = async (organizationId: string, name: string) =>
    (
      await agents.registerAgent({
        organizationId,
        environment: Environment.DEVELOPMENT,
        name,
        displayName: demoAgent.displayName,
        categories: [...demoAgent.categories],
      })
    ).agentKey;
  const widgetSiteKey = async (organizationId: string) =>
    (
      await client.createKey({
        organizationId,
        environment: Environment.DEVELOPMENT,
        type: KeyType.SITE,
        allowedOrigins: [demoPageOrigin],
      })
    ).key;
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, "utf8")) as Partial<DemoCredentials> & { organization_id: string };
    const { keys } = await client.listKeys({ organizationId: saved.organization_id });
    if (keys.length > 0) {
      let upgraded = saved;
      // A data folder from before the demo agent: add one, under a name no earlier start has taken.
      if (saved.agent_key === undefined || saved.agent_name === undefined) {
        const name = `${demoAgent.name}_${Date.now().toString(36)}`;
        upgraded = { ...upgraded, agent_name: name, agent_key: await registerAgent(saved.organization_id, name) };
      }
      // …or from before the widget's demo page.
      if (upgraded.widget_site_key === undefined)
        upgraded = { ...upgraded, widget_site_key: await widgetSiteKey(saved.organization_id) };
      if (upgraded !== saved) writeFileSync(file, `${JSON.stringify(upgraded, null, 2)}\n`, { mode: 0o600 });
      return upgraded as DemoCredentials;
    }
  }
  const { organizationId } = await client.createOrganization({ name: "Demo organization" });
  const origin = "http://localhost:3000";
  const key = async (environment: Environment, type: KeyType) =>
    (
      await client.createKey({
        organizationId,
        environment,
        type,
        allowedOrigins: type === KeyType.SITE ? [origin] : [],
      })
    ).key;
  const gates = createClient(GateConsoleService, transport);
  const gate = async (gateKey: string, type: GateType, ageThreshold?: number) => {
    const { gate: created } = await gates.createGate({
      organizationId,
      environment: Environment.DEVELOPMENT,
      key: gateKey,
      type,
      ageThreshold,
      status: "active",
    });
    if (!created) throw new Error(`CreateGate answered no gate for ${gateKey}`);
    return created.key;
  };
  const demo: DemoCredentials = {
    organization_id: organizationId,
    development_secret_key: await key(Environment.DEVELOPMENT, KeyType.SECRET),
    development_site_key: await key(Environment.DEVELOPMENT, KeyType.SITE),
    site_key_origin: origin,
    human_gate: await gate("demo-human", GateType.HUMAN),
    age_gate: await gate("demo-age", GateType.AGE, 18),
    agent_name: demoAgent.name,
    agent_key: await registerAgent(organizationId, demoAgent.name),
    widget_site_key: await widgetSiteKey(organizationId),
  };
  writeFileSync(file, `${JSON.stringify(demo, null, 2)}\n`, { mode: 0o600 });
  return demo;
}

import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "@connectrpc/connect";
import { AccountConsoleService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import pg from "pg";
import { consoleTransport } from "./console-client.ts";
import { demoPageOrigin, serveDemoPage } from "./demo-page.ts";
import { type DemoCredentials, provisionDemo } from "./demo-provisioning.ts";
import { startInfrastructure } from "./infrastructure.ts";
import { startMesh } from "./mesh.ts";
import { agentWalkThrough, sdkWalkThrough, walkThrough } from "./walk-through.ts";

const repositoryRoot = fileURLToPath(new URL("../../../", import.meta.url));
const dataDir = join(repositoryRoot, ".data/");
const databaseName = "svc";
/** Where svcctl finds the console's operator credential by itself (see gateway/svcctl/src/svcctl.ts). */
const consoleTokenFile = join(dataDir, "console-token");
/** The development identity provider's key seed: its sessions survive a restart, as the data does. */
const devIdpSeedFile = join(dataDir, "dev-idp-key-seed");
const log = (line: string) => process.stdout.write(`${line}\n`);

async function ensureDatabase(serverUrl: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const found = await client.query("select 1 from pg_database where datname = $1", [name]);
    if (found.rowCount === 0) await client.query(`create database ${client.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The seed kept in the data dir, made on the first start. */
function devIdpKeySeed(): string {
  if (!existsSync(devIdpSeedFile))
    writeFileSync(devIdpSeedFile, randomBytes(32).toString("base64url"), { mode: 0o600 });
  return readFileSync(devIdpSeedFile, "utf8").trim();
}

interface Addresses {
  gatewayUrl: string;
  consoleUrl: string;
  devIdpIssuer: string;
  /** PostgreSQL (the mesh's database) and NATS: on free ports, new at every start. */
  databaseUrl: string;
  natsUrl: string;
}

function banner(addresses: Addresses, demo: DemoCredentials): string {
  const { gatewayUrl, consoleUrl, devIdpIssuer, databaseUrl, natsUrl } = addresses;
  const base = `${gatewayUrl}/v1`;
  const rule = "-".repeat(100);
  return `
The mesh is running. Data lives in ${dataDir} and survives a restart; Ctrl-C stops everything.

  public API      ${base}   (described at ${base}/openapi.json)
  web app         ${gatewayUrl}/app   (the person's side: sign in, passkeys, inbox, agents)
  key set         ${gatewayUrl}/.well-known/jwks.json
  console (ops)   ${consoleUrl}   (npx svcctl --help; its operator credential is in ${consoleTokenFile},
                  where svcctl finds it, new at every start)
  PostgreSQL      ${databaseUrl}
  NATS            ${natsUrl}
  (both on ports chosen at this start; to run one more copy of a service against them, on another port:
   SVC_DATABASE_URL=${databaseUrl} SVC_NATS_URL=${natsUrl} GATE_PORT=19092 node services/gate/src/server.ts)

Demo organization ${demo.organization_id}
  development secret key  ${demo.development_secret_key}
  development site key    ${demo.development_site_key}   (origin ${demo.site_key_origin})
  development gates       ${demo.human_gate} (Human Gate), ${demo.age_gate} (Age Gate, 18)
  (development keys only: a production key is made on purpose and shown once, with
   npx svcctl key create --org ${demo.organization_id} --env production --type secret)

${statusLine([])}

Try a whole verification as a partner would: paste this block into bash (it needs curl and jq).
It carries every value forward itself, and works as often as you paste it.
${rule}
${walkThrough({ repositoryRoot, baseUrl: base, demo })}
${rule}

The same from a partner's server in TypeScript, with the SDK (@svc/sdk; gateway/sdk/README.md):
${rule}
${sdkWalkThrough({ baseUrl: base, demo })}
${rule}

Agents Ask: an agent proposes, a person approves, the service signs a proof. Paste this block too.
Demo agent ${demo.agent_name} (development; category payments)
${rule}
${agentWalkThrough({ baseUrl: base, jwksUrl: `${gatewayUrl}/.well-known/jwks.json`, issuer: gatewayUrl, demo })}
${rule}

Or open the web flow: the web_url of a request created without svc_user_id, in a browser with a passkey.
Or open the web app at ${gatewayUrl}/app and sign in through the development identity provider
(${devIdpIssuer}, development only) with any identifier. Passkeys need a host name, not an IP address: start with
GATEWAY_PUBLIC_ORIGIN=http://localhost:8080 and open http://localhost:8080/app.

The widget: a demo partner page with <svc-verify> in a checkout form, answered by a sandbox human:
  ${demoPageOrigin}/
`;
}

/** What the supervisor says whenever a service goes down or comes back; the banner shows the first one. */
function statusLine(down: readonly string[]): string {
  return down.length === 0
    ? "status: every service is up"
    : `status: DOWN ${down.join(", ")} (restarting with backoff; see the error lines above)`;
}

async function main(): Promise<void> {
  mkdirSync(dataDir, { recursive: true });
  const infrastructure = await startInfrastructure({ dir: dataDir, durable: true, detached: true, log });
  let mesh: Awaited<ReturnType<typeof startMesh>> | undefined;
  let demoPage: Awaited<ReturnType<typeof serveDemoPage>> | undefined;
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    log("stopping the mesh");
    demoPage?.close();
    await mesh?.stop();
    await infrastructure.stop();
    process.exit(code);
  };
  process.once("SIGINT", () => void stop(0));
  process.once("SIGTERM", () => void stop(0));
  try {
    const databaseUrl = await ensureDatabase(infrastructure.postgresUrl, databaseName);
    mesh = await startMesh({
      env: { SVC_DATABASE_URL: databaseUrl, SVC_NATS_URL: infrastructure.natsUrl },
      ports: "default",
      log,
      supervise: { onStatus: (down) => log(statusLine(down)) },
      devIdpKeySeed: devIdpKeySeed(),
    });
    // A new operator credential at every start, readable by this user only.
    writeFileSync(consoleTokenFile, `${mesh.consoleToken}\n`, { mode: 0o600 });
    const demo = await provisionDemo({ url: mesh.consoleUrl, token: mesh.consoleToken }, join(dataDir, "demo.json"));
    const accounts = createClient(AccountConsoleService, consoleTransport(mesh.consoleUrl, mesh.consoleToken, "1.1"));
    const { svcUserId } = await accounts.createSandboxHuman({
      environment: Environment.DEVELOPMENT,
      behavior: SandboxBehavior.CONFIRM,
    });
    demoPage = await serveDemoPage({
      gatewayUrl: mesh.gatewayUrl,
      siteKey: demo.widget_site_key,
      gate: demo.human_gate,
      svcUserId,
    });
    log(
      banner(
        {
          gatewayUrl: mesh.gatewayUrl,
          consoleUrl: mesh.consoleUrl,
          devIdpIssuer: mesh.devIdpIssuer,
          databaseUrl,
          natsUrl: infrastructure.natsUrl,
        },
        demo,
      ),
    );
  } catch (error) {
    log(`start failed: ${error instanceof Error ? error.message : String(error)}`);
    await stop(1);
  }
}

await main();

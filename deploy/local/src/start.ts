import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { type DemoCredentials, provisionDemo } from "./demo-provisioning.ts";
import { startInfrastructure } from "./infrastructure.ts";
import { startMesh } from "./mesh.ts";

const dataDir = fileURLToPath(new URL("../../../.data/", import.meta.url));
const databaseName = "svc";
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

function banner(gatewayUrl: string, consoleUrl: string, demo: DemoCredentials): string {
  const base = `${gatewayUrl}/v1`;
  const key = demo.development_secret_key;
  return `
The mesh is running. Data lives in ${dataDir} and survives a restart; Ctrl-C stops everything.

  public API      ${base}   (described at ${base}/openapi.json)
  key set         ${gatewayUrl}/.well-known/jwks.json
  console (ops)   ${consoleUrl}   (npx svcctl --help)

Demo organization ${demo.organization_id}
  development secret key  ${key}
  development site key    ${demo.development_site_key}   (origin ${demo.site_key_origin})
  production secret key   ${demo.production_secret_key}
  development gates       ${demo.human_gate} (Human Gate), ${demo.age_gate} (Age Gate, 18)
  sandbox human           ${demo.sandbox_human}   (confirms at once; age 30)

Try a whole verification as a partner would:
  # 1. a single-use grant token
  curl -s -X POST ${base}/sdk/create-session -H 'authorization: Bearer ${key}' \\
    -H 'content-type: application/json' -d '{"partner_user_id":"user-1"}'
  # 2. a verification request, pushed to the sandbox human, who confirms with its passkey
  curl -s -X POST ${base}/sdk/create-verification-link -H 'authorization: Bearer <svcs_ grant token>' \\
    -H 'content-type: application/json' -d '{"gate":"${demo.age_gate}","svc_user_id":"${demo.sandbox_human}"}'
  # 3. its status, with the signed attestation token while it is valid (120 s)
  curl -s '${base}/verification/status?request_id=<req_ id>' -H 'authorization: Bearer ${key}'
  # 4. check the token once (a second check is a replay)
  curl -s -X POST ${base}/sdk/verify-token -H 'content-type: application/json' -d '{"token":"<token>"}'

Or open the web flow: the web_url of a request created without svc_user_id, in a browser with a passkey.
`;
}

async function main(): Promise<void> {
  mkdirSync(dataDir, { recursive: true });
  const infrastructure = await startInfrastructure({ dir: dataDir, durable: true, log });
  let mesh: Awaited<ReturnType<typeof startMesh>> | undefined;
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    log("stopping the mesh");
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
    });
    const demo = await provisionDemo(mesh.consoleUrl, join(dataDir, "demo.json"));
    log(banner(mesh.gatewayUrl, mesh.consoleUrl, demo));
  } catch (error) {
    log(`start failed: ${error instanceof Error ? error.message : String(error)}`);
    await stop(1);
  }
}

await main();

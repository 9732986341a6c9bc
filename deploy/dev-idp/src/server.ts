import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type Clock, clockFromEnvironment } from "@svc/platform/clock";
import { loadConfig, parse } from "@svc/platform/config";
import { AuthorizationCodes } from "./authorization-codes.ts";
import { IdentityProvider } from "./identity-provider.ts";
import { identityProviderHandler } from "./routes.ts";

const settings = {
  deployment: {
    parse: parse.oneOf("development", "production"),
    shared: true,
    default: "development" as "development" | "production",
    description: "deployment kind; production refuses to start this provider",
  },
  host: { parse: parse.string, default: "127.0.0.1", description: "address it listens on" },
  port: { parse: parse.port, default: 8070, description: "port it listens on" },
  issuer: {
    parse: parse.url,
    default: "",
    description: "its issuer (iss) and base URL; empty is http://{host}:{port}",
  },
  appOrigins: {
    parse: (raw: string) => raw.split(",").map((origin) => parse.url(origin.trim())),
    default: ["http://127.0.0.1:8080", "http://localhost:8080"],
    description:
      "the web app's origins, comma-separated (each a GATEWAY_PUBLIC_ORIGIN it may run under): where its one client's redirect may go, and whose pages may read its replies",
  },
  keySeed: {
    parse: parse.string,
    default: "",
    description: "seed its ES256 signing key is derived from; empty is a new key at every start",
  },
};

/** Starts the development identity provider; production refuses it. */
export async function startIdentityProvider(
  env: NodeJS.ProcessEnv,
  clock: Clock = clockFromEnvironment(env),
): Promise<{ issuer: string; server: Server }> {
  const config = loadConfig("DEV_IDP", settings, env);
  if (config.deployment === "production")
    throw new Error("the development identity provider does not run in production");
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, resolve);
  });
  const issuer = config.issuer || `http://${config.host}:${(server.address() as AddressInfo).port}`;
  const provider = await IdentityProvider.open({
    issuer,
    clock,
    seed: config.keySeed || randomBytes(32).toString("base64url"),
  });
  server.on(
    "request",
    identityProviderHandler({ provider, codes: new AuthorizationCodes(clock), appOrigins: config.appOrigins }),
  );
  return { issuer, server };
}

if (import.meta.main) {
  const { issuer, server } = await startIdentityProvider(process.env);
  process.stdout.write(`${JSON.stringify({ level: "info", service: "dev-idp", msg: "listening", issuer })}\n`);
  process.once("SIGTERM", () => server.close());
  process.once("SIGINT", () => server.close());
}

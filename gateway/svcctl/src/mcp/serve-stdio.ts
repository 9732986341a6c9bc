import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { agentToolServer } from "@svc/mcp-tools";
import { UsageError } from "../command.ts";
import { type AgentApi, httpOperations } from "./http-operations.ts";

const defaultBaseUrl = "http://127.0.0.1:8080/v1";

export const mcpUsage = [
  "Usage: svcctl mcp --stdio",
  "",
  "Serves the agent tools of the MCP server at {api_origin}/mcp (link_person, check_link, ask_person,",
  "check_request, cancel_request, verify_proof) over stdio, for MCP clients that only start local servers.",
  "Each tool calls the public API as the agent: SVC_AGENT_KEY (required, svc_agent_…), SVC_BASE_URL",
  `(default ${defaultBaseUrl}), SVC_ISSUER (the iss of proofs; default the origin of SVC_BASE_URL).`,
  "It runs until stdin closes; stdout carries MCP only.",
  "",
].join("\n");

/** The agent's API from the environment; a missing key is a usage error. */
function agentApi(env: NodeJS.ProcessEnv): AgentApi {
  const agentKey = env.SVC_AGENT_KEY;
  if (!agentKey) throw new UsageError("mcp: SVC_AGENT_KEY is not set (the agent's key, svc_agent_…)", mcpUsage);
  const baseUrl = (env.SVC_BASE_URL || defaultBaseUrl).replace(/\/+$/, "");
  return { baseUrl, issuer: env.SVC_ISSUER || new URL(baseUrl).origin, agentKey };
}

/** `svcctl mcp --stdio`: the same tools as the gateway's /mcp, over stdin and stdout, until stdin closes. */
export async function serveMcpStdio(args: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  if (args.length !== 1 || args[0] !== "--stdio")
    throw new UsageError(`mcp: expected --stdio, got ${JSON.stringify(args.join(" "))}`, mcpUsage);
  const operations = httpOperations(agentApi(env));
  const closed = new Promise((resolve) => process.stdin.once("close", resolve));
  const served = serveStdio(() => agentToolServer(operations));
  await closed;
  await served.close();
}

import {
  type CallToolResult,
  inputRequired,
  ProtocolError,
  ProtocolErrorCode,
  Server,
} from "@modelcontextprotocol/server";
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import type { AgentOperations, Answer, Refusal } from "./operations.ts";
import { type AgentTool, agentTools } from "./tools.ts";

const ajv = new Ajv2020({ allErrors: true });
addFormats.default(ajv);

/** Each tool with its input check, compiled once per process: a server is made for every HTTP request. */
const tools = new Map<string, { tool: AgentTool; check: ValidateFunction }>(
  agentTools.map((tool) => [tool.name, { tool, check: ajv.compile(tool.inputSchema) }]),
);

const listed = {
  tools: agentTools.map(({ name, title, description, inputSchema, outputSchema }) => ({
    name,
    title,
    description,
    inputSchema,
    outputSchema,
  })),
};

/** Arguments the input schema refuses, as the public API's HTTP 400 reads, so that a model can correct them. */
function invalidArguments(errors: readonly ErrorObject[]): Refusal {
  const issues = errors.map((error) => ({
    propertyPath: error.instancePath.slice(1).replaceAll("/", "."),
    message: `${error.instancePath || "the arguments"} ${error.message ?? "is not valid"}`,
  }));
  return {
    statusCode: 400,
    code: "InputValidationError",
    message: `Input validation failed: ${issues.map((issue) => issue.message).join("; ")}`,
    errors: issues,
  };
}

/**
 * The answer a first round put into `requestState`. The state comes back from the client unverified: it is only
 * ever that client's own result, so forging it changes nothing but what the client reads; it grants nothing.
 */
function answerIn(state: string | undefined): Answer | undefined {
  if (state === undefined) return undefined;
  try {
    const answer = JSON.parse(state) as Answer;
    return answer.ok === true && typeof answer.data === "object" && answer.data !== null ? answer : undefined;
  } catch {
    return undefined;
  }
}

/** A tool's answer as MCP returns it: `structuredContent` always, a refusal as `isError` with `{error}`. */
function toolResult(answer: Answer): CallToolResult {
  const structuredContent = answer.ok ? answer.data : { error: answer.error };
  return {
    content: [{ type: "text", text: JSON.stringify(structuredContent) }],
    structuredContent,
    ...(!answer.ok && { isError: true }),
  };
}

const serverInfo = { name: "svc-agents-ask", version: "1.0.0" };

/**
 * An MCP server of the agent tools over `operations`. Stateless: everything a call needs is in the call, so a
 * server may serve one HTTP request (the gateway makes one per request) or a whole stdio connection.
 */
export function agentToolServer(operations: AgentOperations): Server {
  const server = new Server(serverInfo, {
    capabilities: { tools: {} },
    instructions:
      "Ask a person to approve an action before you take it: link_person and check_link once per person, then ask_person and check_request for each action; verify_proof checks the signed proof of their answer.",
  });
  server.setRequestHandler("tools/list", () => listed);
  server.setRequestHandler("tools/call", async (request, ctx) => {
    const entry = tools.get(request.params.name);
    if (!entry) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `no tool named ${request.params.name}`);
    const input = request.params.arguments ?? {};
    if (!entry.check(input)) return toolResult({ ok: false, error: invalidArguments(entry.check.errors ?? []) });
    // The round after the client opened the link: the answer of the first round, which it echoes back.
    const earlier = entry.tool.linkToOpen && answerIn(ctx.mcpReq.requestState<string>());
    if (earlier) return server.projectCallToolResult(toolResult(earlier), entry.tool.outputSchema);
    const progressToken = ctx.mcpReq._meta?.progressToken;
    const answer = await entry.tool.run(input, operations, {
      signal: ctx.mcpReq.signal,
      progress: async (progress, total, message) => {
        if (progressToken === undefined) return;
        await ctx.mcpReq.notify({
          method: "notifications/progress",
          params: { progressToken, progress, total, message },
        });
      },
    });
    // URL-mode elicitation rides a second round on the 2026-07-28 revision (its per-request envelope), so a
    // stateless server can take it; a 2025 client's answer to a server request would reach another instance.
    const link = answer.ok ? entry.tool.linkToOpen?.(answer.data) : undefined;
    if (link && ctx.mcpReq.envelope !== undefined && server.getClientCapabilities()?.elicitation?.url !== undefined)
      return inputRequired({
        inputRequests: { open_link: inputRequired.elicitUrl(link) },
        requestState: JSON.stringify(answer),
      });
    return server.projectCallToolResult(toolResult(answer), entry.tool.outputSchema);
  });
  return server;
}

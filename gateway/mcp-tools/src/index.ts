export { type AgentOperations, type Answer, type Refusal, rateLimitRefusal } from "./operations.ts";
export { agentToolServer } from "./server.ts";
export { type AgentTool, agentTools } from "./tools.ts";

export type { AgentOperations, Answer, Refusal } from "./operations.ts";
export { agentToolServer } from "./server.ts";
export { type AgentTool, agentTools } from "./tools.ts";

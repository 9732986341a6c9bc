import { create } from "@bufbuild/protobuf";
import { createLogger, type RunningService, serveConnect } from "@svc/platform";
import { AgentCallbackService, CallbackTargetSchema } from "@svc/proto/agentlink/v1/agentlink_pb.js";

interface CallbackTargetInit {
  organizationId: string;
  url: string;
  secret: string;
}

export interface AgentlinkCallbacks {
  url: string;
  /** What GetCallbackTarget answers per agent id; an agent not here has no target. */
  targets: Map<string, CallbackTargetInit>;
  /** While set, GetCallbackTarget fails (agentlink down). */
  failing: boolean;
  stop(): Promise<void>;
}

/**
 * agentlink's side of the callback contract (`AgentCallbackService`) for webhook-dispatch's own tests,
 * which run without agentlink: a real Connect server answering from a map the test fills.
 * The e2e tests use the real agentlink.
 */
export async function startAgentlinkCallbacks(): Promise<AgentlinkCallbacks> {
  const targets = new Map<string, CallbackTargetInit>();
  const state = { failing: false };
  const server: RunningService = await serveConnect({
    name: "agentlink-callbacks",
    host: "127.0.0.1",
    port: 0,
    logger: createLogger("agentlink-callbacks", {}, "error"),
    routes: (router) =>
      router.service(AgentCallbackService, {
        getCallbackTarget: (req) => {
          if (state.failing) throw new Error("agentlink is down");
          const target = targets.get(req.agentId);
          return target ? { target: create(CallbackTargetSchema, target) } : {};
        },
      }),
    ready: async () => {},
    onStop: async () => {},
  });
  return {
    url: server.url,
    targets,
    get failing() {
      return state.failing;
    },
    set failing(value: boolean) {
      state.failing = value;
    },
    stop: () => server.stop(),
  };
}

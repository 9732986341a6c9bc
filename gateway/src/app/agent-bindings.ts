import { Code, ConnectError } from "@connectrpc/connect";
import { OperationError } from "../http/errors.ts";
import { instant } from "../http/instant.ts";
import { ok } from "../http/route.ts";
import { defineRoute } from "../services.ts";
import { agentSummary, agentSummarySchema } from "./agent-summary.ts";
import { sessionUserId } from "./session-user.ts";

/** The app API's side of agent binding: the signed-in person claims an agent's link code, lists and ends bindings. */

const signedIn = { accepts: ["user_session"] } as const;

const personLabelSchema = {
  type: "string",
  nullable: true,
  description:
    "How the agent names the person (its bind-session's person_label); the other approvers of its quorum cards see them by it. Null when the agent gave none.",
} as const;
const bindingSchema = {
  type: "object",
  properties: {
    agent: agentSummarySchema,
    bound_at: { type: "string", format: "date-time" },
    person_label: personLabelSchema,
  },
} as const;

const claimAgentBindingRoute = defineRoute({
  operationId: "appClaimAgentBinding",
  method: "POST",
  path: "/app/agent-bindings/claim",
  summary:
    "Bind the signed-in person to the agent that showed this link code. Unknown code: 404; already used: 409; past its 10 minutes: 410.",
  auth: signedIn,
  input: {
    type: "object",
    properties: { link_code: { type: "string", minLength: 1, maxLength: 64, description: "As the agent showed it." } },
    required: ["link_code"],
  },
  envelope: "nested",
  output: {
    type: "object",
    properties: bindingSchema.properties,
  },
  async handle(input, { caller, services }) {
    const claimed = await services.agentlink
      .claimLinkCode({ svcUserId: sessionUserId(caller), linkCode: input.link_code })
      .catch((error: unknown) => {
        // agentlink's FailedPrecondition for a claim is the code's end: gone, like an expired card (410).
        if (error instanceof ConnectError && error.code === Code.FailedPrecondition)
          throw new OperationError(410, error.rawMessage);
        throw error;
      });
    return ok({
      agent: agentSummary(claimed.agent),
      bound_at: instant(claimed.boundAt),
      person_label: claimed.personLabel ?? null,
    });
  },
});

const listAgentBindingsRoute = defineRoute({
  operationId: "appListAgentBindings",
  method: "GET",
  path: "/app/agent-bindings",
  summary: "The agents the signed-in person is bound to, newest first.",
  auth: signedIn,
  input: { type: "object", properties: {} },
  envelope: "nested",
  output: {
    type: "object",
    properties: {
      bindings: {
        type: "array",
        items: bindingSchema,
      },
    },
  },
  async handle(_input, { caller, services }) {
    const { bindings } = await services.agentlink.listBindings({ svcUserId: sessionUserId(caller) });
    return ok({
      bindings: bindings.map((b) => ({
        agent: agentSummary(b.agent),
        bound_at: instant(b.boundAt),
        person_label: b.personLabel ?? null,
      })),
    });
  },
});

const unbindAgentRoute = defineRoute({
  operationId: "appUnbindAgent",
  method: "POST",
  path: "/app/agent-bindings/unbind",
  summary:
    "End the signed-in person's binding to an agent: the agent's opaque_id for the person then names nobody. No active binding: 404.",
  auth: signedIn,
  input: {
    type: "object",
    properties: { agent_id: { type: "string", format: "uuid" } },
    required: ["agent_id"],
  },
  envelope: "nested",
  output: {
    type: "object",
    properties: { agent_id: { type: "string", format: "uuid" }, unbound_at: { type: "string", format: "date-time" } },
  },
  async handle(input, { caller, services }) {
    const unbound = await services.agentlink.unbind({ svcUserId: sessionUserId(caller), agentId: input.agent_id });
    return ok({ agent_id: unbound.agentId, unbound_at: instant(unbound.unboundAt) });
  },
});

export const agentBindingRoutes = [claimAgentBindingRoute, listAgentBindingsRoute, unbindAgentRoute];

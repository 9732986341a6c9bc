import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import { environmentName, environmentProto } from "@svc/platform";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import {
  CreateGateResponseSchema,
  ExpireRequestsResponseSchema,
  GateConsoleService,
  GateSchema,
  ListGatesResponseSchema,
  GateType as ProtoGateType,
  SetGateStatusResponseSchema,
  SetNotarizeOfferResponseSchema,
} from "@svc/proto/gate/v1/gate_pb.js";
import type { Gate, GateStore } from "./gates/gate-store.ts";
import { refusalsAsConnectErrors, refuse } from "./refusal.ts";
import type { RequestLifecycle } from "./requests/request-lifecycle.ts";
import { gateTypeProto } from "./routes.ts";

/** A gate as the console shows it; `status_legacy` is the gateway's to add during the rename window. */
const gateMessage = (gate: Gate) =>
  create(GateSchema, {
    gateId: gate.id,
    organizationId: gate.organizationId,
    environment: environmentProto(gate.environment),
    key: gate.key,
    type: gateTypeProto(gate.type),
    ...(gate.ageThreshold !== null ? { ageThreshold: gate.ageThreshold } : {}),
    status: gate.status,
    notarizeOffer: gate.notarizeOffer,
    createdAt: timestampFromDate(gate.createdAt),
    updatedAt: timestampFromDate(gate.updatedAt),
  });

function requireEnvironment(environment: Environment) {
  const name = environmentName(environment);
  if (!name) throw refuse("invalid", "environment is required (development or production)");
  return name;
}

/** Sweep sizes as the spec's expire operation takes them: 1-1000, default 200. */
const sweepLimit = (limit: number) => {
  if (limit === 0) return 200;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw refuse("invalid", "limit must be 1-1000");
  return limit;
};

/** The operators' gate operations, forwarded to this service by the gateway's console port. */
export function gateConsoleRoutes(deps: {
  gates: GateStore;
  lifecycle: RequestLifecycle;
}): (router: ConnectRouter) => void {
  const { gates, lifecycle } = deps;
  return (router) =>
    router.service(GateConsoleService, {
      createGate: (request) =>
        refusalsAsConnectErrors(async () => {
          const type =
            request.type === ProtoGateType.AGE ? "age" : request.type === ProtoGateType.HUMAN ? "human" : undefined;
          if (!type) throw refuse("invalid", "type is required (human or age)");
          const gate = await gates.create({
            organizationId: request.organizationId,
            environment: requireEnvironment(request.environment),
            key: request.key,
            type,
            ageThreshold: request.ageThreshold,
            status: request.status,
            notarizeOffer: request.notarizeOffer,
          });
          return create(CreateGateResponseSchema, { gate: gateMessage(gate) });
        }),

      setGateStatus: (request) =>
        refusalsAsConnectErrors(async () => {
          const gate = await gates.setStatus(
            request.organizationId,
            requireEnvironment(request.environment),
            request.key,
            request.status,
          );
          return create(SetGateStatusResponseSchema, { gate: gateMessage(gate) });
        }),

      setNotarizeOffer: (request) =>
        refusalsAsConnectErrors(async () => {
          const gate = await gates.setNotarizeOffer(
            request.organizationId,
            requireEnvironment(request.environment),
            request.key,
            request.notarizeOffer,
          );
          return create(SetNotarizeOfferResponseSchema, { gate: gateMessage(gate) });
        }),

      listGates: (request) =>
        refusalsAsConnectErrors(async () => {
          const environment =
            request.environment === Environment.UNSPECIFIED ? undefined : requireEnvironment(request.environment);
          const list = await gates.list(request.organizationId, environment, request.status);
          return create(ListGatesResponseSchema, { gates: list.map(gateMessage) });
        }),

      expireRequests: (request) =>
        refusalsAsConnectErrors(async () =>
          create(ExpireRequestsResponseSchema, { expiredCount: await lifecycle.sweep(sweepLimit(request.limit)) }),
        ),
    });
}

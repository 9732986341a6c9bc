import type { Client, ConnectRouter } from "@connectrpc/connect";
import type { Clock } from "@svc/platform";
import { type Gate, GateConsoleService } from "@svc/proto/gate/v1/gate_pb.js";
import { gateStatusRenames, sunset } from "../rename-window/aliases.ts";

/** An old status name read as its new one; any other text goes on unchanged, for gate to judge. */
const newStatus = (status: string): string => gateStatusRenames.find((rename) => rename.old === status)?.new ?? status;

/**
 * The gate service's console operations, forwarded like every other console service but through the
 * rename window: gate knows only draft, active and archived, so the old status names operators may
 * still type are read as new ones here, and each gate row carries `status_legacy` (the first old name
 * of its status, as `GET /sdk/partner-config` shows it) until the sunset, by this gateway's clock.
 */
export function gateConsoleRenames(deps: {
  gate: Client<typeof GateConsoleService>;
  clock: Clock;
}): (router: ConnectRouter) => void {
  const { gate, clock } = deps;
  const shown = (row: Gate, now: Date): Gate => ({
    ...row,
    statusLegacy:
      now.getTime() < sunset.getTime()
        ? (gateStatusRenames.find((rename) => rename.new === row.status)?.old ?? "")
        : "",
  });
  return (router) =>
    router.service(GateConsoleService, {
      createGate: async (request) => {
        const answer = await gate.createGate({ ...request, status: newStatus(request.status) });
        return { ...answer, gate: answer.gate && shown(answer.gate, clock.now()) };
      },
      setGateStatus: async (request) => {
        const answer = await gate.setGateStatus({ ...request, status: newStatus(request.status) });
        return { ...answer, gate: answer.gate && shown(answer.gate, clock.now()) };
      },
      setNotarizeOffer: async (request) => {
        const answer = await gate.setNotarizeOffer(request);
        return { ...answer, gate: answer.gate && shown(answer.gate, clock.now()) };
      },
      listGates: async (request) => {
        const answer = await gate.listGates({ ...request, status: newStatus(request.status) });
        const now = clock.now();
        return { ...answer, gates: answer.gates.map((row) => shown(row, now)) };
      },
      expireRequests: (request) => gate.expireRequests(request),
    });
}

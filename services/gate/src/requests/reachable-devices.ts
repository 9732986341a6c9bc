import type { Client } from "@connectrpc/connect";
import { countOpenInboxes, type EventBus } from "@svc/platform";
import type { AccountService } from "@svc/proto/account/v1/account_pb.js";

/**
 * How long the presence request waits: for the next gateway's answer after one came (`stallMs`), for a
 * first answer when some gateway listens (`maxWaitMs`). When no gateway holds the person's inbox open the
 * NATS server answers "no responders" at once, so the count costs no wait.
 */
const presence = { stallMs: 5, maxWaitMs: 100 };

/**
 * decisions.md's `pushed_to_devices`: the person's registered push channels (account's devices and web push
 * subscriptions) plus the
 * inbox connections the gateways hold open for them, both counted at the moment of the push (before the
 * request's transaction, in parallel, so it holds no lock meanwhile). Rejects NotFound for an unknown human.
 */
export async function reachableDevices(
  deps: { account: Client<typeof AccountService>; bus: Pick<EventBus, "nc" | "subjectPrefix"> },
  svcUserId: string,
): Promise<number> {
  const [devices, inboxes] = await Promise.all([
    deps.account.listDevices({ svcUserId }).then((r) => r.devices.length + r.webPushSubscriptions),
    countOpenInboxes(deps.bus.nc, deps.bus.subjectPrefix, svcUserId, presence),
  ]);
  return devices + inboxes;
}

import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { countOpenInboxes, type EventBus } from "@svc/platform";
import type { AccountService, GetHumanResponse } from "@svc/proto/account/v1/account_pb.js";

/**
 * How long the presence request waits: for the next gateway's answer after one came (`stallMs`), for a
 * first answer when some gateway listens (`maxWaitMs`). When no gateway holds the person's inbox open the
 * NATS server answers "no responders" at once, so the count costs no wait.
 */
const presence = { stallMs: 5, maxWaitMs: 100 };

/** The person a request names, as account knows them, and what a push to them reaches. */
export interface NamedPerson {
  /** Account's answer (whether they are a sandbox human); undefined when no human has that id. */
  human: GetHumanResponse | undefined;
  /**
   * decisions.md's `pushed_to_devices`: the person's registered push channels (account's devices and web push
   * subscriptions) plus the inbox connections the gateways hold open for them. An unknown human reaches
   * nothing: answering otherwise would tell a partner which global user ids exist.
   */
  devices: number;
}

/**
 * One account call beside the count of open inboxes, both at the moment of the push (before the request's
 * transaction, in parallel, so it holds no lock meanwhile).
 */
export async function namedPerson(
  deps: { account: Client<typeof AccountService>; bus: Pick<EventBus, "nc" | "subjectPrefix"> },
  svcUserId: string,
): Promise<NamedPerson> {
  const [human, inboxes] = await Promise.all([
    deps.account.getHuman({ svcUserId }).catch((error: unknown) => {
      if (error instanceof ConnectError && error.code === Code.NotFound) return undefined;
      throw error;
    }),
    countOpenInboxes(deps.bus.nc, deps.bus.subjectPrefix, svcUserId, presence),
  ]);
  return { human, devices: human === undefined ? 0 : human.deviceCount + human.webPushSubscriptions + inboxes };
}

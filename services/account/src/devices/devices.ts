import type { EntityManager } from "@mikro-orm/postgresql";
import { type Clock, type Queryable, uuid } from "@svc/platform";
import { queryHuman, requireHuman } from "../humans/humans.ts";
import { requireText } from "../input.ts";
import { invalidArgument } from "../refusal.ts";
import { Device } from "./device.entity.ts";

const platforms = ["ios", "android", "web"] as const;
type DevicePlatform = (typeof platforms)[number];

/**
 * Registers the push address of an app installation for a human. A push token names one
 * installation: registered again it stays one device, and registered by another human (someone else
 * signed in on that phone) it moves to that human, so pushes never reach the previous one.
 */
export async function registerDevice(
  em: EntityManager,
  clock: Clock,
  input: { svcUserId: string; pushToken: string; platform: string },
): Promise<string> {
  const pushToken = requireText(input.pushToken, "push_token", 4096);
  if (!platforms.includes(input.platform as DevicePlatform))
    throw invalidArgument(`platform must be one of ${platforms.join(", ")}: ${JSON.stringify(input.platform)}`);
  const human = await requireHuman(em, input.svcUserId);
  const [row] = await em.execute<{ id: string }[]>(
    `insert into device (id, svc_user_id, platform, push_token, registered_at) values (?, ?, ?, ?, ?)
     on conflict (push_token) do update set svc_user_id = excluded.svc_user_id, platform = excluded.platform, registered_at = excluded.registered_at
     returning id`,
    [uuid(), human.id, input.platform, pushToken, clock.now()],
  );
  if (!row) throw new Error("device upsert returned no row");
  return row.id;
}

/** A sandbox human's one device: it receives nothing, but counts where pushes are counted. */
export function addSandboxDevice(em: EntityManager, svcUserId: string, registeredAt: Date): void {
  em.create(Device, { id: uuid(), svcUserId, platform: "sandbox", pushToken: null, registeredAt });
}

/** What ListDevices answers: a human's devices, oldest first, and how many web push subscriptions it has. */
export interface HumanDevices {
  devices: Pick<Device, "id" | "platform" | "registeredAt">[];
  webPushSubscriptions: number;
}

/** A human's devices and web push subscriptions, or NotFound, in one prepared statement (`queryHuman`). */
export async function listDevices(db: Queryable, svcUserId: string): Promise<HumanDevices> {
  const human = await queryHuman<{
    devices: { id: string; platform: HumanDevices["devices"][number]["platform"]; registered_at: string }[];
    subscriptions: number;
  }>(db, svcUserId, {
    name: "list_devices",
    text: `select
        coalesce((select json_agg(json_build_object('id', d.id, 'platform', d.platform, 'registered_at', d.registered_at)
                   order by d.registered_at, d.id) from device d where d.svc_user_id = h.id), '[]') as devices,
        (select count(*)::int from push_subscription where svc_user_id = h.id) as subscriptions
      from human h where h.id = $1`,
  });
  return {
    devices: human.devices.map((device) => ({
      id: device.id,
      platform: device.platform,
      registeredAt: new Date(device.registered_at),
    })),
    webPushSubscriptions: human.subscriptions,
  };
}

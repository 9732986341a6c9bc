import type { EntityManager } from "@mikro-orm/postgresql";
import { type Clock, uuid } from "@svc/platform";
import { requireHuman } from "../humans/humans.ts";
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

export async function listDevices(em: EntityManager, svcUserId: string): Promise<Device[]> {
  const human = await requireHuman(em, svcUserId);
  return em.find(Device, { svcUserId: human.id }, { orderBy: [{ registeredAt: "asc" }, { id: "asc" }] });
}

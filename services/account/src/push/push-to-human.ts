import type { EntityManager } from "@mikro-orm/postgresql";
import { isUuid, type Logger } from "@svc/platform";
import { Device } from "../devices/device.entity.ts";
import type { PushProviders } from "./configured-providers.ts";
import type { PushNotification } from "./push-provider.ts";

/**
 * Sends `notification` to every device of the person that has a push token, through the provider of its
 * platform, all at once. Best effort: a refusal or an unreachable provider is logged and counted, never
 * thrown; an unknown person, or no provider configured, sends nothing.
 */
export async function pushToHuman(
  ctx: { em: EntityManager; providers: PushProviders; logger: Logger },
  svcUserId: string,
  notification: PushNotification,
): Promise<{ sent: number; failed: number }> {
  if (!isUuid(svcUserId) || Object.keys(ctx.providers).length === 0) return { sent: 0, failed: 0 };
  const devices = await ctx.em.find(Device, { svcUserId, pushToken: { $ne: null } });
  const outcomes = await Promise.allSettled(
    devices.flatMap((device) => {
      const provider = device.platform === "sandbox" ? undefined : ctx.providers[device.platform];
      return provider && device.pushToken ? [provider.send(device.pushToken, notification)] : [];
    }),
  );
  const failed = outcomes.filter((outcome) => outcome.status === "rejected");
  for (const failure of failed) ctx.logger.warn("push not delivered", { error: failure.reason });
  return { sent: outcomes.length - failed.length, failed: failed.length };
}

import type { GatewayServices } from "../services.ts";

/** `platform` in the app's JSON: a partner as the person knows it, by its organization's name. */
export const platformSchema = {
  type: "object",
  properties: { name: { type: "string" } },
} as const;

/**
 * The platform of each organization id, looked up once for a whole answer. An organization the
 * directory no longer knows is named by its id, so the row still shows (and can still be unlinked).
 */
export async function platformsOf(
  services: Pick<GatewayServices, "organizations">,
  organizationIds: readonly string[],
): Promise<(organizationId: string) => { name: string }> {
  const names = await services.organizations.organizationNames(organizationIds);
  return (organizationId) => ({ name: names.get(organizationId) ?? organizationId });
}

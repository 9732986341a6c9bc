import type { EntityManager } from "@mikro-orm/postgresql";
import { type Clock, randomBase62 } from "@svc/platform";
import type { DestinationPolicy } from "../delivery/destination-guard.ts";
import { parseTypeFilter } from "../event-types.ts";
import { refuse } from "../refusal.ts";
import { Endpoint } from "./endpoint.entity.ts";
import { generateEndpointSecret, type SecretBox } from "./endpoint-secret.ts";
import { validateEndpointUrl } from "./endpoint-url.ts";

export interface EndpointContext {
  em: EntityManager;
  clock: Clock;
  box: SecretBox;
  policy: DestinationPolicy;
}

/** A rotated-out secret keeps signing beside the new one this long, so receivers can switch without a gap. */
const previousSecretLifetimeMs = 24 * 3600 * 1000;

export async function addEndpoint(
  ctx: EndpointContext,
  input: { organizationId: string; url: string; types: readonly string[] },
): Promise<{ endpoint: Endpoint; secret: string }> {
  const organizationId = requireOrganization(input.organizationId);
  const url = validateEndpointUrl(input.url, ctx.policy);
  const types = parseTypeFilter(input.types);
  const id = `ep_${randomBase62(24)}`;
  const secret = generateEndpointSecret();
  const endpoint = ctx.em.create(Endpoint, {
    id,
    organizationId,
    url,
    types,
    status: "enabled",
    disabledReason: null,
    disabledAt: null,
    failingSince: null,
    secretVersion: 1,
    secretSealed: ctx.box.seal(secret, id),
    previousSecretSealed: null,
    previousSecretExpiresAt: null,
    createdAt: ctx.clock.now(),
  });
  await ctx.em.flush();
  return { endpoint, secret };
}

export async function listEndpoints(em: EntityManager, organizationId: string): Promise<Endpoint[]> {
  return em.find(
    Endpoint,
    { organizationId: requireOrganization(organizationId), agentId: null },
    { orderBy: { createdAt: "asc", id: "asc" } },
  );
}

export async function findEndpoint(em: EntityManager, organizationId: string, endpointId: string): Promise<Endpoint> {
  // Agents' callback endpoints are no partner's: no console operation sees them.
  const endpoint = await em.findOne(Endpoint, {
    id: endpointId,
    organizationId: requireOrganization(organizationId),
    agentId: null,
  });
  if (!endpoint) throw refuse("not_found", `no endpoint ${endpointId} in organization ${organizationId}`);
  return endpoint;
}

/** Its deliveries go with it (the foreign key cascades); the messages stay for the organization's list. */
export async function removeEndpoint(em: EntityManager, organizationId: string, endpointId: string): Promise<void> {
  em.remove(await findEndpoint(em, organizationId, endpointId));
  await em.flush();
}

/** At most two secrets sign at a time: rotating again within 24 hours drops the oldest. */
export async function rotateEndpointSecret(
  ctx: EndpointContext,
  organizationId: string,
  endpointId: string,
): Promise<{ endpoint: Endpoint; secret: string }> {
  const endpoint = await findEndpoint(ctx.em, organizationId, endpointId);
  const secret = generateEndpointSecret();
  endpoint.previousSecretSealed = endpoint.secretSealed;
  endpoint.previousSecretExpiresAt = new Date(ctx.clock.now().getTime() + previousSecretLifetimeMs);
  endpoint.secretSealed = ctx.box.seal(secret, endpoint.id);
  endpoint.secretVersion += 1;
  await ctx.em.flush();
  return { endpoint, secret };
}

/** Also ends an automatic disable: its failure streak starts over, so it gets five full days again. */
export async function enableEndpoint(em: EntityManager, organizationId: string, endpointId: string): Promise<Endpoint> {
  const endpoint = await findEndpoint(em, organizationId, endpointId);
  endpoint.status = "enabled";
  endpoint.disabledReason = null;
  endpoint.disabledAt = null;
  endpoint.failingSince = null;
  await em.flush();
  return endpoint;
}

export async function disableEndpoint(
  em: EntityManager,
  clock: Clock,
  organizationId: string,
  endpointId: string,
): Promise<Endpoint> {
  const endpoint = await findEndpoint(em, organizationId, endpointId);
  if (endpoint.status === "enabled") {
    endpoint.status = "disabled";
    endpoint.disabledReason = "disabled by an operator";
    endpoint.disabledAt = clock.now();
    await em.flush();
  }
  return endpoint;
}

function requireOrganization(organizationId: string): string {
  if (!organizationId) throw refuse("invalid_argument", "organization_id is required");
  return organizationId;
}

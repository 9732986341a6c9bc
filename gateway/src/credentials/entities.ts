import { defineEntity, type InferEntity, p } from "@mikro-orm/postgresql";

export const Organization = defineEntity({
  name: "Organization",
  tableName: "organizations",
  properties: {
    id: p.uuid().primary(),
    name: p.text(),
    createdAt: p.datetime(),
  },
});
export type Organization = InferEntity<typeof Organization>;

/** A secret or site key. Only a keyed hash of its random part is kept; the key itself is shown once. */
export const ApiKey = defineEntity({
  name: "ApiKey",
  tableName: "api_keys",
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    environment: p.enum(["development", "production"] as const),
    type: p.enum(["secret", "site"] as const),
    keyHash: p.blob(),
    displayPrefix: p.text(),
    /** Site keys: the origins (scheme://host[:port]) a browser may call from. */
    allowedOrigins: p.array(),
    /** Gate keys the key may use; empty allows every gate. */
    allowedGates: p.array(),
    createdAt: p.datetime(),
    expiresAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
  },
});
export type ApiKey = InferEntity<typeof ApiKey>;

export const entities = [Organization, ApiKey];

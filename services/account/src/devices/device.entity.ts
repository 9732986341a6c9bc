import { defineEntity, type InferEntity, p } from "@mikro-orm/postgresql";

/** A phone (or browser) of a human that receives pushes. */
export const Device = defineEntity({
  name: "Device",
  tableName: "device",
  properties: {
    id: p.uuid().primary(),
    svcUserId: p.uuid(),
    /** ios, android, web; `sandbox` for the one virtual device of a sandbox human. */
    platform: p.enum(["ios", "android", "web", "sandbox"] as const),
    /** Stored as given: it is needed to push, and it names an app installation, not the person. Null only on a sandbox device. */
    pushToken: p.text().nullable().unique(),
    registeredAt: p.datetime(),
  },
});
export type Device = InferEntity<typeof Device>;

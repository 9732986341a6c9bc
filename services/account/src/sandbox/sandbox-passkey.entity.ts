import { defineEntity, type InferEntity, p } from "@mikro-orm/postgresql";

/** The authenticator side of a sandbox human's passkey: its private key (sealed) and its own counter. */
export const SandboxPasskey = defineEntity({
  name: "SandboxPasskey",
  tableName: "sandbox_passkey",
  properties: {
    credentialId: p.text().primary(),
    /** PKCS#8, sealed with AES-256-GCM under ACCOUNT_SANDBOX_KEY (see key-sealing.ts). */
    sealedPrivateKey: p.blob(),
    signCount: p.bigint("number"),
  },
});
export type SandboxPasskey = InferEntity<typeof SandboxPasskey>;

import type { GateFacts } from "../gates/gate-facts.ts";

/** A verification request as create-verification-link answers it, first time or again for the same idempotency token. */
export interface CreatedLink {
  requestId: string;
  status: "pending" | "pass";
  flowSecret: string;
  createdAt: Date;
  expiresAt: Date;
  pushedToDevices: number;
  sdkType: "signal" | "presence";
  authMode: "private" | "linked-account";
  gate: GateFacts;
  organizationId: string;
  notarizeOffered: boolean;
}

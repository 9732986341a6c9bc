import { type EnvironmentName, environmentName } from "@svc/platform";
import { type Caller, CredentialKind } from "@svc/proto/common/v1/caller_pb.js";
import { refuse } from "./refusal.ts";

export type CallerKind = "secret_key" | "site_key" | "grant_token";

/** The authenticated partner credential the gateway passes with every partner call. */
export interface PartnerCaller {
  organizationId: string;
  environment: EnvironmentName;
  credentialId: string;
  kind: CallerKind;
}

const kinds = new Map<CredentialKind, CallerKind>([
  [CredentialKind.SECRET_KEY, "secret_key"],
  [CredentialKind.SITE_KEY, "site_key"],
  [CredentialKind.GRANT_TOKEN, "grant_token"],
]);

/** Refuses a call without a complete caller of one of the kinds the operation takes. */
export function partnerCaller(caller: Caller | undefined, accepts: readonly CallerKind[]): PartnerCaller {
  const environment = caller ? environmentName(caller.environment) : undefined;
  const kind = caller ? kinds.get(caller.credentialKind) : undefined;
  if (!caller || !environment || !kind || caller.organizationId === "" || caller.credentialId === "")
    throw refuse("unauthenticated", "the call carries no authenticated caller");
  if (!accepts.includes(kind))
    throw refuse("unauthenticated", `this operation does not take a ${kind.replace("_", " ")}`);
  return { organizationId: caller.organizationId, environment, credentialId: caller.credentialId, kind };
}

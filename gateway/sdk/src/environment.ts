export type Environment = "development" | "production";

/**
 * The environment a credential selects, read from its prefix; undefined for an agent key, whose environment is
 * the one its agent was registered in and is not written in the key.
 */
export function environmentOf(credential: string): Environment | undefined {
  if (credential.startsWith("svc_dev_") || credential.startsWith("pk_test_")) return "development";
  if (
    credential.startsWith("svc_production_") ||
    credential.startsWith("svc_prod_") ||
    credential.startsWith("pk_live_")
  )
    return "production";
  return undefined;
}

import { Environment } from "@svc/proto/common/v1/caller_pb.js";

/** The spec's names of the two environments. */
export type EnvironmentName = "development" | "production";

/** The name of an environment on the wire; undefined when a caller left it unspecified. */
export const environmentName = (environment: Environment): EnvironmentName | undefined =>
  environment === Environment.DEVELOPMENT
    ? "development"
    : environment === Environment.PRODUCTION
      ? "production"
      : undefined;

export const environmentProto = (name: EnvironmentName): Environment =>
  name === "production" ? Environment.PRODUCTION : Environment.DEVELOPMENT;

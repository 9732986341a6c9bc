import { environmentName as nameOf } from "@svc/platform";
import type { CardStatus } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import type { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { KeyType } from "@svc/proto/console/v1/console_pb.js";
import { KeyState } from "@svc/proto/signing/v1/signing_pb.js";
import { statusNames as cardStatusNames } from "../../operations/agent-proposals.ts";

/** How svcctl prints protobuf values: ISO instants and lower-case names, as partners see them in the API. */
export { instant } from "../../http/instant.ts";

export const environmentName = (environment: Environment): string => nameOf(environment) ?? "unspecified";

export const keyTypeName = (type: KeyType): string =>
  type === KeyType.SECRET ? "secret" : type === KeyType.SITE ? "site" : "unspecified";

export const keyStateName = (state: KeyState): string =>
  ({ [KeyState.PENDING]: "pending", [KeyState.ACTIVE]: "active", [KeyState.RETIRED]: "retired" })[state as number] ??
  "unspecified";

export const cardStatusName = (status: CardStatus): string => cardStatusNames[status] ?? "unspecified";

import { type Timestamp, timestampDate } from "@bufbuild/protobuf/wkt";
import { environmentName as nameOf } from "@svc/platform";
import { type CardStatus, CardStatusSchema } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import type { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { KeyType } from "@svc/proto/console/v1/console_pb.js";
import { KeyState } from "@svc/proto/signing/v1/signing_pb.js";

/** How svcctl prints protobuf values: ISO instants and lower-case names, as partners see them in the API. */
export const instant = (timestamp: Timestamp | undefined): string | null =>
  timestamp ? timestampDate(timestamp).toISOString() : null;

export const environmentName = (environment: Environment): string => nameOf(environment) ?? "unspecified";

export const keyTypeName = (type: KeyType): string =>
  type === KeyType.SECRET ? "secret" : type === KeyType.SITE ? "site" : "unspecified";

export const keyStateName = (state: KeyState): string =>
  ({ [KeyState.PENDING]: "pending", [KeyState.ACTIVE]: "active", [KeyState.RETIRED]: "retired" })[state as number] ??
  "unspecified";

/** The API's card statuses are the proto's names without their prefix: `CARD_STATUS_QUEUED` is `queued`. */
export const cardStatusName = (status: CardStatus): string =>
  CardStatusSchema.value[status]?.localName.toLowerCase() ?? "unspecified";

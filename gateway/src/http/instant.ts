import { type Timestamp, timestampDate } from "@bufbuild/protobuf/wkt";

/** A protobuf instant as partners and operators read it: ISO 8601 in UTC, or null when there is none. */
export const instant = (timestamp: Timestamp | undefined): string | null =>
  timestamp ? timestampDate(timestamp).toISOString() : null;

import { gauge } from "@svc/platform";
import type { StoredStatus } from "./status-record.ts";

export const requestStatuses: readonly StoredStatus[] = ["pending", "completed", "failed", "expired", "pass"];

/** Verification requests kept, by status (refreshed at every scrape). */
export const requestsByStatus = gauge("gate_requests", "Verification requests kept, by status", ["status"]);

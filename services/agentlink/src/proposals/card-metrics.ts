import { gauge } from "@svc/platform";

export const cardStatuses = ["queued", "approved", "denied", "cancelled", "expired"] as const;

/** Agents Ask cards kept, by status (refreshed at every scrape). */
export const cardsByStatus = gauge("agentlink_cards", "Agents Ask cards kept, by status", ["status"]);

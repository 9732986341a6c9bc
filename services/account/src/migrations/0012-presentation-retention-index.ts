import { Migration } from "@svc/platform";

class PresentationRetentionIndex extends Migration {
  override up(): void {
    // The retention reads only the presentations it may delete, oldest first: an index of all of them
    // would make every batch step over the accepted ones humans keep for good. The condition is the
    // retention rule's `where` (`presentationRetentionRule`), word for word, so the planner matches it.
    this.addSql(`create index "age_presentation_due" on "age_presentation" ("expires_at")
      where state = 'pending' or (request_id is not null and svc_user_id is null)`);
    this.addSql(`drop index "age_presentation_by_expiry"`);
  }
}

export const indexPresentationRetention = {
  name: "0012_presentation_retention_index",
  class: PresentationRetentionIndex,
};

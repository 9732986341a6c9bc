import { Migration } from "@svc/platform";

/** The person's inbox lists their pending requests (requests/person-inbox.ts). */
export class PendingRequestsByPerson extends Migration {
  override up(): void {
    this.addSql(
      `create index "requests_pending_by_person" on "requests" ("svc_user_id", "created_at") where "status" = 'pending' and "svc_user_id" is not null`,
    );
  }
}

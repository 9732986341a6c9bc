import { Migration } from "@svc/platform";

/** The trace of the item a push announces, which each of its sends continues (platform event-tracing.ts). */
class AddPushTraceContext extends Migration {
  override up(): void {
    this.addSql(`alter table "push_job" add column "trace_context" text null`);
  }
}

export const addPushTraceContext = { name: "0014_push_trace_context", class: AddPushTraceContext };

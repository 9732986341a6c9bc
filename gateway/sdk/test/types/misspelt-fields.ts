import { type AskResult, type Svc, verifyWebhook, type WebhookEvent } from "../../src/index.ts";

/**
 * Compiled by types.test.ts: every `@ts-expect-error` line below must stay an error. Should a misspelt field
 * compile (the generated types lost their shape), tsc reports the unused directive and the test fails.
 */
export async function calls(svc: Svc) {
  // @ts-expect-error partner_user_id misspelt
  await svc.sessions.create({ partner_user: "u1" });
  const session = await svc.sessions.create({ partner_user_id: "u1" });
  // @ts-expect-error the grant token is anchor_grant_token
  session.grant_token;
  const link = await svc.verifications.createLink({ grantToken: "svcs_x", gate: "signup" });
  // @ts-expect-error request_id misspelt
  link.requestId;
  // @ts-expect-error status takes request_id
  await svc.verifications.status({ requestId: link.request_id });
  // @ts-expect-error the status enum has no "verified"
  const verified: boolean = (await svc.verifications.status({ request_id: "r" })).status === "verified";
  // @ts-expect-error revoke names partner_user_id
  await svc.verifications.revoke({ gate: "signup", partner_user: "u1" });
  // @ts-expect-error the result is `valid`, not `ok`
  (await svc.tokens.verify({ token: "t" })).ok;
  // @ts-expect-error the list filter is `status`
  svc.securedAccounts.list({ state: "active" });
  for await (const account of svc.securedAccounts.list({ status: "active" })) {
    // @ts-expect-error rows carry `handle`
    account.handel;
  }
  // @ts-expect-error the report names platform_user_ref
  await svc.securedAccounts.reportCredentialChange({ partner_user_ref: "u1" });
  // @ts-expect-error inquire needs action.summary_title
  await svc.agents.inquire({ request_id: "r", opaque_id: "o", action: { title: "Pay", category: "payments" } });
  // @ts-expect-error check-status waits with wait_seconds
  await svc.agents.checkStatus({ request_id: "r", wait: 5 });
  const asked: AskResult = await svc.agents.ask({ opaque_id: "o", action: { summary_title: "Pay", category: "p" } });
  // @ts-expect-error the verdict is approve or denied
  const approved: boolean = asked.verdict === "approved";
  return { verified, approved };
}

export function events(event: WebhookEvent) {
  if (event.type === "account.unlinked") {
    // @ts-expect-error account.unlinked has `by`, not `unlinked_by`
    event.unlinked_by;
    return event.by;
  }
  // @ts-expect-error only gate events carry `environment`
  return event.environment ?? verifyWebhook("", {}, "").type;
}

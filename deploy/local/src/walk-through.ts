import type { DemoCredentials } from "./demo-provisioning.ts";

/**
 * The whole verification a partner's server runs, as one bash block to paste: every value (the human,
 * the grant token, the request id, the attestation token) is carried forward in a shell variable and read
 * out of the JSON with jq, so nothing is copied by hand against the grant's 5 minutes or the token's
 * 120 s. Each run creates its own sandbox human, so pasting it again within the 10-minute presence
 * window still runs a real ceremony; step 6 shows the Recent Presence pass on purpose. Only `.data` is
 * shown of each answer (the rate-limit report beside it would double the output).
 */
export function walkThrough(options: { repositoryRoot: string; baseUrl: string; demo: DemoCredentials }): string {
  const { demo } = options;
  const post = (path: string, credential: string, body: string) =>
    `curl -s -X POST "$BASE${path}" -H "authorization: Bearer ${credential}" \\\n  -H 'content-type: application/json' -d "${body}"`;
  const createSession = post("/sdk/create-session", "$KEY", '{\\"partner_user_id\\":\\"user-$HUMAN\\"}');
  const createLink = post(
    "/sdk/create-verification-link",
    "$GRANT",
    `{\\"gate\\":\\"${demo.human_gate}\\",\\"svc_user_id\\":\\"$HUMAN\\"}`,
  );
  const status = `curl -s "$BASE/verification/status?request_id=$REQUEST" -H "authorization: Bearer $KEY"`;
  return `cd '${options.repositoryRoot}'   # svcctl runs from the repository
BASE=${options.baseUrl}
KEY=${demo.development_secret_key}
# 1. A new sandbox human for this run: it confirms whatever is pushed to it, with its passkey, and is 30.
#    A new one each run, because the same human at the same gate within 10 minutes gets a Recent
#    Presence pass instead of a ceremony (step 6).
HUMAN=$(npx svcctl human create --env development --age 30 | jq -r .svc_user_id); echo "sandbox human $HUMAN"
# 2. A single-use grant token (it lives 5 minutes).
REPLY=$(${createSession}); echo "$REPLY" | jq .data
GRANT=$(echo "$REPLY" | jq -r .data.data.anchor_grant_token)
# 3. A verification request at the Human Gate, pushed to the human, who confirms at once.
REPLY=$(${createLink}); echo "$REPLY" | jq .data
REQUEST=$(echo "$REPLY" | jq -r .data.data.request_id)
# 4. Its status, read until it leaves pending: completed, with the signed attestation token (valid 120 s).
for i in $(seq 30); do
  REPLY=$(${status})
  [ "$(echo "$REPLY" | jq -r .data.status)" != pending ] && break; sleep 0.5
done; echo "$REPLY" | jq .data
TOKEN=$(echo "$REPLY" | jq -r .data.token)
# 5. Check the token once, as the partner's server does (a second check reports replayed: true).
curl -s -X POST "$BASE/sdk/verify-token" -H 'content-type: application/json' -d "{\\"token\\":\\"$TOKEN\\"}" | jq .data
# 6. The same human at the same gate within 10 minutes: Recent Presence answers at once with status
#    "pass" and token null. No ceremony ran, so there is no new confirmation to sign; a pass means
#    verified just like completed, and you trust it because your own secret key read it from the status
#    operation. (The Age Gate ${demo.age_gate} always runs a ceremony: a pass would carry no age result.)
GRANT=$(${createSession} | jq -r .data.data.anchor_grant_token)
REQUEST=$(${createLink} | jq -r .data.data.request_id)
${status} | jq .data`;
}

/**
 * The same verification as a partner's server writes it in TypeScript with the SDK (`@svc/sdk`), with the
 * demo key and gate: typed calls in place of the curl lines, the attestation checked offline. Its test
 * type-checks it against the built SDK, so it stays code that compiles.
 */
export function sdkWalkThrough(options: { baseUrl: string; demo: DemoCredentials }): string {
  const { demo } = options;
  return `import { Svc } from "@svc/sdk";

const svc = new Svc({ apiKey: "${demo.development_secret_key}", baseUrl: "${options.baseUrl}" });
const session = await svc.sessions.create({ partner_user_id: "user-1" });
const link = await svc.verifications.createLink({ grantToken: session.anchor_grant_token!, gate: "${demo.human_gate}" });
console.log("send the person to", link.web_url);
const status = await svc.verifications.status({ request_id: link.request_id!, wait_seconds: 25 });
if (status.token) {
  const check = await svc.verifyAttestation(status.token, { organizationId: "${demo.organization_id}", requestId: link.request_id });
  console.log(check.valid ? "verified" : check.reason);
}`;
}

/**
 * Agents Ask as an agent's builder runs it, as one more bash block: a sandbox human (it approves what it
 * is asked, with its passkey), the bind (the agent's link code, claimed for the sandbox human by svcctl
 * where a person would claim it in the app), a proposal, the long-poll that returns once the person
 * answered, and the Proof of Resolution checked offline with jose against the served key set.
 */
export function agentWalkThrough(options: { baseUrl: string; jwksUrl: string; issuer: string; demo: DemoCredentials }) {
  const { demo } = options;
  const auth = `-H "authorization: Bearer $AGENT"`;
  return `BASE=${options.baseUrl}
AGENT=${demo.agent_key}
# 1. A sandbox human who approves what it is asked (a person would answer in the app, with a passkey).
PERSON=$(npx svcctl human create --env development | jq -r .svc_user_id)
# 2. Bind: the agent starts a bind session, the person claims its code, the agent reads the binding and
#    gets the person's opaque_id (pairwise: another agent gets another id for the same person).
CODE=$(curl -s -X POST "$BASE/agent/bind-session" ${auth} -H 'content-type: application/json' -d '{}' | jq -r .data.data.link_code)
npx svcctl human claim --human "$PERSON" --code "$CODE" >/dev/null
OPAQUE=$(curl -s "$BASE/agent/check-binding?link_code=$CODE" ${auth} | jq -r .data.data.opaque_id); echo "opaque_id $OPAQUE"
# 3. Propose an action (request_id is the agent's own uuid; repeating it replays the same card).
REQ=$(cat /proc/sys/kernel/random/uuid)
curl -s -X POST "$BASE/agentlink/inquire" ${auth} -H 'content-type: application/json' \\
  -d "{\\"request_id\\":\\"$REQ\\",\\"opaque_id\\":\\"$OPAQUE\\",\\"action\\":{\\"summary_title\\":\\"Pay invoice 2231 to Acme\\",\\"category\\":\\"payments\\",\\"summary_detail\\":{\\"label\\":\\"Amount\\",\\"value\\":\\"EUR 120.00\\"}}}" | jq .data
# 4. Wait for the answer: a long-poll that returns as soon as the card leaves queued.
for i in 1 2 3; do
  REPLY=$(curl -s "$BASE/agentlink/check-status?request_id=$REQ&wait_seconds=25" ${auth})
  [ "$(echo "$REPLY" | jq -r .data.data.status)" != queued ] && break
done; echo "$REPLY" | jq .data
PROOF=$(echo "$REPLY" | jq -r .data.data.resolution_jwt)
# 5. Check the Proof of Resolution offline, as anyone can: ES256 against the key set, no expiry.
node --input-type=module -e "
import { createRemoteJWKSet, jwtVerify } from 'jose';
const { payload } = await jwtVerify(process.argv[1], createRemoteJWKSet(new URL('${options.jwksUrl}')), { issuer: '${options.issuer}', algorithms: ['ES256'] });
console.log(payload);" "$PROOF"`;
}

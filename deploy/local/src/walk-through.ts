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

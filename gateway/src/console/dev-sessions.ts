import { Code, ConnectError } from "@connectrpc/connect";

/** How long the console waits for the development identity provider's mint endpoint. */
const mintTimeoutMs = 5000;

/**
 * The console's MintDevSession, answered by the development identity provider (deploy/dev-idp), a process
 * of its own at GATEWAY_DEV_IDP_ISSUER: the gateway only forwards the subject and the e-mail claims to its
 * `/mint` and passes the session back.
 */
export function devSessionMinter(issuer: string) {
  return async (request: {
    issuer: string;
    subject: string;
    email: string;
    emailVerified: boolean;
  }): Promise<{ token: string; expiresAt: Date }> => {
    if (request.issuer !== issuer)
      throw new ConnectError(`issuer must be the development identity provider, ${issuer}`, Code.InvalidArgument);
    if (request.subject === "") throw new ConnectError("subject is required", Code.InvalidArgument);
    let response: Response;
    try {
      response = await fetch(`${issuer}/mint`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ subject: request.subject, email: request.email, email_verified: request.emailVerified }),
        signal: AbortSignal.timeout(mintTimeoutMs),
      });
    } catch {
      throw new ConnectError(`the development identity provider at ${issuer} does not answer`, Code.Unavailable);
    }
    const body = (await response.json().catch(() => ({}))) as {
      session_token?: string;
      expires_at?: string;
      error?: string;
    };
    if (response.status === 400) throw new ConnectError(body.error ?? "refused", Code.InvalidArgument);
    if (!response.ok || !body.session_token || !body.expires_at)
      throw new ConnectError(
        `the development identity provider at ${issuer} answered ${response.status}`,
        Code.Unavailable,
      );
    return { token: body.session_token, expiresAt: new Date(body.expires_at) };
  };
}

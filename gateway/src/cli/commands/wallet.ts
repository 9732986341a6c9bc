import { createHash, generateKeyPairSync, sign } from "node:crypto";
import { AccountConsoleService } from "@svc/proto/account/v1/account_pb.js";
import { type CliContext, type CommandGroup, stringValue, UsageError } from "../command.ts";

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
const decodeJwtPayload = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split(".")[1] ?? "", "base64url").toString()) as Record<string, unknown>;

/** The request_uri to answer: a gate request's open presentation step, or a new ahead-of-time one in the app API. */
async function requestUri(ctx: CliContext, human: string | undefined, requestId: string | undefined): Promise<string> {
  if (requestId !== undefined)
    return (await ctx.serviceConsole(AccountConsoleService).findAgePresentation({ requestId })).requestUri;
  if (human === undefined) throw new UsageError("--human is required without --request");
  const identity = await ctx.serviceConsole(AccountConsoleService).getDevSignInIdentity({ svcUserId: human });
  const session = await ctx.console().mintDevSession({ issuer: identity.issuer, subject: identity.subject });
  const api = process.env.SVCCTL_API_URL ?? "http://127.0.0.1:8080";
  const response = await fetch(`${api}/v1/app/age/prove`, {
    method: "POST",
    headers: { authorization: `Bearer ${session.sessionToken}`, "content-type": "application/json" },
    body: "{}",
  });
  const answer = (await response.json()) as { data?: { data?: { request_uri?: string }; error?: { message: string } } };
  const uri = answer.data?.data?.request_uri;
  if (!uri) throw new UsageError(`the app API refused: ${answer.data?.error?.message ?? response.status}`);
  return uri;
}

export const walletCommands: CommandGroup = {
  name: "wallet",
  summary: "The development wallet: presents an age credential as a person's wallet would (OpenID4VP).",
  commands: [
    {
      name: "present",
      summary: 'Presents an age credential; prints {"accepted", "reason"?}.',
      details:
        "Gets a credential for --birthdate from the development issuer (or the untrusted one) bound to a fresh holder key, " +
        "fetches the request object at the request_uri, discloses only the asked age_equal_or_over claims with a KB-JWT " +
        "over its nonce and client_id, and posts it by direct_post. With --request it answers that request's presentation " +
        "step (open the request first); without, it proves the age ahead of time through the app API at SVCCTL_API_URL " +
        "(default http://127.0.0.1:8080). Development only.",
      options: {
        human: {
          type: "string",
          valueName: "SVC_USER_ID",
          description: "the person (required without --request: the request names its own step)",
        },
        birthdate: {
          type: "string",
          required: true,
          valueName: "YYYY-MM-DD",
          description: "the birth date in the credential",
        },
        request: { type: "string", valueName: "REQUEST_ID", description: "the Age Gate request to answer" },
        format: {
          type: "string",
          choices: ["sd-jwt-vc", "mdoc"],
          description: "credential format (default sd-jwt-vc)",
        },
        issuer: {
          type: "string",
          choices: ["development", "untrusted"],
          description: "who signs it (default development)",
        },
      },
      async run(values, ctx) {
        if ((stringValue(values, "format") ?? "sd-jwt-vc") !== "sd-jwt-vc")
          throw new UsageError("only --format sd-jwt-vc is supported so far");
        const holder = generateKeyPairSync("ec", { namedCurve: "P-256" });
        const { credential } = await ctx.serviceConsole(AccountConsoleService).issueDevAgeCredential({
          birthDate: values.birthdate as string,
          holderJwk: JSON.stringify(holder.publicKey.export({ format: "jwk" })),
          issuer: stringValue(values, "issuer") ?? "development",
        });
        const uri = await requestUri(ctx, stringValue(values, "human"), stringValue(values, "request"));
        const fetched = await fetch(uri);
        if (!fetched.ok) throw new UsageError(`the request object could not be fetched: ${fetched.status}`);
        const request = decodeJwtPayload(await fetched.text());
        const asked = new Set(
          (request.dcql_query as { credentials: { claims: { path: string[] }[] }[] }).credentials.flatMap((c) =>
            c.claims.map((claim) => claim.path[1]),
          ),
        );
        const [issuerJwt = "", ...disclosures] = credential.split("~").filter((part) => part !== "");
        const chosen = disclosures.filter((d) => asked.has(JSON.parse(Buffer.from(d, "base64url").toString())[1]));
        const presented = `${[issuerJwt, ...chosen].join("~")}~`;
        const bindingInput = `${b64({ typ: "kb+jwt", alg: "ES256" })}.${b64({
          iat: request.iat,
          aud: request.client_id,
          nonce: request.nonce,
          sd_hash: createHash("sha256").update(presented).digest("base64url"),
        })}`;
        const signature = sign("sha256", Buffer.from(bindingInput), {
          key: holder.privateKey,
          dsaEncoding: "ieee-p1363",
        });
        const posted = await fetch(String(request.response_uri), {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({
            vp_token: JSON.stringify({ age: [`${presented}${bindingInput}.${signature.toString("base64url")}`] }),
            state: String(request.state),
          }).toString(),
        });
        const answer = (await posted.json()) as { error_description?: string };
        return posted.ok
          ? { accepted: true }
          : { accepted: false, reason: answer.error_description ?? String(posted.status) };
      },
    },
  ],
};

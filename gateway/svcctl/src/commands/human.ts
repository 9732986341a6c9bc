import { type EnvironmentName, environmentProto } from "@svc/platform";
import { AccountConsoleService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { AgentConsoleService } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { type CommandGroup, stringValue, UsageError } from "../command.ts";
import { instant } from "./format.ts";

const behaviors = {
  confirm: SandboxBehavior.CONFIRM,
  decline: SandboxBehavior.DECLINE,
  silent: SandboxBehavior.SILENT,
} as const;

export const humanCommands: CommandGroup = {
  name: "human",
  summary: "Sandbox humans: test people of the development environment with a software passkey, and their sessions.",
  commands: [
    {
      name: "create",
      summary: 'Creates a sandbox human; prints {"svc_user_id","issuer","subject"}.',
      details:
        "The human confirms, declines or never answers what is pushed to it (--behavior, default confirm), and is --age years old " +
        'when given (age evidence with source "sandbox"). issuer and subject are its sign-in identity at the development identity ' +
        "provider. Only the development environment has sandbox humans: production is refused.",
      options: {
        env: {
          type: "string",
          required: true,
          choices: ["development", "production"],
          description: "environment of the human (only development is accepted)",
        },
        behavior: {
          type: "string",
          choices: Object.keys(behaviors),
          description: "how it answers requests pushed to it (default confirm)",
        },
        age: { type: "string", valueName: "N", description: "its age in whole years, 0 to 150" },
      },
      async run(values, ctx) {
        const ageText = stringValue(values, "age");
        if (ageText !== undefined && !/^\d{1,3}$/.test(ageText))
          throw new UsageError(`--age must be a whole number of years: ${ageText}`);
        const behavior = (stringValue(values, "behavior") ?? "confirm") as keyof typeof behaviors;
        const response = await ctx.serviceConsole(AccountConsoleService).createSandboxHuman({
          environment: environmentProto(values.env as EnvironmentName),
          behavior: behaviors[behavior],
          ...(ageText !== undefined && { age: Number(ageText) }),
        });
        return { svc_user_id: response.svcUserId, issuer: response.issuer, subject: response.subject };
      },
    },
    {
      name: "session",
      summary: 'Signs a human in to the app API; prints {"session_token","expires_at"}.',
      details:
        "A user session for the human's sign-in identity at the development identity provider (deploy/dev-idp; every " +
        "sandbox human has one), sent as 'Authorization: Bearer <session_token>' to the app API (/v1/app/...). Development " +
        "only: a production gateway trusts no development identity provider and refuses.",
      options: {
        human: { type: "string", required: true, valueName: "ID", description: "the human's svc_user_id" },
      },
      async run(values, ctx) {
        const identity = await ctx
          .serviceConsole(AccountConsoleService)
          .getDevSignInIdentity({ svcUserId: values.human as string });
        const session = await ctx.console().mintDevSession({ issuer: identity.issuer, subject: identity.subject });
        return { session_token: session.sessionToken, expires_at: instant(session.expiresAt) };
      },
    },
    {
      name: "claim",
      summary: 'A sandbox human claims an agent\'s link code; prints {"agent_id","agent_name","bound_at"}.',
      details:
        "Binds the sandbox human to the agent that started the bind session, as the person would in the app, so a " +
        "partner's tests need no phone; the agent then reads the binding's opaque_id with check-binding. Development " +
        "only: production, a human that is not a sandbox human and a production agent are refused.",
      options: {
        human: {
          type: "string",
          required: true,
          valueName: "SVC_USER_ID",
          description: "the sandbox human's svc_user_id",
        },
        code: { type: "string", required: true, valueName: "LINK_CODE", description: "the agent's link code" },
      },
      async run(values, ctx) {
        const claimed = await ctx
          .serviceConsole(AgentConsoleService)
          .sandboxClaimLinkCode({ svcUserId: values.human as string, linkCode: values.code as string });
        return {
          agent_id: claimed.agent?.agentId,
          agent_name: claimed.agent?.name,
          bound_at: instant(claimed.boundAt),
        };
      },
    },
  ],
};

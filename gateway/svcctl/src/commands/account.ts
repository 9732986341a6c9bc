import { timestampDate } from "@bufbuild/protobuf/wkt";
import { type EnvironmentName, environmentProto } from "@svc/platform";
import { AccountConsoleService } from "@svc/proto/account/v1/account_pb.js";
import type { CommandGroup } from "../command.ts";

export const accountCommands: CommandGroup = {
  name: "account",
  summary: "Secured accounts: a partner's accounts linked to a human.",
  commands: [
    {
      name: "unlink",
      summary: 'Revokes a secured account for the partner; prints {"handle","unlinked_at","reason"}.',
      details:
        "Ends the active link of the partner's account (organization, environment, the partner's reference) and sends " +
        "account.unlinked by platform, reason platform. An account without an active link is refused. A changed " +
        "sign-in detail is not the console's to report: the partner's server calls " +
        "POST /v1/secured-accounts/report-credential-change.",
      options: {
        org: { type: "string", required: true, valueName: "ID", description: "organization id" },
        env: {
          type: "string",
          required: true,
          choices: ["development", "production"],
          description: "environment of the account",
        },
        ref: {
          type: "string",
          required: true,
          valueName: "REF",
          description: "the partner's reference of the account (platform_user_ref)",
        },
      },
      async run(values, ctx) {
        const response = await ctx.serviceConsole(AccountConsoleService).unlinkAccount({
          organizationId: values.org as string,
          environment: environmentProto(values.env as EnvironmentName),
          partnerUserRef: values.ref as string,
        });
        return {
          handle: response.handle,
          unlinked_at: response.unlinkedAt ? timestampDate(response.unlinkedAt).toISOString() : null,
          reason: response.reason,
        };
      },
    },
  ],
};

import type { CommandGroup } from "../command.ts";
import { instant, keyStateName } from "./format.ts";

export const signingCommands: CommandGroup = {
  name: "signing",
  summary: "The token-signing key ring.",
  commands: [
    {
      name: "rotate",
      summary:
        'Adds a signing key: published now, signing one key-set cache lifetime later; prints {"kid","signs_from","keys"}.',
      options: {},
      async run(_values, ctx) {
        const response = await ctx.console().rotateSigningKeys({});
        return {
          kid: response.kid,
          signs_from: instant(response.signsFrom),
          keys: response.keys.map((key) => ({
            kid: key.kid,
            state: keyStateName(key.state),
            published_at: instant(key.publishedAt),
            signs_from: instant(key.signsFrom),
            retired_at: instant(key.retiredAt),
            unpublish_at: instant(key.unpublishAt),
          })),
        };
      },
    },
  ],
};

import type { CommandGroup } from "../command.ts";

export const orgCommands: CommandGroup = {
  name: "org",
  summary: "Partner organizations.",
  commands: [
    {
      name: "create",
      summary: 'Creates an organization; prints {"organization_id"}.',
      options: {
        name: { type: "string", required: true, valueName: "NAME", description: "display name of the organization" },
      },
      async run(values, ctx) {
        const response = await ctx.console().createOrganization({ name: values.name as string });
        return { organization_id: response.organizationId };
      },
    },
  ],
};

import { runAsMain, type StartOptions, startService } from "@svc/platform";

export const startAgentlink = (options: StartOptions = {}) =>
  startService(
    {
      name: "agentlink",
      envPrefix: "AGENTLINK",
      defaultPort: 9094,
      settings: {},
      schema: "agentlink",
      entities: [],
      migrations: [],
      build: () => ({}),
      routes: () => () => {},
    },
    options,
  );

runAsMain(import.meta.url, () => startAgentlink());

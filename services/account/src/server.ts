import { runAsMain, startService, type StartOptions } from "@svc/platform";

export const startAccount = (options: StartOptions = {}) =>
  startService(
    {
      name: "account",
      envPrefix: "ACCOUNT",
      defaultPort: 9093,
      settings: {},
      schema: "account",
      entities: [],
      migrations: [],
      routes: () => () => {},
    },
    options,
  );

runAsMain(import.meta.url, () => startAccount());

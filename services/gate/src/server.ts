import { runAsMain, startService, type StartOptions } from "@svc/platform";

export const startGate = (options: StartOptions = {}) =>
  startService(
    {
      name: "gate",
      envPrefix: "GATE",
      defaultPort: 9092,
      settings: {},
      schema: "gate",
      entities: [],
      migrations: [],
      routes: () => () => {},
    },
    options,
  );

runAsMain(import.meta.url, () => startGate());

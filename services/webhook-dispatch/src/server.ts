import { runAsMain, startService, type StartOptions } from "@svc/platform";

export const startWebhookDispatch = (options: StartOptions = {}) =>
  startService(
    {
      name: "webhook-dispatch",
      envPrefix: "WEBHOOK_DISPATCH",
      defaultPort: 9095,
      settings: {},
      schema: "webhook_dispatch",
      entities: [],
      migrations: [],
      routes: () => () => {},
    },
    options,
  );

runAsMain(import.meta.url, () => startWebhookDispatch());

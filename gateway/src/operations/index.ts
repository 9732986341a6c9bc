import type { Client } from "@connectrpc/connect";
import type { AccountService } from "@svc/proto/account/v1/account_pb.js";
import {
  appDcApiRequestRoute,
  appDcApiResponseRoute,
  appPresentationStateRoute,
  flowDcApiRequestRoute,
  flowDcApiResponseRoute,
  flowPresentationStateRoute,
  proveAgeRoute,
} from "../app/age-presentation.ts";
import { agentBindingRoutes } from "../app/agent-bindings.ts";
import { agentCardRoutes } from "../app/agent-cards.ts";
import { deleteAccountRoute } from "../app/delete-account.ts";
import { flowBeginPasskeyRegistrationRoute, flowFinishPasskeyRegistrationRoute } from "../app/flow-passkeys.ts";
import { inboxRoutes } from "../app/inbox.ts";
import {
  appMeRoute,
  beginPasskeyRegistrationRoute,
  finishPasskeyRegistrationRoute,
  listPasskeysRoute,
  registerDeviceRoute,
  removePasskeyRoute,
} from "../app/passkeys.ts";
import { pushSubscriptionRoutes } from "../app/push-subscriptions.ts";
import { appRequestRoutes, flowRequestRoutes } from "../app/requests.ts";
import { securedAccountRoutes } from "../app/secured-accounts.ts";
import { walletRoutes } from "../app/wallet.ts";
import { type SignInSettings, webAppRoutes } from "../app/web-app.ts";
import { webFlowRoutes } from "../app/web-flow.ts";
import { securitySchemes } from "../credentials/security-schemes.ts";
import { corsPart } from "../http/openapi/cors-part.ts";
import { openApiDocument, openApiRoute } from "../http/openapi/document.ts";
import type { RawRoute } from "../http/raw-route.ts";
import type { Route } from "../http/route.ts";
import { idempotencyPart } from "../idempotency/openapi-part.ts";
import { mcpPaths, protectedResourceRoute } from "../mcp/protected-resource.ts";
import { rateLimitPart } from "../rate-limits/openapi-part.ts";
import { upgradePageRoute } from "../rate-limits/rate-limit-report.ts";
import { aliasTable, sunset } from "../rename-window/aliases.ts";
import { renameWindowPart } from "../rename-window/openapi-part.ts";
import type { GatewayServices } from "../services.ts";
import { bindSessionRoute, checkBindingRoute } from "./agent-binding.ts";
import { cancelRoute, checkStatusRoute, inquireRoute } from "./agent-proposals.ts";
import { createSessionRoute } from "./create-session.ts";
import { createVerificationLinkRoute } from "./create-verification-link.ts";
import { type KeySetCache, keySetPaths, keySetRoute } from "./jwks.ts";
import { listSecuredAccountsRoute } from "./list-secured-accounts.ts";
import { logoutRoute } from "./logout.ts";
import { partnerConfigRoute } from "./partner-config.ts";
import { qrCodePaths, qrCodeRoute } from "./qr-code.ts";
import { reportCredentialChangeRoute } from "./report-credential-change.ts";
import { revokeVerificationRoute } from "./revoke-verification.ts";
import { verificationStatusRoute } from "./verification-status.ts";
import { verifyTokenRoute } from "./verify-token.ts";
import { type WidgetScript, widgetScriptPaths, widgetScriptRoutes } from "./widget-script.ts";

/** Every public operation under `{base_url}`, one file each in this folder. */
export const routes: readonly Route<GatewayServices>[] = [
  verifyTokenRoute,
  createSessionRoute,
  createVerificationLinkRoute,
  verificationStatusRoute,
  revokeVerificationRoute,
  logoutRoute,
  partnerConfigRoute,
  listSecuredAccountsRoute,
  reportCredentialChangeRoute,
  bindSessionRoute,
  checkBindingRoute,
  inquireRoute,
  checkStatusRoute,
  cancelRoute,
  appMeRoute,
  beginPasskeyRegistrationRoute,
  finishPasskeyRegistrationRoute,
  registerDeviceRoute,
  listPasskeysRoute,
  removePasskeyRoute,
  ...pushSubscriptionRoutes,
  ...securedAccountRoutes,
  deleteAccountRoute,
  ...appRequestRoutes,
  proveAgeRoute,
  appPresentationStateRoute,
  appDcApiRequestRoute,
  appDcApiResponseRoute,
  ...agentBindingRoutes,
  ...agentCardRoutes,
  ...inboxRoutes,
  ...flowRequestRoutes,
  flowPresentationStateRoute,
  flowDcApiRequestRoute,
  flowDcApiResponseRoute,
  flowBeginPasskeyRegistrationRoute,
  flowFinishPasskeyRegistrationRoute,
];

/**
 * The OpenAPI document of all of it: the operations, each feature's part (in the order of the
 * document's description) and the documented replies outside the envelope.
 */
export const openApiDocumentOf = (publicOrigin: string) =>
  openApiDocument({
    routes,
    parts: [rateLimitPart, idempotencyPart, corsPart, renameWindowPart(aliasTable, sunset)],
    securitySchemes,
    paths: { ...keySetPaths(publicOrigin), ...mcpPaths(publicOrigin), ...qrCodePaths, ...widgetScriptPaths },
    publicOrigin,
  });

/** Every reply outside the envelope, on the public origin: what is served but is not an operation. */
export function rawRoutes(options: {
  keySet: KeySetCache;
  signIn: SignInSettings | undefined;
  account: Client<typeof AccountService>;
  publicOrigin: string;
  widget: WidgetScript | undefined;
}): RawRoute[] {
  const { publicOrigin } = options;
  return [
    keySetRoute(options.keySet),
    protectedResourceRoute(publicOrigin),
    openApiRoute(openApiDocumentOf(publicOrigin)),
    qrCodeRoute,
    upgradePageRoute,
    ...widgetScriptRoutes(options.widget),
    ...webFlowRoutes,
    ...walletRoutes(options.account, publicOrigin),
    ...webAppRoutes({ signIn: options.signIn, publicOrigin }),
  ];
}

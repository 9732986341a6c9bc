import { createHumans } from "./0001-humans.ts";
import { createPasskeys } from "./0002-passkeys.ts";
import { createDevices } from "./0003-devices.ts";
import { createAgeEvidence } from "./0004-age-evidence.ts";
import { createAccountLinks } from "./0005-account-links.ts";
import { indexAccountLinkListing } from "./0006-account-link-listing.ts";
import { addPersonSide } from "./0007-person-side.ts";
import { addWalletAgeEvidence } from "./0008-wallet-age-evidence.ts";
import { addMdocPresentations } from "./0009-mdoc-presentations.ts";
import { countAccountLinks } from "./0010-account-link-counts.ts";
import { addSignInEmails } from "./0011-sign-in-emails.ts";
import { indexPresentationRetention } from "./0012-presentation-retention-index.ts";
import { addWebPush } from "./0013-web-push.ts";
import { addPushTraceContext } from "./0014-push-trace-context.ts";

/** Applied in order at start; a migration, once released, is never edited (add a new one). */
export const migrations = [
  createHumans,
  createPasskeys,
  createDevices,
  createAgeEvidence,
  createAccountLinks,
  indexAccountLinkListing,
  addPersonSide,
  addWalletAgeEvidence,
  addMdocPresentations,
  countAccountLinks,
  addSignInEmails,
  indexPresentationRetention,
  addWebPush,
  addPushTraceContext,
];

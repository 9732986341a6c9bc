/**
 * Every string of the web app and the development identity provider's page, one table per language.
 * The server picks the language from `Accept-Language` and sets `<html lang>`; the page reads it there.
 * `{name}` marks a value filled in by `format`.
 */
const en = {
  appName: "Your verification app",
  skipToContent: "Skip to content",
  mainNavigation: "Main",
  navInbox: "Inbox",
  navPasskeys: "Passkeys",
  navAccounts: "Secured accounts",
  navAgents: "Agents",
  navAge: "My age",
  navDelete: "Delete my account",
  signOut: "Sign out",
  loading: "Loading…",
  failed: "That did not work: {message}",
  notYetAvailable: "This is not available on this server yet.",
  passkeyDismissed: "The passkey prompt was dismissed. Try again.",
  noPasskeySupport: "This browser cannot use passkeys.",

  signInTitle: "Sign in",
  signInIntro: "Sign in to see your requests, your agents and your secured accounts.",
  signInButton: "Sign in",
  signInUnavailable: "Signing in is not set up on this server.",
  signingIn: "Signing you in…",
  signInFailed: "Signing in did not work: {message}. Try again.",
  sessionEnded: "Your session ended. Sign in again.",

  devIdpTitle: "Development identity provider",
  devIdpNotice:
    "This is the development identity provider, not a real sign-in: anyone can sign in as anyone here. In production the app signs in through the configured OpenID Connect provider.",
  devIdpSubjectLabel: "Sign in as",
  devIdpSubjectHelp:
    "Any identifier: a new one starts a new person, one used before (for example a sandbox human's subject) is that person again. An e-mail address is also the person's verified address.",
  devIdpContinue: "Continue",
  devIdpInvalid: "This sign-in request cannot be answered: {message}",

  passkeysTitle: "Passkeys",
  passkeysIntro: "A passkey confirms requests and agent cards. It stays on your device.",
  passkeyCreate: "Create a passkey",
  passkeyCreated: "Passkey created.",
  passkeysNone: "You have no passkey yet.",
  passkeyItem: "Passkey created {created}",
  passkeyLastUsed: "Last used {date}",
  passkeyNeverUsed: "Not used yet",
  passkeyRemove: "Remove",
  passkeyRemoveLabel: "Remove the passkey created {created}",
  passkeyRemoved: "Passkey removed.",

  inboxTitle: "Inbox",
  inboxLive: "New items appear here by themselves.",
  inboxRefresh: "Refresh",
  inboxEmpty: "Nothing is waiting for you.",
  requestsTitle: "Requests",
  requestHuman: "{platform} asks you to confirm you are a person",
  requestAge: "{platform} asks you to confirm you are {age} or older",
  expires: "Expires {date}",
  requestOpen: "Open",
  openLinkTitle: "Open a request",
  openLinkLabel: "Request link or request id",
  openLinkButton: "Open",
  openLinkInvalid: "That is not a request link or request id.",
  requestTitleHuman: "Confirm you are a person",
  requestTitleAge: "Confirm you are {age} or older",
  requestIntro: "Confirm with a passkey on this device. Nothing else about you is shared.",
  requestConfirm: "Confirm with a passkey",
  requestDecline: "Decline",
  requestStatus: "This request is {status}.",
  requestDeviceLock:
    "This device has no screen lock or biometric set up, so a passkey cannot confirm it is you. This request is {status}.",
  requestIntroWallet: "First, show your age with a wallet. Then confirm with a passkey.",
  requestAgeShown: "Your age is shown. Now confirm with a passkey.",

  cardsTitle: "Cards from your agents",
  cardFrom: "From {agent}",
  cardCategory: "Category",
  cardTrustedAccount: "Through your linked account",
  cardContent: "The agent's card",
  cardImage: "Image: {alt}",
  cardCautionTitle: "Caution",
  cardCautionIntro: "The safety check flagged this card. Read it carefully.",
  cardSigned: "Exactly what your passkey signs for this card",
  decisionLegend: "Your decision on “{title}”",
  decisionApprove: "Approve",
  decisionDeny: "Deny",
  decisionLater: "Decide later",
  confirmDecisions: "Confirm my decisions with a passkey",
  noDecisions: "Choose approve or deny on at least one card.",
  decisionsConfirmed: "Confirmed {count} decisions.",

  noticesTitle: "Notices",
  noticeRevoked: "{platform} ended your secured account on {date}.",
  noticeRelink: "{platform} reported a changed sign-in detail. Your next confirmation there links the account again.",
  noticeAgentBound: "{agent} is now bound to you.",
  noticeDismiss: "Dismiss",

  accountsTitle: "Secured accounts",
  accountsIntro: "Platforms where your confirmation secures your account.",
  accountsNone: "You have no secured accounts.",
  accountSince: "Secured since {date}",
  accountUnlinkedAt: "Unlinked {date}",
  accountUnlink: "Unlink",
  accountUnlinkLabel: "Unlink your account at {platform}",
  accountUnlinkReally: "Unlink your account at {platform}? The platform is told at once.",
  accountUnlinkYes: "Yes, unlink",
  keep: "Keep",
  accountUnlinked: "Your account at {platform} is unlinked.",

  agentsTitle: "Agents",
  agentsIntro: "Agents you bound to yourself can ask you to approve what they do.",
  agentsClaimLabel: "Link code the agent shows",
  agentsClaim: "Bind the agent",
  agentsClaimed: "{agent} is now bound to you.",
  agentsNone: "No agent is bound to you.",
  agentBoundSince: "Bound since {date}",
  agentUnbind: "Unbind",
  agentUnbindLabel: "Unbind {agent}",
  agentUnbound: "{agent} is no longer bound to you.",

  ageTitle: "Prove your age",
  ageIntro:
    "Show your age once with a wallet app. Later age checks at an age it covers finish at once. The wallet shares only whether you are old enough, never your birth date.",
  ageStart: "Show my age with a wallet",
  ageWalletTitle: "Your wallet",
  ageScan: "Scan with your wallet app to show your age.",
  ageQrAlt: "QR code to scan with your wallet app",
  ageSameDevice: "Use a wallet on this device",
  ageWaiting: "Waiting for your wallet…",
  ageChecking: "Checking your wallet's answer…",
  ageAccepted: "Your age is shown. Age checks at the ages it covers now finish at once.",
  ageExpired: "The wallet request expired. Start again.",
  ageTryAgain: "Try again",
  ageScanAgain: "Scan the code again with your wallet app.",
  ageWalletDismissed: "The wallet prompt was dismissed. Try again.",
  ageRefusedUntrustedIssuer: "Your wallet's credential comes from an issuer this service does not trust.",
  ageRefusedExpired: "The credential in your wallet has expired.",
  ageRefusedNotYetValid: "The credential in your wallet is not valid yet.",
  ageRefusedRevoked: "The credential in your wallet has been revoked by its issuer.",
  ageRefusedClaimMissing: "Your wallet did not share the age this page asks for.",
  ageRefusedClaimNotAsked: "Your wallet shared an age this page did not ask for.",
  ageRefusedType: "This kind of credential cannot prove your age here.",
  ageRefusedUnverified: "Your wallet's answer could not be verified.",
  ageNothingKept: "Nothing was kept.",

  deleteTitle: "Delete my account",
  deleteIntro:
    "This ends every secured account and erases your passkeys, devices, age evidence and agent bindings. It cannot be undone.",
  deleteConfirmLabel: "To confirm, type: delete my account",
  deleteButton: "Delete my account for good",
  deleteMismatch: "Type the phrase exactly as shown.",
  deleteDone: "Your account is deleted.",
};

type Messages = typeof en;
export type MessageKey = keyof Messages;

const de: Messages = {
  appName: "Ihre Bestätigungs-App",
  skipToContent: "Zum Inhalt springen",
  mainNavigation: "Hauptmenü",
  navInbox: "Eingang",
  navPasskeys: "Passkeys",
  navAccounts: "Gesicherte Konten",
  navAgents: "Agenten",
  navAge: "Mein Alter",
  navDelete: "Mein Konto löschen",
  signOut: "Abmelden",
  loading: "Wird geladen…",
  failed: "Das hat nicht geklappt: {message}",
  notYetAvailable: "Das ist auf diesem Server noch nicht verfügbar.",
  passkeyDismissed: "Die Passkey-Abfrage wurde abgebrochen. Versuchen Sie es noch einmal.",
  noPasskeySupport: "Dieser Browser kann keine Passkeys verwenden.",

  signInTitle: "Anmelden",
  signInIntro: "Melden Sie sich an, um Ihre Anfragen, Agenten und gesicherten Konten zu sehen.",
  signInButton: "Anmelden",
  signInUnavailable: "Die Anmeldung ist auf diesem Server nicht eingerichtet.",
  signingIn: "Sie werden angemeldet…",
  signInFailed: "Die Anmeldung hat nicht geklappt: {message}. Versuchen Sie es noch einmal.",
  sessionEnded: "Ihre Sitzung ist abgelaufen. Melden Sie sich erneut an.",

  devIdpTitle: "Entwicklungs-Identitätsanbieter",
  devIdpNotice:
    "Dies ist der Identitätsanbieter für die Entwicklung, keine echte Anmeldung: Hier kann sich jeder als jeder anmelden. Im Betrieb meldet sich die App über den eingerichteten OpenID-Connect-Anbieter an.",
  devIdpSubjectLabel: "Anmelden als",
  devIdpSubjectHelp:
    "Eine beliebige Kennung: Eine neue beginnt eine neue Person, eine schon benutzte (etwa das Subject eines Sandbox-Menschen) ist wieder diese Person. Eine E-Mail-Adresse ist zugleich die bestätigte Adresse der Person.",
  devIdpContinue: "Weiter",
  devIdpInvalid: "Diese Anmeldeanfrage kann nicht beantwortet werden: {message}",

  passkeysTitle: "Passkeys",
  passkeysIntro: "Ein Passkey bestätigt Anfragen und Karten von Agenten. Er bleibt auf Ihrem Gerät.",
  passkeyCreate: "Passkey erstellen",
  passkeyCreated: "Passkey erstellt.",
  passkeysNone: "Sie haben noch keinen Passkey.",
  passkeyItem: "Passkey, erstellt am {created}",
  passkeyLastUsed: "Zuletzt benutzt am {date}",
  passkeyNeverUsed: "Noch nicht benutzt",
  passkeyRemove: "Entfernen",
  passkeyRemoveLabel: "Den am {created} erstellten Passkey entfernen",
  passkeyRemoved: "Passkey entfernt.",

  inboxTitle: "Eingang",
  inboxLive: "Neues erscheint hier von selbst.",
  inboxRefresh: "Aktualisieren",
  inboxEmpty: "Nichts wartet auf Sie.",
  requestsTitle: "Anfragen",
  requestHuman: "{platform} bittet Sie zu bestätigen, dass Sie ein Mensch sind",
  requestAge: "{platform} bittet Sie zu bestätigen, dass Sie mindestens {age} Jahre alt sind",
  expires: "Läuft ab am {date}",
  requestOpen: "Öffnen",
  openLinkTitle: "Eine Anfrage öffnen",
  openLinkLabel: "Link oder Kennung der Anfrage",
  openLinkButton: "Öffnen",
  openLinkInvalid: "Das ist weder ein Anfrage-Link noch die Kennung einer Anfrage.",
  requestTitleHuman: "Bestätigen Sie, dass Sie ein Mensch sind",
  requestTitleAge: "Bestätigen Sie, dass Sie mindestens {age} Jahre alt sind",
  requestIntro: "Bestätigen Sie mit einem Passkey auf diesem Gerät. Sonst wird nichts über Sie weitergegeben.",
  requestConfirm: "Mit Passkey bestätigen",
  requestDecline: "Ablehnen",
  requestStatus: "Diese Anfrage ist {status}.",
  requestDeviceLock:
    "Dieses Gerät hat keine Displaysperre und keine Biometrie eingerichtet, daher kann ein Passkey nicht bestätigen, dass Sie es sind. Diese Anfrage ist {status}.",
  requestIntroWallet: "Zeigen Sie zuerst Ihr Alter mit einer Wallet. Bestätigen Sie dann mit einem Passkey.",
  requestAgeShown: "Ihr Alter ist nachgewiesen. Bestätigen Sie jetzt mit einem Passkey.",

  cardsTitle: "Karten Ihrer Agenten",
  cardFrom: "Von {agent}",
  cardCategory: "Kategorie",
  cardTrustedAccount: "Über Ihr verknüpftes Konto",
  cardContent: "Die Karte des Agenten",
  cardImage: "Bild: {alt}",
  cardCautionTitle: "Vorsicht",
  cardCautionIntro: "Die Sicherheitsprüfung hat diese Karte markiert. Lesen Sie sie genau.",
  cardSigned: "Genau das unterschreibt Ihr Passkey für diese Karte",
  decisionLegend: "Ihre Entscheidung zu „{title}“",
  decisionApprove: "Zustimmen",
  decisionDeny: "Ablehnen",
  decisionLater: "Später entscheiden",
  confirmDecisions: "Meine Entscheidungen mit Passkey bestätigen",
  noDecisions: "Wählen Sie bei mindestens einer Karte Zustimmen oder Ablehnen.",
  decisionsConfirmed: "{count} Entscheidungen bestätigt.",

  noticesTitle: "Hinweise",
  noticeRevoked: "{platform} hat Ihr gesichertes Konto am {date} beendet.",
  noticeRelink: "{platform} meldet geänderte Anmeldedaten. Ihre nächste Bestätigung dort verknüpft das Konto erneut.",
  noticeAgentBound: "{agent} ist jetzt an Sie gebunden.",
  noticeDismiss: "Ausblenden",

  accountsTitle: "Gesicherte Konten",
  accountsIntro: "Plattformen, bei denen Ihre Bestätigung Ihr Konto sichert.",
  accountsNone: "Sie haben keine gesicherten Konten.",
  accountSince: "Gesichert seit {date}",
  accountUnlinkedAt: "Getrennt am {date}",
  accountUnlink: "Trennen",
  accountUnlinkLabel: "Ihr Konto bei {platform} trennen",
  accountUnlinkReally: "Ihr Konto bei {platform} trennen? Die Plattform erfährt es sofort.",
  accountUnlinkYes: "Ja, trennen",
  keep: "Behalten",
  accountUnlinked: "Ihr Konto bei {platform} ist getrennt.",

  agentsTitle: "Agenten",
  agentsIntro: "An Sie gebundene Agenten können Sie bitten, ihr Handeln zu bestätigen.",
  agentsClaimLabel: "Code, den der Agent anzeigt",
  agentsClaim: "Agenten binden",
  agentsClaimed: "{agent} ist jetzt an Sie gebunden.",
  agentsNone: "Kein Agent ist an Sie gebunden.",
  agentBoundSince: "Gebunden seit {date}",
  agentUnbind: "Lösen",
  agentUnbindLabel: "{agent} lösen",
  agentUnbound: "{agent} ist nicht mehr an Sie gebunden.",

  ageTitle: "Alter nachweisen",
  ageIntro:
    "Zeigen Sie Ihr Alter einmal mit einer Wallet-App. Spätere Altersprüfungen für ein abgedecktes Alter sind dann sofort erledigt. Die Wallet teilt nur mit, ob Sie alt genug sind, nie Ihr Geburtsdatum.",
  ageStart: "Alter mit einer Wallet zeigen",
  ageWalletTitle: "Ihre Wallet",
  ageScan: "Scannen Sie den Code mit Ihrer Wallet-App, um Ihr Alter zu zeigen.",
  ageQrAlt: "QR-Code zum Scannen mit Ihrer Wallet-App",
  ageSameDevice: "Wallet auf diesem Gerät verwenden",
  ageWaiting: "Warten auf Ihre Wallet…",
  ageChecking: "Die Antwort Ihrer Wallet wird geprüft…",
  ageAccepted: "Ihr Alter ist nachgewiesen. Altersprüfungen für die abgedeckten Alter sind jetzt sofort erledigt.",
  ageExpired: "Die Wallet-Anfrage ist abgelaufen. Beginnen Sie noch einmal.",
  ageTryAgain: "Noch einmal versuchen",
  ageScanAgain: "Scannen Sie den Code noch einmal mit Ihrer Wallet-App.",
  ageWalletDismissed: "Die Wallet-Abfrage wurde abgebrochen. Versuchen Sie es noch einmal.",
  ageRefusedUntrustedIssuer:
    "Der Nachweis in Ihrer Wallet stammt von einem Aussteller, dem dieser Dienst nicht vertraut.",
  ageRefusedExpired: "Der Nachweis in Ihrer Wallet ist abgelaufen.",
  ageRefusedNotYetValid: "Der Nachweis in Ihrer Wallet ist noch nicht gültig.",
  ageRefusedRevoked: "Der Nachweis in Ihrer Wallet wurde von seinem Aussteller widerrufen.",
  ageRefusedClaimMissing: "Ihre Wallet hat das erfragte Alter nicht mitgeteilt.",
  ageRefusedClaimNotAsked: "Ihre Wallet hat ein Alter mitgeteilt, nach dem nicht gefragt wurde.",
  ageRefusedType: "Mit dieser Art von Nachweis lässt sich Ihr Alter hier nicht zeigen.",
  ageRefusedUnverified: "Die Antwort Ihrer Wallet konnte nicht geprüft werden.",
  ageNothingKept: "Nichts wurde gespeichert.",

  deleteTitle: "Mein Konto löschen",
  deleteIntro:
    "Damit enden alle gesicherten Konten, und Ihre Passkeys, Geräte, Altersnachweise und Agenten-Bindungen werden gelöscht. Das lässt sich nicht rückgängig machen.",
  deleteConfirmLabel: "Zur Bestätigung eingeben: delete my account",
  deleteButton: "Mein Konto endgültig löschen",
  deleteMismatch: "Geben Sie den Satz genau wie angezeigt ein.",
  deleteDone: "Ihr Konto ist gelöscht.",
};

export const languages = { en, de } as const;
export type Language = keyof typeof languages;

/** The first language of `Accept-Language` (by q, then order) that the app speaks; English otherwise. */
export function pickLanguage(acceptLanguage: string | undefined): Language {
  const ranked = (acceptLanguage ?? "")
    .split(",")
    .map((part, index) => {
      const [tag = "", ...params] = part.trim().split(";");
      const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
      return { base: tag.trim().toLowerCase().split("-")[0] ?? "", q: q ? Number(q.slice(2)) : 1, index };
    })
    .filter((entry) => entry.base !== "" && Number.isFinite(entry.q) && entry.q > 0)
    .sort((a, b) => b.q - a.q || a.index - b.index);
  for (const { base } of ranked) if (base === "en" || base === "de") return base;
  return "en";
}

/** A message with its `{name}` placeholders filled in (as text: the caller puts it in a text node). */
export const format = (template: string, values: Record<string, string | number> = {}): string =>
  template.replace(/\{(\w+)\}/g, (whole, name: string) => (name in values ? String(values[name]) : whole));

/** What the element says, in English and German; `lang` picks one, anything else reads English. */
const english = {
  humanTitle: "Confirm you are human",
  ageTitle: "Confirm your age",
  preparing: "Preparing the check…",
  scan: "Scan this code with the app on your phone.",
  qrAlt: "QR code to open the check in the app",
  openApp: "Open the app",
  continueHere: "Continue in this browser",
  pending: "Waiting for your confirmation…",
  completed: "Verified. You can continue.",
  pass: "Verified: you confirmed a moment ago.",
  failed: "The confirmation did not succeed.",
  expired: "The check expired before it was confirmed.",
  error: "The check could not be completed.",
  unavailable: "This check is not available right now.",
  refusedOrigin: (origin: string) =>
    `This website (${origin}) is not allowed to use this site key. The site owner must add it to the key's allowed origins.`,
  unreachable: "The verification service cannot be reached. Check the connection and try again.",
  retry: "Try again",
};

export type Text = typeof english;

const german: Text = {
  humanTitle: "Bestätigen Sie, dass Sie ein Mensch sind",
  ageTitle: "Bestätigen Sie Ihr Alter",
  preparing: "Die Prüfung wird vorbereitet…",
  scan: "Scannen Sie diesen Code mit der App auf Ihrem Telefon.",
  qrAlt: "QR-Code, der die Prüfung in der App öffnet",
  openApp: "App öffnen",
  continueHere: "In diesem Browser fortfahren",
  pending: "Warten auf Ihre Bestätigung…",
  completed: "Bestätigt. Sie können fortfahren.",
  pass: "Bestätigt: Sie haben eben erst bestätigt.",
  failed: "Die Bestätigung ist nicht gelungen.",
  expired: "Die Prüfung ist abgelaufen, bevor sie bestätigt wurde.",
  error: "Die Prüfung konnte nicht abgeschlossen werden.",
  unavailable: "Diese Prüfung ist gerade nicht verfügbar.",
  refusedOrigin: (origin: string) =>
    `Diese Website (${origin}) darf diesen Site-Key nicht verwenden. Der Betreiber muss sie als erlaubten Ursprung des Schlüssels eintragen.`,
  unreachable: "Der Prüfdienst ist nicht erreichbar. Prüfen Sie die Verbindung und versuchen Sie es erneut.",
  retry: "Erneut versuchen",
};

/** The text for a language tag: German for `de` and its regions, English otherwise. */
export const textFor = (lang: string): Text => (/^de\b/i.test(lang) ? german : english);

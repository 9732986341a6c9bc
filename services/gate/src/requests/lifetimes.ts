/** The spec's constants ("Limits"). */
export const requestLifetimeMs = 5 * 60_000;
export const grantTokenLifetimeMs = 5 * 60_000;
/** A Recent Presence pass reads `pass` this long after the check, then `expired`. */
export const presencePassReadableMs = 60_000;
/**
 * A confirmation that began inside the window (the passkey assertion checked) may finish this long
 * after it: securing the account and signing the token take calls to other services, and a request
 * must not expire between the person's confirmation and its completion.
 */
export const confirmationHoldMs = 30_000;

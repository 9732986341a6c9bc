/** The spec's constants ("Limits"). */
export const requestLifetimeMs = 5 * 60_000;
export const grantTokenLifetimeMs = 5 * 60_000;
/** A Recent Presence pass reads `pass` this long after the check, then `expired`. */
export const presencePassReadableMs = 60_000;

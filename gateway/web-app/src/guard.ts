import { NotOnThisServer, SignedOut } from "./api.ts";
import { t } from "./i18n.ts";

/** Where a refused session sends the page: set by `main.ts`. */
let onSignedOut: () => void = () => {};
export const whenSignedOut = (handler: () => void): void => {
  onSignedOut = handler;
};

/**
 * Runs a person's action and says what went wrong in their words: a dismissed passkey prompt can be
 * tried again, an ended session goes back to signing in, an operation this server lacks says so.
 */
export function guard(say: (text: string, kind?: "ok" | "problem") => void, work: () => Promise<void>): () => void {
  return () => {
    work().catch((error: unknown) => {
      if (error instanceof SignedOut) return onSignedOut();
      if (error instanceof NotOnThisServer) return say(t("notYetAvailable"), "problem");
      if (error instanceof DOMException && error.name === "NotAllowedError")
        return say(t("passkeyDismissed"), "problem");
      say(t("failed", { message: error instanceof Error ? error.message : String(error) }), "problem");
    });
  };
}

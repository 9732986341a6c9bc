/** Moves the page to another screen (a path below /app) without reloading it. */
type Navigate = (path: string) => void;

/** Draws one screen into `main`; answers what to do when the person leaves it. */
export type Screen = (main: HTMLElement, navigate: Navigate) => (() => void) | undefined;

import { readFileSync } from "node:fs";

/** Every rule that depends on time (expiry, TTLs, rate windows, the alias sunset) reads it from here. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock a test moves by hand: it stands still until told otherwise. */
export class ManualClock implements Clock {
  #at: number;
  constructor(start: Date | string) {
    this.#at = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.#at);
  }
  set(at: Date | string): void {
    this.#at = new Date(at).getTime();
  }
  advance(ms: number): void {
    this.#at += ms;
  }
}

/**
 * A clock that every process of a test mesh shares: it reads an ISO instant from a file on each call
 * (the system time while the file is empty or absent). Tests move time for the whole mesh by writing
 * the file, so expiry and date rules are tested across processes without sleeping.
 */
export function fileClock(path: string): Clock {
  return {
    now() {
      let text = "";
      try {
        text = readFileSync(path, "utf8").trim();
      } catch {
        return new Date();
      }
      if (text === "") return new Date();
      const at = new Date(text);
      if (Number.isNaN(at.getTime())) throw new Error(`clock file ${path} holds no valid instant: ${text}`);
      return at;
    },
  };
}

/** Why a production process must not start with this environment's clock, if it must not. */
export function testClockRefusal(deployment: "development" | "production", env: NodeJS.ProcessEnv): string | undefined {
  return deployment === "production" && env.SVC_CLOCK_FILE
    ? "SVC_CLOCK_FILE (the shared test clock) is refused in production"
    : undefined;
}

/** `SVC_CLOCK_FILE` selects the shared test clock; production runs refuse it (`testClockRefusal`). */
export function clockFromEnvironment(env: NodeJS.ProcessEnv = process.env): Clock {
  const path = env.SVC_CLOCK_FILE;
  return path ? fileClock(path) : systemClock;
}

export const epochSeconds = (at: Date): number => Math.floor(at.getTime() / 1000);

import { reportValue, type Violation } from "./violation.ts";
import { type ViolationType, violationTypes } from "./violation-types.ts";

/** Collects violations while a card is screened: one per type and path, in the order they were found. */
export class Findings {
  readonly list: Violation[] = [];
  readonly #seen = new Set<string>();

  add(type: ViolationType, path: string, value: unknown, explanation?: string): void {
    const key = `${type} ${path}`;
    if (this.#seen.has(key)) return;
    this.#seen.add(key);
    const entry = violationTypes[type];
    this.list.push({
      source: entry.source,
      type,
      path,
      severity: entry.severity,
      value: reportValue(value),
      explanation: explanation ?? entry.explanation,
      fix: entry.fix,
    });
  }

  has(type: ViolationType, path: string): boolean {
    return this.#seen.has(`${type} ${path}`);
  }

  get hasErrors(): boolean {
    return this.list.some((violation) => violation.severity === "error");
  }
}

import type { Reporter, TestModule, TestRunEndReason } from "vitest/node";

/** Ends the run with the plain line `N passed, N failed[, N skipped]` that CI reads. */
export class SummaryReporter implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    _unhandledErrors: ReadonlyArray<unknown>,
    reason: TestRunEndReason,
  ): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const testModule of testModules) {
      for (const testCase of testModule.children.allTests()) {
        const { state } = testCase.result();
        if (state === "passed") passed += 1;
        else if (state === "failed") failed += 1;
        else if (state === "skipped") skipped += 1;
      }
    }
    // A failing global setup, a file that cannot load or an unhandled error fails the run without failing
    // a test; the line must not read as green then.
    if (reason !== "passed" && failed === 0) failed = 1;
    const line = `${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ""}`;
    process.stdout.write(`\n${line}\n`);
  }
}

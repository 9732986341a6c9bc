import { defineConfig } from "vitest/config";
import { SummaryReporter } from "./test/harness/summary-reporter.ts";

export default defineConfig({
  test: {
    include: [
      "services/*/test/**/*.test.ts",
      "gateway/test/**/*.test.ts",
      "gateway/sdk/test/**/*.test.ts",
      "deploy/*/test/**/*.test.ts",
      "test/**/*.test.ts",
    ],
    globalSetup: ["./test/harness/global-setup.ts"],
    setupFiles: ["./test/harness/fixed-seed.ts"],
    pool: "forks",
    // The machines have 2 cores.
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Polls wait for other processes (the mesh, the dispatcher); on two busy cores a second is too short.
    expect: { poll: { timeout: 10_000 } },
    reporters: ["default", new SummaryReporter()],
  },
});

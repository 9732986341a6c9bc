import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect, test } from "vitest";

/**
 * A misspelt field is a compile error: tsc checks types/misspelt-fields.ts, whose `@ts-expect-error` lines
 * fail the build as soon as one of them stops being an error.
 */
test("tsc refuses every misspelt field of the calls in types/misspelt-fields.ts", async () => {
  const file = fileURLToPath(new URL("./types/misspelt-fields.ts", import.meta.url));
  const tsc = fileURLToPath(new URL("../../../node_modules/typescript/bin/tsc", import.meta.url));
  const flags = ["--noEmit", "--strict", "--module", "nodenext", "--target", "es2022", "--lib", "es2024,dom"];
  const run = promisify(execFile)(process.execPath, [
    tsc,
    ...flags,
    "--allowImportingTsExtensions",
    "--skipLibCheck",
    file,
  ]);
  const output = await run.then(
    ({ stdout }) => stdout,
    (failed: { stdout: string }) => failed.stdout,
  );
  expect(output).toBe("");
}, 60_000);

import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";

export type SvcctlRun = { code: number; stdout: string; stderr: string };

/** The command npm installs for the workspace (`npx svcctl`), as an operator runs it: not the gateway's source. */
const svcctlBin = fileURLToPath(new URL("../../node_modules/.bin/svcctl", import.meta.url));

/** Runs svcctl as a child process against a console address; never rejects, so tests can assert on failures. */
export const runSvcctl = (consoleUrl: string, args: readonly string[]): Promise<SvcctlRun> =>
  new Promise((resolve) => {
    execFile(
      process.execPath,
      [svcctlBin, ...args],
      { env: { ...process.env, SVCCTL_CONSOLE_URL: consoleUrl }, timeout: 20_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === "number" ? error.code : -1) : 0, stdout, stderr }),
    );
  });

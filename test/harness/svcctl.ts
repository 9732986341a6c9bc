import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";

export type SvcctlRun = { code: number; stdout: string; stderr: string };

/** The command npm installs from the svcctl workspace (`npx svcctl`), as an operator runs it: not its source. */
const svcctlBin = fileURLToPath(new URL("../../node_modules/.bin/svcctl", import.meta.url));

/**
 * Runs svcctl as a child process against a console (a mesh's, with its operator credential, or a bare
 * address such as one service's own console); never rejects, so tests can assert on failures.
 */
export const runSvcctl = (
  target: string | { consoleUrl: string; consoleToken: string },
  args: readonly string[],
): Promise<SvcctlRun> =>
  new Promise((resolve) => {
    const { consoleUrl, consoleToken = "" } = typeof target === "string" ? { consoleUrl: target } : target;
    execFile(
      process.execPath,
      [svcctlBin, ...args],
      // An empty SVCCTL_CONSOLE_TOKEN is no token, so the .data/console-token of a local `npm start` is never read here.
      { env: { ...process.env, SVCCTL_CONSOLE_URL: consoleUrl, SVCCTL_CONSOLE_TOKEN: consoleToken }, timeout: 20_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === "number" ? error.code : -1) : 0, stdout, stderr }),
    );
  });

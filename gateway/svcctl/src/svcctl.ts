#!/usr/bin/env node
/**
 * svcctl: the operator's command line for the gateway's internal console service.
 * Prints JSON on stdout; errors on stderr. Exit codes: 0 done, 1 the console refused or failed, 2 usage.
 */
import { readFileSync, realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Code, ConnectError } from "@connectrpc/connect";
import { type CommandGroup, commandUsage, consoleContext, groupUsage, parseOptions, UsageError } from "./command.ts";
import { accountCommands } from "./commands/account.ts";
import { agentCommands } from "./commands/agent.ts";
import { gateCommands } from "./commands/gate.ts";
import { humanCommands } from "./commands/human.ts";
import { keyCommands } from "./commands/key.ts";
import { orgCommands } from "./commands/org.ts";
import { signingCommands } from "./commands/signing.ts";
import { walletCommands } from "./commands/wallet.ts";
import { webhookCommands } from "./commands/webhook.ts";

/** One file per group in `commands/`; a new group is one import and one entry here. */
const groups: readonly CommandGroup[] = [
  orgCommands,
  keyCommands,
  signingCommands,
  gateCommands,
  humanCommands,
  accountCommands,
  agentCommands,
  webhookCommands,
  walletCommands,
];

const defaultConsoleUrl = "http://127.0.0.1:9090";
/** Where `npm start` writes the operator credential of the mesh it runs (deploy/local/src/start.ts). */
const localTokenFile = fileURLToPath(new URL("../../../.data/console-token", import.meta.url));

/**
 * The console's operator credential: SVCCTL_CONSOLE_TOKEN when set (set and empty: none), else the file
 * `npm start` wrote, else none.
 */
function operatorToken(env: NodeJS.ProcessEnv): string | undefined {
  if (env.SVCCTL_CONSOLE_TOKEN !== undefined) return env.SVCCTL_CONSOLE_TOKEN || undefined;
  try {
    return readFileSync(localTokenFile, "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}

function usage(): string {
  const width = Math.max(...groups.map((g) => g.name.length));
  return [
    "Usage: svcctl <group> <command> [options]",
    "",
    `Operator commands for the gateway's console service (SVCCTL_CONSOLE_URL, default ${defaultConsoleUrl}).`,
    "Its operator credential comes from SVCCTL_CONSOLE_TOKEN, else from .data/console-token, which npm start writes.",
    "Results are printed as JSON on stdout.",
    "",
    "Groups:",
    ...groups.map((g) => `  ${g.name.padEnd(width)}  ${g.summary}`),
    "",
    "Run 'svcctl <group> --help' for its commands.",
    "",
    "svcctl mcp --stdio serves the agent tools of the MCP server over stdio (svcctl mcp --help).",
    "",
  ].join("\n");
}

const isHelp = (arg: string | undefined) => arg === "--help" || arg === "-h" || arg === "help";

interface Io {
  out(text: string): void;
  err(text: string): void;
  env: NodeJS.ProcessEnv;
}

export async function svcctl(argv: string[], io: Io): Promise<number> {
  try {
    const [groupName, commandName, ...rest] = argv;
    if (groupName === undefined) throw new UsageError("no command given", usage());
    if (isHelp(groupName)) {
      io.out(usage());
      return 0;
    }
    // Not a console command: an MCP server for an agent, speaking on stdout until stdin closes. Loaded only
    // here: the MCP SDK and the tools' compiled schemas cost most of a second of CPU no console command should pay.
    if (groupName === "mcp") {
      const { mcpUsage, serveMcpStdio } = await import("./mcp/serve-stdio.ts");
      if (isHelp(commandName)) {
        io.out(mcpUsage);
        return 0;
      }
      await serveMcpStdio(argv.slice(1), io.env);
      return 0;
    }
    const group = groups.find((g) => g.name === groupName);
    if (!group) throw new UsageError(`unknown command group ${JSON.stringify(groupName)}`, usage());
    if (commandName === undefined) throw new UsageError(`${group.name}: no command given`, groupUsage(group));
    if (isHelp(commandName)) {
      io.out(groupUsage(group));
      return 0;
    }
    const command = group.commands.find((c) => c.name === commandName);
    if (!command)
      throw new UsageError(`${group.name}: unknown command ${JSON.stringify(commandName)}`, groupUsage(group));
    if (rest.includes("--help") || rest.includes("-h")) {
      io.out(commandUsage(group, command));
      return 0;
    }

    const values = parseOptions(group, command, rest);
    const ctx = consoleContext(io.env.SVCCTL_CONSOLE_URL || defaultConsoleUrl, operatorToken(io.env));
    const result = await command.run(values, ctx);
    io.out(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`svcctl: ${error.message}\n${error.help ? `\n${error.help}` : ""}`);
      return 2;
    }
    if (error instanceof ConnectError) {
      const consoleUrl = io.env.SVCCTL_CONSOLE_URL || defaultConsoleUrl;
      const message =
        error.code === Code.Unavailable
          ? `cannot reach the console at ${consoleUrl}: ${error.rawMessage}`
          : error.rawMessage;
      io.err(`svcctl: ${Code[error.code]}: ${message}\n`);
      return 1;
    }
    io.err(`svcctl: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

// Through `npx svcctl` argv[1] is the bin symlink, so compare real paths.
if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await svcctl(process.argv.slice(2), {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    env: process.env,
  });
}

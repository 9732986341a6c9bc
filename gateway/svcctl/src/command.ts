import { parseArgs } from "node:util";
import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ConsoleService } from "@svc/proto/console/v1/console_pb.js";

/** Wrong use of svcctl itself (unknown command, missing or bad option): exit code 2. */
export class UsageError extends Error {
  readonly help: string | undefined;
  constructor(message: string, help?: string) {
    super(message);
    this.name = "UsageError";
    this.help = help;
  }
}

interface OptionSpec {
  type: "string" | "boolean";
  /** May be given several times (`--origin A --origin B`). */
  multiple?: boolean;
  required?: boolean;
  /** Placeholder in the usage line: `--org ID`. */
  valueName?: string;
  /** The only values accepted. */
  choices?: readonly string[];
  description: string;
}

export type OptionValues = Record<string, string | boolean | string[] | undefined>;

export interface CliContext {
  consoleUrl: string;
  /** The console's client, made on first use. */
  console(): Client<typeof ConsoleService>;
  /**
   * A client for a service's own console service (`svc.<package>.v1.<Name>ConsoleService`), reached
   * through the same console address, which forwards it to the owning service.
   */
  serviceConsole<S extends DescService>(service: S): Client<S>;
}

export interface Command {
  name: string;
  summary: string;
  /** A paragraph under the usage line: what it prints, what to know. */
  details?: string;
  options: Record<string, OptionSpec>;
  /** Returns what svcctl prints as JSON on stdout. */
  run(values: OptionValues, ctx: CliContext): Promise<unknown>;
}

/** `svcctl <group> <command>`: one file per group in `commands/`. */
export interface CommandGroup {
  name: string;
  summary: string;
  commands: readonly Command[];
}

export function consoleContext(consoleUrl: string, operatorToken: string | undefined): CliContext {
  // The console refuses every call without it; sent only when there is one, so the refusal says what is missing.
  const withCredential: Interceptor = (next) => (request) => {
    if (operatorToken !== undefined) request.header.set("authorization", `Bearer ${operatorToken}`);
    return next(request);
  };
  // HTTP/1.1: a short-lived command should not keep an HTTP/2 session open after its one call.
  const transport = createConnectTransport({
    baseUrl: consoleUrl,
    httpVersion: "1.1",
    defaultTimeoutMs: 15_000,
    interceptors: [withCredential],
  });
  let client: Client<typeof ConsoleService> | undefined;
  return {
    consoleUrl,
    console: () => (client ??= createClient(ConsoleService, transport)),
    serviceConsole: (service) => createClient(service, transport),
  };
}

const optionText = (name: string, spec: OptionSpec): string => {
  const value = spec.type === "string" ? ` ${spec.choices ? spec.choices.join("|") : (spec.valueName ?? "VALUE")}` : "";
  return `--${name}${value}`;
};

export function commandUsage(group: CommandGroup, command: Command): string {
  const parts = Object.entries(command.options).map(([name, spec]) => {
    const text = spec.required ? optionText(name, spec) : `[${optionText(name, spec)}]`;
    return spec.multiple ? `${text}...` : text;
  });
  const rows: [string, string][] = [
    ...Object.entries(command.options).map(([name, spec]): [string, string] => [
      optionText(name, spec),
      spec.description + (spec.required ? " (required)" : spec.multiple ? " (repeatable)" : ""),
    ]),
    ["-h, --help", "show this help"],
  ];
  const width = Math.max(...rows.map(([left]) => left.length));
  return [
    `Usage: svcctl ${group.name} ${command.name} ${parts.join(" ")}`.trimEnd(),
    "",
    command.summary,
    ...(command.details ? ["", command.details] : []),
    "",
    "Options:",
    ...rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`),
    "",
  ].join("\n");
}

export function groupUsage(group: CommandGroup): string {
  const width = Math.max(...group.commands.map((c) => c.name.length));
  return [
    `Usage: svcctl ${group.name} <command> [options]`,
    "",
    group.summary,
    "",
    "Commands:",
    ...group.commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    `Run 'svcctl ${group.name} <command> --help' for a command's options.`,
    "",
  ].join("\n");
}

/** Parses a command's options strictly: unknown options, positionals, missing values and bad choices are usage errors. */
export function parseOptions(group: CommandGroup, command: Command, args: string[]): OptionValues {
  const help = commandUsage(group, command);
  let values: OptionValues;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: Object.fromEntries(
        Object.entries(command.options).map(([name, spec]) => [
          name,
          { type: spec.type, multiple: spec.multiple ?? false },
        ]),
      ),
    }) as { values: OptionValues });
  } catch (error) {
    throw new UsageError((error as Error).message, help);
  }
  for (const [name, spec] of Object.entries(command.options)) {
    const value = values[name];
    if (spec.required && (value === undefined || value === "")) throw new UsageError(`--${name} is required`, help);
    const given = value === undefined ? [] : Array.isArray(value) ? value : [value];
    for (const item of given) {
      if (spec.choices && typeof item === "string" && !spec.choices.includes(item))
        throw new UsageError(`--${name} must be one of ${spec.choices.join(", ")}, not ${JSON.stringify(item)}`, help);
    }
  }
  return values;
}

export const stringValue = (values: OptionValues, name: string): string | undefined => {
  const value = values[name];
  return typeof value === "string" ? value : undefined;
};

export const stringList = (values: OptionValues, name: string): string[] => {
  const value = values[name];
  return Array.isArray(value) ? value : typeof value === "string" ? [value] : [];
};

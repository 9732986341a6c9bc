import { type EnvironmentName, environmentProto } from "@svc/platform";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { type Gate, GateConsoleService, GateType } from "@svc/proto/gate/v1/gate_pb.js";
import { type CommandGroup, stringValue, UsageError } from "../command.ts";
import { environmentName, instant } from "./format.ts";

/** --env takes only the two names (its choices); without it, every environment. */
const environmentOf = (value: string | undefined): Environment =>
  value ? environmentProto(value as EnvironmentName) : Environment.UNSPECIFIED;

/** Statuses as svcctl accepts them: the new names, and the old ones during the alias window. */
const statusChoices = [
  "draft",
  "active",
  "archived",
  "pending",
  "pending_revisions",
  "approved",
  "denied",
  "cancelled",
];

const gateRow = (gate: Gate | undefined) =>
  gate && {
    gate_id: gate.gateId,
    organization_id: gate.organizationId,
    environment: environmentName(gate.environment),
    key: gate.key,
    type: gate.type === GateType.AGE ? "age" : "human",
    ...(gate.ageThreshold !== undefined ? { age_threshold: gate.ageThreshold } : {}),
    status: gate.status,
    // The console sends the old name only until the rename sunset (by its clock).
    ...(gate.statusLegacy ? { status_legacy: gate.statusLegacy } : {}),
    notarize_offer: gate.notarizeOffer,
    created_at: instant(gate.createdAt),
    updated_at: instant(gate.updatedAt),
  };

const org = { type: "string", required: true, valueName: "ID", description: "organization id" } as const;
const env = {
  type: "string",
  required: true,
  choices: ["development", "production"],
  description: "environment of the gate",
} as const;
const key = { type: "string", required: true, valueName: "KEY", description: "gate key (case-sensitive)" } as const;

export const gateCommands: CommandGroup = {
  name: "gate",
  summary: "Gates: Human Gates and Age Gates per organization and environment.",
  commands: [
    {
      name: "create",
      summary: "Creates a gate; prints it.",
      details:
        "The same key may exist once per environment. A new gate is a draft unless --status says otherwise; only an active gate accepts requests.",
      options: {
        org,
        env,
        key,
        type: { type: "string", required: true, choices: ["human", "age"], description: "Human Gate or Age Gate" },
        "age-threshold": {
          type: "string",
          valueName: "N",
          description: "age in whole years an Age Gate checks against (required for --type age)",
        },
        status: { type: "string", choices: statusChoices, description: "initial status (default draft)" },
        "notarize-offer": { type: "boolean", description: "offer securing an account at this gate" },
      },
      async run(values, ctx) {
        const thresholdText = stringValue(values, "age-threshold");
        const ageThreshold = thresholdText === undefined ? undefined : Number(thresholdText);
        if (ageThreshold !== undefined && !Number.isInteger(ageThreshold))
          throw new UsageError(`--age-threshold must be a whole number, not ${thresholdText}`);
        if (values.type === "age" && ageThreshold === undefined)
          throw new UsageError("--age-threshold is required for --type age");
        const response = await ctx.serviceConsole(GateConsoleService).createGate({
          organizationId: values.org as string,
          environment: environmentOf(stringValue(values, "env")),
          key: values.key as string,
          type: values.type === "age" ? GateType.AGE : GateType.HUMAN,
          ageThreshold,
          status: stringValue(values, "status") ?? "",
          notarizeOffer: values["notarize-offer"] === true,
        });
        return gateRow(response.gate);
      },
    },
    {
      name: "set-status",
      summary: "Sets a gate's status; prints the gate.",
      options: {
        org,
        env,
        key,
        status: {
          type: "string",
          required: true,
          choices: statusChoices,
          description: "new status (old names accepted)",
        },
      },
      async run(values, ctx) {
        const response = await ctx.serviceConsole(GateConsoleService).setGateStatus({
          organizationId: values.org as string,
          environment: environmentOf(stringValue(values, "env")),
          key: values.key as string,
          status: values.status as string,
        });
        return gateRow(response.gate);
      },
    },
    {
      name: "set-notarize-offer",
      summary: "Turns the offer of securing an account at a gate on or off; prints the gate.",
      details:
        "The console switch behind notarize: with it off, neither the notarize request field nor the widget's notarize " +
        "attribute can make a request secure an account. Requests created afterwards follow it; a request already " +
        "created keeps what it was offered.",
      options: {
        org,
        env,
        key,
        "notarize-offer": {
          type: "string",
          required: true,
          choices: ["on", "off"],
          description: "on offers securing an account at this gate, off stops offering it",
        },
      },
      async run(values, ctx) {
        const response = await ctx.serviceConsole(GateConsoleService).setNotarizeOffer({
          organizationId: values.org as string,
          environment: environmentOf(stringValue(values, "env")),
          key: values.key as string,
          notarizeOffer: values["notarize-offer"] === "on",
        });
        return gateRow(response.gate);
      },
    },
    {
      name: "list",
      summary: 'Lists an organization\'s gates; prints {"gates":[...]}.',
      options: {
        org,
        env: { type: "string", choices: ["development", "production"], description: "only this environment" },
        status: { type: "string", choices: statusChoices, description: "only this status (old names accepted)" },
      },
      async run(values, ctx) {
        const response = await ctx.serviceConsole(GateConsoleService).listGates({
          organizationId: values.org as string,
          environment: environmentOf(stringValue(values, "env")),
          status: stringValue(values, "status") ?? "",
        });
        return { gates: response.gates.map(gateRow) };
      },
    },
  ],
};

import { ok } from "../http/route.ts";
import { defineRoute } from "../services.ts";
import { gateTypeName } from "./create-verification-link.ts";
import { gateKeyField, gateRequired } from "./gate-key.ts";
import { widgetPublication } from "./widget-script.ts";

/**
 * `GET /sdk/partner-config`: what the widget needs to render a gate. Any status is returned (the
 * widget shows a draft or archived gate as unavailable); 400 when the environment has no gate with
 * this key, 403 when the key may not use it.
 */
export const partnerConfigRoute = defineRoute({
  operationId: "getPartnerConfig",
  method: "GET",
  path: "/sdk/partner-config",
  summary: "Read what the widget needs to render a gate.",
  auth: { accepts: ["site_key", "secret_key"] },
  input: {
    type: "object",
    properties: {
      gate: gateKeyField,
    },
    required: ["gate"],
  },
  refuseMissing: gateRequired,
  envelope: "nested",
  output: {
    type: "object",
    properties: {
      gate: { type: "string" },
      gate_type: { type: "string", enum: ["human", "age"] },
      age_threshold: { type: "integer" },
      status: { type: "string", enum: ["draft", "active", "archived"] },
      notarize_offered: { type: "boolean" },
      organization: { type: "object", properties: { id: { type: "string" } } },
      request_lifetime_seconds: { type: "integer" },
      widget: {
        type: "object",
        description:
          "The current <svc-verify> script: its versioned address (cached for ever) and Subresource Integrity hash, for <script src=url integrity=integrity crossorigin=anonymous>. Absent when this server has no built widget.",
        properties: { url: { type: "string", format: "uri" }, integrity: { type: "string" } },
      },
    },
  },
  async handle(input, { caller, credential, services }) {
    const widget = widgetPublication(services.widget, services.publicOrigin);
    const config = await services.gate.getPartnerConfig({
      caller,
      gate: input.gate,
      allowedGates: [...(credential?.allowedGates ?? [])],
    });
    return ok({
      gate: config.gate,
      gate_type: gateTypeName(config.gateType),
      ...(config.ageThreshold !== undefined ? { age_threshold: config.ageThreshold } : {}),
      status: config.status,
      notarize_offered: config.notarizeOffered,
      organization: { id: config.organizationId },
      request_lifetime_seconds: config.requestLifetimeSeconds,
      ...(widget && { widget }),
    });
  },
});

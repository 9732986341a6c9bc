import { cardDigest, Svc } from "@svc/sdk";
import { type AskPersonOutput, askPersonTool } from "@svc/sdk/ai";
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { svcctlJson } from "./agent-support.ts";
import { issuer, newPartner } from "./gate-support.ts";

/**
 * `@svc/sdk/ai`'s `askPersonTool` in the AI SDK's own tool loop: the `ai` package's mock language model calls the
 * tool, `generateText` runs it against the real mesh (a card to a bound sandbox human, who approves or denies),
 * and the model's next step receives the tool's result: the status, the verdict and the verified proof's claims.
 */

const card = {
  summary_title: "Pay €12.50 to Acme",
  category: "payments",
  summary_detail: { label: "Card", value: "•••• 4242" },
};
const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

/** A model that calls ask_person with the card first, then answers in text; it keeps the prompts it was given. */
function modelCallingAskPerson() {
  const prompts: unknown[] = [];
  const model = new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      prompts.push(prompt);
      return prompts.length === 1
        ? {
            content: [{ type: "tool-call", toolCallId: "call-1", toolName: "ask_person", input: JSON.stringify(card) }],
            finishReason: { unified: "tool-calls", raw: undefined },
            usage,
            warnings: [],
          }
        : {
            content: [{ type: "text", text: "Done." }],
            finishReason: { unified: "stop", raw: undefined },
            usage,
            warnings: [],
          };
    },
  });
  return { model, prompts };
}

describe("askPersonTool in generateText's tool loop", () => {
  let mesh: TestMesh;
  let agent: Svc;
  let svcctl: ReturnType<typeof svcctlJson>;

  /** A sandbox human bound to the agent the way a builder's test binds one: bind, claim, check-binding. */
  const boundHuman = async (behavior: "confirm" | "decline") => {
    const human = (await svcctl(["human", "create", "--env", "development", "--behavior", behavior]))
      .svc_user_id as string;
    const session = await agent.agents.bind();
    await svcctl(["human", "claim", "--human", human, "--code", session.link_code as string]);
    return (await agent.agents.checkBinding({ link_code: session.link_code as string })).opaque_id as string;
  };

  beforeAll(async () => {
    mesh = await startTestMesh("sdk-ai");
    svcctl = svcctlJson(mesh);
    const partner = await newPartner(mesh, "AI SDK partner");
    const registered = await svcctl([
      ...["agent", "register", "--org", partner.organizationId, "--env", "development", "--name", "Ai_Bot"],
      ...["--category", "payments"],
    ]);
    agent = new Svc({ apiKey: registered.agent_key as string, baseUrl: `${mesh.gatewayUrl}/v1`, issuer });
  });
  afterAll(async () => {
    await mesh?.stop();
  });

  it("an approval reaches the model with the verified proof's claims of exactly this card", async () => {
    const opaqueId = await boundHuman("confirm");
    const { model, prompts } = modelCallingAskPerson();
    const result = await generateText({
      model,
      tools: { ask_person: askPersonTool(agent, { opaqueId }) },
      prompt: "Pay Acme for order 7.",
      stopWhen: stepCountIs(3),
    });
    expect(result.text).toBe("Done.");
    expect(result.steps).toHaveLength(2);
    const output = result.steps[0]?.toolResults[0]?.output as AskPersonOutput;
    expect(output).toMatchObject({
      status: "approved",
      verdict: "approve",
      claims: { verdict: "approve", sub: opaqueId, amr: ["sandbox"] },
    });
    expect(output.claims?.jti).toBe(output.request_id);
    expect(output.claims?.card_digest).toBe(await cardDigest({ action: card }));
    expect(JSON.stringify(prompts[1])).toContain(`"status":"approved"`);
  });

  it("a denial reaches the model as status denied with the proof's claims", async () => {
    const opaqueId = await boundHuman("decline");
    const { model, prompts } = modelCallingAskPerson();
    const result = await generateText({
      model,
      tools: { ask_person: askPersonTool(agent, { opaqueId }) },
      prompt: "Pay Acme for order 7.",
      stopWhen: stepCountIs(3),
    });
    expect(result.steps[0]?.toolResults[0]?.output).toMatchObject({
      status: "denied",
      verdict: "denied",
      claims: { verdict: "denied", sub: opaqueId },
    });
    expect(JSON.stringify(prompts[1])).toContain(`"verdict":"denied"`);
  });

  it("describes its input to the model as a JSON schema that needs a title and a category", async () => {
    const described = askPersonTool(agent, { opaqueId: "unused" });
    const schema = await (described.inputSchema as { jsonSchema: unknown }).jsonSchema;
    expect(schema).toMatchObject({ type: "object", required: ["summary_title", "category"] });
    expect(described.description).toMatch(/approve/);
  });
});

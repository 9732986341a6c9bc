import { Code, ConnectError } from "@connectrpc/connect";
import { DomainRefusal, refusalTranslator } from "@svc/platform";
import { describe, expect, it } from "vitest";

type Kind = "invalid" | "not_found";
const translate = refusalTranslator<Kind>({ invalid: Code.InvalidArgument, not_found: Code.NotFound });
const failing = (error: unknown) => translate(async () => Promise.reject(error));

describe("refusal translator", () => {
  it("answers a refusal of the service's vocabulary with its Connect code and message", async () => {
    const error = await failing(new DomainRefusal<Kind>("not_found", "no such request")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectError);
    expect([(error as ConnectError).code, (error as ConnectError).rawMessage]).toEqual([
      Code.NotFound,
      "no such request",
    ]);
  });

  it("passes anything else through as a real failure, a refusal of another vocabulary included", async () => {
    const foreign = new DomainRefusal("conflict", "not one of ours");
    await expect(failing(foreign)).rejects.toBe(foreign);
    const failure = new Error("database gone");
    await expect(failing(failure)).rejects.toBe(failure);
  });

  it("returns the work's result when nothing is refused", async () => {
    expect(await translate(async () => 42)).toBe(42);
  });
});

import { describe, expect, it } from "vitest";
import { generateAgentKey, parseAgentKey } from "../src/agents/agent-key.ts";
import { generateLinkCode, linkCodeAlphabet } from "../src/binding/link-code.ts";

describe("agent key form", () => {
  it("issues svc_agent_<Name>__<secret> with 32 random bytes as base64url, and reads it back", () => {
    const { key, secret } = generateAgentKey("Travel_Bot-2");
    expect(key).toBe(`svc_agent_Travel_Bot-2__${secret}`);
    expect(Buffer.from(secret, "base64url")).toHaveLength(32);
    expect(parseAgentKey(key)).toEqual({ name: "Travel_Bot-2", secret });
    expect(generateAgentKey("Travel_Bot-2").secret).not.toBe(secret);
  });

  it("reads a key from its end, so names and secrets holding __ stay apart", () => {
    const secret = `__${"a".repeat(39)}_-`;
    expect(parseAgentKey(`svc_agent_my__bot___${secret}`)).toEqual({ name: "my__bot_", secret });
  });

  it.each([
    ["no prefix", `agent_bot__${"a".repeat(43)}`],
    ["name too short", `svc_agent_ab__${"a".repeat(43)}`],
    ["name too long", `svc_agent_${"n".repeat(41)}__${"a".repeat(43)}`],
    ["name with a dot", `svc_agent_my.bot__${"a".repeat(43)}`],
    ["secret too short", `svc_agent_bot__${"a".repeat(42)}`],
    ["secret with +", `svc_agent_bot__${"a".repeat(42)}+`],
    ["no separator", `svc_agent_bot_x${"a".repeat(43)}`],
    ["nothing after the prefix", "svc_agent_"],
  ])("refuses a key with %s", (_, key) => {
    expect(parseAgentKey(key)).toBeUndefined();
  });
});

describe("link codes", () => {
  it("are 8 characters without 0/O or 1/I/L", () => {
    expect(linkCodeAlphabet).not.toMatch(/[01OIL]/);
    const codes = Array.from({ length: 200 }, generateLinkCode);
    for (const code of codes) expect(code).toMatch(/^[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{8}$/);
    expect(new Set(codes).size).toBe(codes.length);
  });
});

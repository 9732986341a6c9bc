import { execFile } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect, test } from "vitest";
import type { DemoCredentials } from "../src/demo-provisioning.ts";
import { sdkWalkThrough } from "../src/walk-through.ts";

const demo: DemoCredentials = {
  organization_id: "org_demo",
  development_secret_key: "svc_dev_demo",
  development_site_key: "pk_test_demo",
  site_key_origin: "http://127.0.0.1:8090",
  human_gate: "demo-human",
  age_gate: "demo-age",
  agent_name: "Demo_Agent",
  agent_key: "svc_agent_Demo_Agent__secret",
  widget_site_key: "pk_test_widget",
};

/**
 * The banner's SDK lines are code a partner can keep: tsc (strict) compiles them against the built `@svc/sdk`,
 * from a file below the repository's node_modules, where the package resolves as it does for a partner.
 */
test("the banner's SDK block compiles against the SDK, with the demo key, gate and organization in it", async () => {
  const snippet = sdkWalkThrough({ baseUrl: "http://127.0.0.1:8080/v1", demo });
  for (const value of ["svc_dev_demo", '"demo-human"', '"org_demo"', '"http://127.0.0.1:8080/v1"'])
    expect(snippet).toContain(value);
  const dir = new URL("../../../node_modules/.cache/walk-through/", import.meta.url);
  mkdirSync(dir, { recursive: true });
  const file = fileURLToPath(new URL("banner-sdk.mts", dir));
  writeFileSync(file, `${snippet}\n`);
  const tsc = fileURLToPath(new URL("../../../node_modules/typescript/bin/tsc", import.meta.url));
  const flags = ["--noEmit", "--strict", "--module", "nodenext", "--target", "es2022", "--lib", "es2024,dom"];
  const output = await promisify(execFile)(process.execPath, [tsc, ...flags, "--skipLibCheck", file]).then(
    ({ stdout }) => stdout,
    (failed: { stdout: string }) => failed.stdout,
  );
  expect(output).toBe("");
}, 60_000);

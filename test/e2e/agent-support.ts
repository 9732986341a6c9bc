import { runSvcctl } from "../harness/svcctl.ts";
import type { TestMesh } from "../harness/test-mesh.ts";
import { type partnerApi, result } from "./gate-support.ts";

/** Runs svcctl against the mesh's console and reads its JSON; a failing command throws its stderr. */
export const svcctlJson =
  (mesh: TestMesh) =>
  async (args: string[]): Promise<Record<string, unknown>> => {
    const { code, stdout, stderr } = await runSvcctl(mesh, args);
    if (code !== 0) throw new Error(stderr);
    return JSON.parse(stdout);
  };

/**
 * A development agent registered with svcctl in a new organization, bound to a silent sandbox human (who
 * never answers, so the agent's cards stay queued until cancelled or expired) the way a builder's own tests
 * bind one: bind-session, `svcctl human claim`, check-binding.
 */
export async function agentBoundToSilentHuman(
  mesh: TestMesh,
  api: ReturnType<typeof partnerApi>,
  agent: { organization: string; name: string; categories: string[] },
) {
  const svcctl = svcctlJson(mesh);
  const { organizationId } = await mesh.console.createOrganization({ name: agent.organization });
  const registered = await svcctl([
    ...["agent", "register", "--org", organizationId, "--env", "development", "--name", agent.name],
    ...agent.categories.flatMap((category) => ["--category", category]),
  ]);
  const agentKey = registered.agent_key as string;
  const person = (await svcctl(["human", "create", "--env", "development", "--behavior", "silent"]))
    .svc_user_id as string;
  const code = result(await api.post("/agent/bind-session", {}, agentKey)).link_code;
  await svcctl(["human", "claim", "--human", person, "--code", code]);
  const opaqueId = result(await api.get("/agent/check-binding", { link_code: code }, agentKey)).opaque_id as string;
  return { organizationId, agentKey, agentId: registered.agent_id as string, person, opaqueId };
}

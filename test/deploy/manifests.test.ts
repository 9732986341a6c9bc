import { existsSync, readFileSync } from "node:fs";
import { meshLayout } from "@svc/local-mesh/mesh";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";

const base = new URL("../../deploy/k8s/base/", import.meta.url);
const root = new URL("../../", import.meta.url);
const documents = (file: string) => parseAllDocuments(readFileSync(new URL(file, base), "utf8")).map((d) => d.toJS());

describe("Kubernetes manifests", () => {
  const kustomization = documents("kustomization.yaml")[0];

  it.each(meshLayout.map((s) => [s.name, s] as const))(
    "%s has a hardened Deployment, a Service and a ServiceAccount",
    (name, service) => {
      expect(kustomization.resources).toContain(`${name}.yaml`);
      const docs = documents(`${name}.yaml`);
      const deployment = docs.find((d) => d.kind === "Deployment");
      expect(docs.find((d) => d.kind === "ServiceAccount")?.metadata.name).toBe(name);
      expect(docs.find((d) => d.kind === "Service")?.spec.selector).toEqual({ "app.kubernetes.io/name": name });

      const pod = deployment.spec.template.spec;
      const container = pod.containers[0];
      expect(pod.serviceAccountName).toBe(name);
      // Service links would set <SERVICE>_PORT=tcp://…, which each service reads as its own port setting.
      expect(pod.enableServiceLinks).toBe(false);
      expect(pod.securityContext.runAsNonRoot).toBe(true);
      expect(container.securityContext).toMatchObject({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ["ALL"] },
      });
      expect(container.resources.requests).toBeDefined();

      // The entry point the image runs must be the one the local mesh runs.
      expect(container.command).toEqual(["node", service.entry]);
      expect(existsSync(new URL(service.entry, root))).toBe(true);

      expect(container.readinessProbe.httpGet).toEqual({ path: "/readyz", port: service.port });
      expect(container.livenessProbe.httpGet).toEqual({ path: "/healthz", port: service.port });
      expect(container.ports.map((p: { containerPort: number }) => p.containerPort)).toContain(service.port);
    },
  );

  it("tells every service where the others are, on the ports they listen on", () => {
    const shared = documents("config.yaml")[0].data as Record<string, string>;
    for (const consumer of meshLayout) {
      for (const [key, value] of Object.entries(shared).filter(
        ([k]) => k.startsWith(`${consumer.envPrefix}_`) && k.endsWith("_URL"),
      )) {
        const provider = meshLayout.find((p) => key === `${consumer.envPrefix}_${p.envPrefix}_URL`);
        expect(provider, key).toBeDefined();
        expect(value).toBe(`http://${provider!.name}:${provider!.port}`);
      }
    }
  });

  it("lets through exactly the calls the mesh makes: each address a service is given, and nothing else internal", () => {
    const policies = documents("network-policy.yaml");
    const selects = (
      selector: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; values: string[] }[] },
      name: string,
    ) =>
      selector.matchLabels?.["app.kubernetes.io/name"] === name ||
      (selector.matchExpressions ?? []).some((e) => e.key === "app.kubernetes.io/name" && e.values.includes(name));
    const allowed = (from: string, to: string, port: number) =>
      policies.some(
        (p) =>
          selects(p.spec.podSelector, to) &&
          (p.spec.ingress ?? []).some(
            (rule: { from?: { podSelector?: object }[]; ports?: { port: number }[] }) =>
              (rule.ports ?? []).some((x) => x.port === port) &&
              (rule.from ?? []).some((f) => f.podSelector && selects(f.podSelector, from)),
          ),
      );
    expect(policies.find((p) => p.metadata.name === "default-deny-ingress")?.spec).toEqual({
      podSelector: {},
      policyTypes: ["Ingress"],
    });
    const shared = documents("config.yaml")[0].data as Record<string, string>;
    for (const consumer of meshLayout) {
      for (const provider of meshLayout) {
        const given = `${consumer.envPrefix}_${provider.envPrefix}_URL` in shared;
        if (consumer.name === provider.name) continue;
        expect(allowed(consumer.name, provider.name, provider.port), `${consumer.name} -> ${provider.name}`).toBe(
          given,
        );
      }
    }
  });
});

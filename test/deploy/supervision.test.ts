import { type Mesh, restartDelays, type ServiceName, startMesh } from "@svc/local-mesh/mesh";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, natsUrl, type TestDatabase, uniqueName } from "../harness/index.ts";

/** A line of the mesh's log as `npm start` prints it: `[service] {json}` from a process, bare JSON from the supervisor. */
const parseLine = (line: string) => {
  const [, from, json = line] = /^\[([a-z-]+)\] (.*)$/.exec(line) ?? [];
  return { from, json: JSON.parse(json) as Record<string, unknown> };
};

describe("the supervisor of npm start, on the real mesh", () => {
  let database: TestDatabase;
  let mesh: Mesh;
  const lines: string[] = [];
  const statuses: (readonly ServiceName[])[] = [];
  // The test decides when a planned restart runs, so nothing sleeps through a backoff.
  const planned: { restart: () => void; delayMs: number }[] = [];

  beforeAll(async () => {
    database = await createTestDatabase("supervision");
    const stream = uniqueName("supervision").toUpperCase();
    mesh = await startMesh({
      env: {
        SVC_DATABASE_URL: database.url,
        SVC_NATS_URL: natsUrl(),
        SVC_EVENT_STREAM: stream,
        SVC_EVENT_SUBJECT_PREFIX: `ev_${stream.toLowerCase()}`,
      },
      ports: "free",
      log: (line) => lines.push(line),
      supervise: {
        backoff: { firstMs: 250, maxMs: 1000, resetAfterMs: 30_000 },
        schedule: (restart, delayMs) => {
          planned.push({ restart, delayMs });
          return () => {};
        },
        onStatus: (down) => statuses.push(down),
      },
    });
  });
  afterAll(async () => {
    await mesh?.stop();
    await database?.drop();
  });

  const meshReadiness = async () => {
    const response = await fetch(`${mesh.gatewayUrl}/readyz?mesh=1`);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  it("answers /readyz?mesh=1 with 200 and every service up while all run", async () => {
    expect(await meshReadiness()).toEqual({
      status: 200,
      body: {
        status: "ready",
        service: "gateway",
        services: { signing: "up", gate: "up", account: "up", agentlink: "up", "webhook-dispatch": "up" },
      },
    });
  });

  it("restarts a service killed with kill -9, after logging the exit at error and reporting it down", async () => {
    const pid = mesh.pid("gate");
    if (pid === undefined) throw new Error("gate is not running");
    process.kill(pid, "SIGKILL");

    await expect.poll(() => planned.length).toBe(1);
    expect(planned[0]?.delayMs).toBe(250);
    const exitLines = lines.map((line) => parseLine(line).json).filter((entry) => entry.component === "supervisor");
    expect(exitLines).toEqual([
      expect.objectContaining({
        level: "error",
        service: "gate",
        msg: "exited unexpectedly; restarting",
        exit_code: null,
        signal: "SIGKILL",
        restart_in_ms: 250,
      }),
    ]);
    expect(statuses.at(-1)).toEqual(["gate"]);
    expect(mesh.down()).toEqual(["gate"]);

    // While it is down, the gateway's mesh readiness names it; plain /readyz (the kubelet's) stays ready.
    expect(await meshReadiness()).toEqual({
      status: 503,
      body: {
        status: "unavailable",
        service: "gateway",
        down: ["gate"],
        services: { signing: "up", gate: "down", account: "up", agentlink: "up", "webhook-dispatch": "up" },
      },
    });
    expect((await fetch(`${mesh.gatewayUrl}/readyz`)).status).toBe(200);

    planned[0]?.restart();
    await expect.poll(() => statuses.at(-1), { timeout: 30_000 }).toEqual([]);
    expect(mesh.pid("gate")).toBeGreaterThan(0);
    expect(mesh.pid("gate")).not.toBe(pid);
    expect(lines.map((line) => parseLine(line).json)).toContainEqual(
      expect.objectContaining({ level: "info", service: "gate", component: "supervisor", msg: "restarted" }),
    );
    expect((await meshReadiness()).status).toBe(200);
  });

  it("waits twice as long after the next exit of a service that did not stay up", async () => {
    const pid = mesh.pid("gate");
    if (pid === undefined) throw new Error("gate is not running");
    process.kill(pid, "SIGKILL");
    await expect.poll(() => planned.length).toBe(2);
    expect(planned[1]?.delayMs).toBe(500);
    planned[1]?.restart();
    await expect.poll(() => statuses.at(-1), { timeout: 30_000 }).toEqual([]);
  });

  it("leaves a service stopped on purpose down, with no restart planned", async () => {
    await mesh.kill("agentlink");
    expect(planned).toHaveLength(2);
    expect(mesh.down()).toEqual(["agentlink"]);
    await mesh.restart("agentlink");
    expect(mesh.down()).toEqual([]);
  });

  it("stops every process cleanly: one structured stopped line each, and no unstructured line", async () => {
    const before = lines.length;
    await mesh.stop();
    const after = lines.slice(before).map((line) => parseLine(line));
    const stopped = after.filter((entry) => entry.json.msg === "stopped").map((entry) => entry.from);
    expect(stopped.sort()).toEqual(["account", "agentlink", "gate", "gateway", "signing", "webhook-dispatch"]);
    expect(after.filter((entry) => entry.json.level === "error")).toEqual([]);
  });

  it("plans restarts doubling up to the ceiling, and from the start again after a long run", () => {
    const backoff = { firstMs: 250, maxMs: 10_000, resetAfterMs: 30_000 };
    expect(restartDelays(backoff, 250, 1000)).toEqual({ now: 250, next: 500 });
    expect(restartDelays(backoff, 8000, 1000)).toEqual({ now: 8000, next: 10_000 });
    expect(restartDelays(backoff, 10_000, 1000)).toEqual({ now: 10_000, next: 10_000 });
    expect(restartDelays(backoff, 10_000, 30_000)).toEqual({ now: 250, next: 500 });
  });
});

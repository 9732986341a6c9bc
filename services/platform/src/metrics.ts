import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Clock } from "./clock.ts";

export type { Gauge };

/**
 * The process's metrics, served in Prometheus' text format at `/metrics` on its internal port. Every metric is
 * made once, when its module loads, so that several services started in one process (tests) share it. Labels
 * name operations, methods, codes, causes and outcomes, never an id or anything a caller sent.
 */
const registry = new Registry();

export const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
  new Counter<L>({ name, help, labelNames, registers: [registry] });

export const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
  new Gauge<L>({ name, help, labelNames, registers: [registry] });

/** Seconds, in buckets from 5 ms to 10 s: the spread of an RPC or a public operation. */
export const durationHistogram = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
  new Histogram<L>({
    name,
    help,
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });

const refreshers = new Set<() => Promise<void>>();

/**
 * Sets gauges that are read at scrape time (the age of a queue, counts by status), before every scrape. A
 * refresher that fails leaves its gauges as they were. Returns what removes it (at stop).
 */
export function refreshBeforeScrape(refresh: () => Promise<void>): () => void {
  refreshers.add(refresh);
  return () => refreshers.delete(refresh);
}

export async function metricsText(): Promise<{ contentType: string; text: string }> {
  await Promise.allSettled([...refreshers].map((refresh) => refresh()));
  return { contentType: registry.contentType, text: await registry.metrics() };
}

/**
 * Keeps `byStatus` at the rows per status that `read` counts (`status`, `count`), refreshed at every scrape;
 * a status no row has reads 0. Returns what stops it.
 */
export const measureByStatus = (
  byStatus: Gauge<"status">,
  statuses: readonly string[],
  read: () => Promise<{ status: string; count: string | number }[]>,
): (() => void) =>
  refreshBeforeScrape(async () => {
    const rows = await read();
    for (const status of statuses) byStatus.set({ status }, Number(rows.find((r) => r.status === status)?.count ?? 0));
  });

/**
 * Keeps `age` at how long the oldest item `read` finds (a queue's oldest due row, say) has waited by `clock`, in
 * seconds, 0 when it finds none; refreshed at every scrape. Returns what stops it.
 */
export const measureOldestAge = (
  age: Gauge,
  clock: Clock,
  read: (now: Date) => Promise<Date | string | null | undefined>,
): (() => void) =>
  refreshBeforeScrape(async () => {
    const now = clock.now();
    const oldest = await read(now);
    age.set(oldest ? Math.max(0, now.getTime() - new Date(oldest).getTime()) / 1000 : 0);
  });

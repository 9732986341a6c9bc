/** CPU microseconds (user + system, every thread of this process) per operation of `work`, which runs `operations`. */
export async function cpuPerOp(work: () => Promise<void>, operations: number): Promise<number> {
  const before = process.cpuUsage();
  await work();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / operations;
}

/** The middle value (the upper one of an even count), as every benchmark reports its rounds. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

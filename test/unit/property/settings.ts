/**
 * Shared fast-check settings: a fixed seed so every run (and CI) tries the same cases and a failure is
 * reproduced by running again, and a bounded number of runs so the unit suite stays fast.
 */
import type { Parameters } from 'fast-check';

export const PROPERTY_SEED = 20261201;

export function runs(numRuns: number): Parameters<unknown> {
  return { seed: PROPERTY_SEED, numRuns };
}

/** Heap growth while `work` runs, in bytes, after a GC when one is exposed. */
export function heapGrowth(work: () => void): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const before = process.memoryUsage().heapUsed;
  work();
  gc?.();
  return process.memoryUsage().heapUsed - before;
}

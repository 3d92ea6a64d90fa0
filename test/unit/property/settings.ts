/**
 * Shared fast-check settings: a fixed seed so every run (and CI) tries the same cases and a failure is
 * reproduced by running again, and a bounded number of runs so the unit suite stays fast.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Parameters } from 'fast-check';

export const PROPERTY_SEED = 20261201;

export function runs(numRuns: number): Parameters<unknown> {
  return { seed: PROPERTY_SEED, numRuns };
}

/**
 * A full garbage collection. Node exposes one only under --expose-gc, which the test command does not
 * pass; the flag can be set at run time, and a new context then carries the `gc` function.
 */
function collector(): () => void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed !== undefined) return exposed;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** Heap growth while `work` runs, in bytes, each side of it measured after a full GC. */
export function heapGrowth(work: () => void): number {
  const gc = collector();
  gc();
  const before = process.memoryUsage().heapUsed;
  work();
  gc();
  return process.memoryUsage().heapUsed - before;
}

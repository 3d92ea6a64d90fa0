/**
 * Crash points for end-to-end tests, in the controller-runtime "interceptor" style: the real client is
 * wrapped, nothing is mocked. Active only when a PTAH_TEST_CRASH_* variable names an operation; a
 * production Deployment sets none of them.
 *
 *   PTAH_TEST_CRASH_BEFORE_JOB_CREATE=<observe|plan|apply>  die (SIGKILL) instead of creating that Job:
 *                                                           the claim is in status, the Job does not exist
 *   PTAH_TEST_CRASH_AFTER_JOB_CREATE=<observe|plan|apply>   die right after that Job was created
 *
 * `<operation>#<n>` names the n-th Job of that operation this process creates (`observe#2` is the proof
 * after a first Apply), so a test can stop the manager between an Apply and its proof.
 */
import type { BatchV1Api, V1Job } from '@kubernetes/client-node';
import { LABELS } from '../api/meta.ts';

export function withCrashPoints(
  batch: BatchV1Api,
  env: Readonly<Record<string, string | undefined>>,
): BatchV1Api {
  const before = env['PTAH_TEST_CRASH_BEFORE_JOB_CREATE'];
  const after = env['PTAH_TEST_CRASH_AFTER_JOB_CREATE'];
  if (!before && !after) return batch;
  const die = (): never => {
    process.kill(process.pid, 'SIGKILL');
    throw new Error('unreachable');
  };
  const counts = new Map<string, number>();
  const hits = (point: string | undefined, op: string, n: number): boolean => {
    if (point === undefined || point === '') return false;
    const [name, ordinal] = point.split('#');
    return name === op && (ordinal === undefined || Number(ordinal) === n);
  };
  return new Proxy(batch, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== 'createNamespacedJob') {
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      }
      return async (param: { body: V1Job }, ...rest: unknown[]) => {
        const op = param.body.metadata?.labels?.[LABELS.operation];
        const n = op === undefined ? 0 : (counts.get(op) ?? 0) + 1;
        if (op !== undefined) counts.set(op, n);
        if (op !== undefined && hits(before, op, n)) die();
        const created = await (value as (...a: unknown[]) => Promise<unknown>).call(target, param, ...rest);
        if (op !== undefined && hits(after, op, n)) die();
        return created;
      };
    },
  });
}

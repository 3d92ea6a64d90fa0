/**
 * Crash points for end-to-end tests, in the controller-runtime "interceptor" style: the real client is
 * wrapped, nothing is mocked. Active only when a PTAH_TEST_CRASH_* variable names an operation; a
 * production Deployment sets none of them.
 *
 *   PTAH_TEST_CRASH_BEFORE_JOB_CREATE=<observe|plan|apply>  die (SIGKILL) instead of creating that Job:
 *                                                           the claim is in status, the Job does not exist
 *   PTAH_TEST_CRASH_AFTER_JOB_CREATE=<observe|plan|apply>   die right after that Job was created
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
  return new Proxy(batch, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== 'createNamespacedJob') {
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      }
      return async (param: { body: V1Job }, ...rest: unknown[]) => {
        const op = param.body.metadata?.labels?.[LABELS.operation];
        if (op !== undefined && op === before) die();
        const created = await (value as (...a: unknown[]) => Promise<unknown>).call(target, param, ...rest);
        if (op !== undefined && op === after) die();
        return created;
      };
    },
  });
}

/**
 * Crash points for end-to-end tests, in the controller-runtime "interceptor" style: the real client is
 * wrapped, nothing is mocked. Active only when a PTAH_TEST_CRASH_* variable names an operation; a
 * production Deployment sets none of them.
 *
 *   PTAH_TEST_CRASH_BEFORE_JOB_CREATE=<observe|plan|apply>  die (SIGKILL) instead of creating that Job:
 *                                                           the claim is in status, the Job does not exist
 *   PTAH_TEST_CRASH_AFTER_JOB_CREATE=<observe|plan|apply>   die right after that Job was created
 *
 * `<operation>[#<n>][@<schema>]` narrows it to the n-th Job of that operation this process creates for one
 * resource (`observe#2@orders` is the proof after orders' first Apply), and to one resource, so a test can
 * stop the manager between an Apply and its proof while other resources carry on.
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
  const hits = (point: string | undefined, op: string, schema: string, n: number): boolean => {
    const m = /^([a-z]+)(?:#(\d+))?(?:@(.+))?$/.exec(point ?? '');
    if (m === null) return false;
    const [, name, ordinal, only] = m;
    return (
      name === op &&
      (ordinal === undefined || Number(ordinal) === n) &&
      (only === undefined || only === schema)
    );
  };
  return new Proxy(batch, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== 'createNamespacedJob') {
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      }
      return async (param: { body: V1Job }, ...rest: unknown[]) => {
        const op = param.body.metadata?.labels?.[LABELS.operation];
        const labels = param.body.metadata?.labels;
        const schema = labels?.[LABELS.schema] ?? labels?.[LABELS.migration] ?? '';
        const key = `${schema}/${op}`;
        const n = (counts.get(key) ?? 0) + 1;
        counts.set(key, n);
        if (op !== undefined && hits(before, op, schema, n)) die();
        const created = await (value as (...a: unknown[]) => Promise<unknown>).call(target, param, ...rest);
        if (op !== undefined && hits(after, op, schema, n)) die();
        return created;
      };
    },
  });
}

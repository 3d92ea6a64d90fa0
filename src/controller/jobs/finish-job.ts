/**
 * A claim is over: its finished Job gets the cleanup TTL (the only field the manager adds to an existing
 * Job), a Job still running is deleted. `jobUID`, when the claim recorded one, names the only Job this may
 * touch: a Job recreated under the name by someone else is left alone.
 */
import { PatchStrategy, setHeaderOptions, type BatchV1Api } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { isConflict, orUndefined, readJob } from '../runtime/kube.ts';
import { observeJob } from './harvest.ts';

export const FINISHED_JOB_TTL_SECONDS = 300;

export async function finishJob(
  batch: BatchV1Api,
  namespace: string,
  action: { readonly jobName: string; readonly jobUID?: string },
  log: Logger,
): Promise<void> {
  const job = await readJob(batch, namespace, action.jobName);
  if (job === undefined) return;
  if (action.jobUID !== undefined && job.metadata?.uid !== action.jobUID) return;
  if (observeJob(job).state === 'finished') {
    if (job.spec?.ttlSecondsAfterFinished !== undefined) return;
    await batch
      .patchNamespacedJob(
        {
          namespace,
          name: action.jobName,
          body: { spec: { ttlSecondsAfterFinished: FINISHED_JOB_TTL_SECONDS } },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      )
      .catch((error: unknown) =>
        log.warn({ job: action.jobName, code: (error as { code?: number }).code }, 'job cleanup ttl not set'),
      );
    return;
  }
  await orUndefined(
    batch.deleteNamespacedJob({
      namespace,
      name: action.jobName,
      propagationPolicy: 'Background',
      // Only the object just read: a Job recreated under the name in between stays.
      ...(job.metadata?.uid !== undefined ? { body: { preconditions: { uid: job.metadata.uid } } } : {}),
    }),
  ).catch((error: unknown) => {
    if (!isConflict(error)) throw error;
  });
}

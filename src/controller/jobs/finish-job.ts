/**
 * A claim is over: its finished Job gets the cleanup TTL (the only field the manager adds to an existing
 * Job), a Job still running is deleted. `jobUID`, when the claim recorded one, names the only Job this may
 * touch: a Job recreated under the name by someone else is left alone. So is a Job that is not the claimed
 * operation of this resource — another controller owner, or another operation id in its envelope — which is
 * how a successor holds a Job its predecessor left to the claim before it adds anything to it.
 */
import { PatchStrategy, setHeaderOptions, type BatchV1Api, type V1Job } from '@kubernetes/client-node';
import { JOB_ANNOTATIONS } from '../../api/job-envelope.ts';
import type { FinishJobAction } from './claim-job.ts';
import type { Logger } from 'pino';
import { isConflict, orUndefined, readJob } from '../runtime/kube.ts';
import { observeJob } from './harvest.ts';

export const FINISHED_JOB_TTL_SECONDS = 300;

/** `ownerUID`: the resource whose claim this is, which must be the Job's controller owner. */
export async function finishJob(
  batch: BatchV1Api,
  namespace: string,
  action: FinishJobAction,
  ownerUID: string,
  log: Logger,
): Promise<void> {
  const job = await readJob(batch, namespace, action.jobName);
  if (job === undefined) return;
  if (action.jobUID !== undefined && job.metadata?.uid !== action.jobUID) return;
  const foreign = foreignJob(job, ownerUID, action.operationId);
  if (foreign !== undefined) {
    log.warn(
      { job: action.jobName, foreign },
      'job left alone: it is not the claimed operation of this resource',
    );
    return;
  }
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

function foreignJob(job: V1Job, ownerUID: string, operationId: string): string | undefined {
  const owner = (job.metadata?.ownerReferences ?? []).find((o) => o.controller === true);
  if (owner?.uid !== ownerUID) return `controller owner ${owner?.uid ?? 'none'}`;
  const operation = job.metadata?.annotations?.[JOB_ANNOTATIONS.operationId];
  if (operation !== operationId) return `operation ${operation ?? 'none'}`;
  return undefined;
}

/**
 * A claim is over: its finished Job gets the cleanup TTL (the only field the manager adds to an existing
 * Job), a Job still running is deleted. `jobUID`, when the claim recorded one, names the only Job this may
 * touch: a Job recreated under the name by someone else is left alone. So is a Job that is not the claimed
 * operation of this resource — another controller owner, or another operation id in its envelope — which is
 * how a successor holds a Job its predecessor left to the claim before it adds anything to it.
 */
import { PatchStrategy, setHeaderOptions, type BatchV1Api, type V1Job } from '@kubernetes/client-node';
import { JOB_ANNOTATIONS } from '../../api/job-envelope.ts';
import type { Logger } from 'pino';
import { isConflict, orUndefined, readJob } from '../runtime/kube.ts';
import { observeJob } from './harvest.ts';

export const FINISHED_JOB_TTL_SECONDS = 300;

export async function finishJob(
  batch: BatchV1Api,
  namespace: string,
  action: { readonly jobName: string; readonly jobUID?: string },
  log: Logger,
  claimed: ClaimedOperation,
): Promise<void> {
  const job = await readJob(batch, namespace, action.jobName);
  if (job === undefined) return;
  if (action.jobUID !== undefined && job.metadata?.uid !== action.jobUID) return;
  const foreign = foreignJob(job, claimed);
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

/** Whose operation a Job must be for a claim to finish it: the resource, and the claim's operation id. */
export interface ClaimedOperation {
  readonly ownerUID: string;
  /** Absent when the pass no longer holds the claim the Job was made for (nothing to compare). */
  readonly operationId?: string;
}

function foreignJob(job: V1Job, claimed: ClaimedOperation): string | undefined {
  const owner = (job.metadata?.ownerReferences ?? []).find((o) => o.controller === true);
  if (owner?.uid !== claimed.ownerUID) return `controller owner ${owner?.uid ?? 'none'}`;
  const operation = job.metadata?.annotations?.[JOB_ANNOTATIONS.operationId];
  if (claimed.operationId !== undefined && operation !== claimed.operationId)
    return `operation ${operation ?? 'none'}`;
  return undefined;
}

/** The operation a finishJob action is about: the pass's claim when it names that Job. */
export function claimedOperation(
  ownerUID: string,
  claim: { readonly jobName: string; readonly operationId: string } | undefined,
  action: { readonly jobName: string },
): ClaimedOperation {
  return claim?.jobName === action.jobName ? { ownerUID, operationId: claim.operationId } : { ownerUID };
}

/**
 * What a pass of either family reads about the Job its claim names: the Job, whether the realm hold the
 * claim recorded is still the resource's own, whether the Job's result is read (JobAdoption.resultGate),
 * and whether its running Pod is stuck on something the node cannot configure.
 */
import type { BatchV1Api, CoreV1Api } from '@kubernetes/client-node';
import type { OperationClaim } from '../claims/claim.ts';
import type { ExecutionBinding } from '../../api/ptah-schema.ts';
import { realmHolderIdentity, type RealmLeases } from '../realm/realm-lease.ts';
import { readJob } from '../runtime/kube.ts';
import type { JobOwner } from './expected-job.ts';
import { isClaimedJob } from './claim-job.ts';
import { blockedJob, observeJob, type Harvest, type JobObservation } from './harvest.ts';
import type { GatedClaim, JobAdoption, ResultGate } from './job-adoption.ts';

export interface ClaimedJobRead {
  readonly result: ResultGate;
  /**
   * A running Pod the node cannot configure (its Secret or key is missing), which fails now rather than at
   * the Job's deadline.
   */
  readonly blocked?: Harvest;
  /** What both families' decide reads of it, as its input spells them. */
  readonly decideInput: {
    readonly job: JobObservation;
    /** The hold the claim recorded changed hands (or ended) since. */
    readonly leaseContinuityLost?: true;
    readonly unconfirmedJob?: string;
  };
}

export async function readClaimedJob(
  deps: {
    readonly core: CoreV1Api;
    readonly batch: BatchV1Api;
    readonly leases: RealmLeases;
    readonly adoption: JobAdoption;
  },
  owner: JobOwner,
  claim: GatedClaim & Pick<OperationClaim, 'type' | 'jobName' | 'operationId' | 'jobUID'>,
  /** The hold this claim must still own: the realm's coordination digest and the epoch it recorded, if any. */
  hold: { readonly coordination: string; readonly epoch: string | undefined },
  bindings: { readonly recorded: ExecutionBinding | undefined; readonly current: ExecutionBinding },
): Promise<ClaimedJobRead> {
  const job = await readJob(deps.batch, owner.namespace, claim.jobName);
  const observed = observeJob(job);
  let leaseContinuityLost: true | undefined;
  if (hold.epoch !== undefined) {
    const held = await deps.leases.current(hold.coordination);
    if (held?.holder !== realmHolderIdentity(owner.uid) || held.epoch !== hold.epoch)
      leaseContinuityLost = true;
  }
  const result = await deps.adoption.resultGate(owner, claim, job, observed, {
    leaseContinuityLost,
    ...bindings,
  });
  const blocked =
    observed.state === 'running' && leaseContinuityLost === undefined && isClaimedJob(claim, observed)
      ? await blockedJob(deps.core, owner.namespace, claim, observed.uid)
      : undefined;
  return {
    result,
    ...(blocked !== undefined ? { blocked } : {}),
    decideInput: {
      job: observed,
      ...(leaseContinuityLost ? { leaseContinuityLost } : {}),
      ...(!result.read && result.unconfirmedJob !== undefined
        ? { unconfirmedJob: result.unconfirmedJob }
        : {}),
    },
  };
}

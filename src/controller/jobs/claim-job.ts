/**
 * What both families' decisions say about the Job a claim names, kept free of I/O so the pure decisions need
 * none of the modules that read, build or patch Jobs: whether an observed Job is the claimed one, the action
 * that ends it (performed by finish-job.ts), and the Warning for an Apply Job this release cannot adopt
 * (job-adoption.ts).
 */
import type { JobObservation } from './harvest.ts';

/**
 * Whether the Job found under the claimed name is the object the claim recorded. Until a pass has seen the
 * Job there is no UID to compare, and the Job bearing the name is the one this operation created.
 */
export function isClaimedJob(claim: { readonly jobUID?: string | undefined }, job: JobObservation): boolean {
  if (job.state === 'absent') return false;
  return claim.jobUID === undefined || claim.jobUID === job.uid;
}

/** The decision's action that ends a claim's Job, in both families. */
export interface FinishJobAction {
  readonly kind: 'finishJob';
  readonly jobName: string;
  readonly jobUID?: string;
  /** The claim's operation id, which the Job's envelope must carry. */
  readonly operationId: string;
}

export function finishJobAction(claim: {
  readonly jobName: string;
  readonly jobUID?: string | undefined;
  readonly operationId: string;
}): FinishJobAction {
  return {
    kind: 'finishJob',
    jobName: claim.jobName,
    ...(claim.jobUID !== undefined ? { jobUID: claim.jobUID } : {}),
    operationId: claim.operationId,
  };
}

export function unconfirmedMessage(jobName: string, differences: string): string {
  return `apply ${jobName} was dispatched by another manager process and this release does not build the same Job from its claim (${differences}): its result is not read, and a fresh read of the database decides`;
}

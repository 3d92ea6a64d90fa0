/**
 * Claims: the record of an operation written to status before its Job exists. Everything in it derives
 * deterministically from the resource and the operation's inputs, so a restarted manager re-derives the
 * same operation id and Job name, finds the claim it wrote, and never creates a second Job for it.
 */
import { canonicalDigest, type Sha256Digest } from '../../api/digest.ts';
import { hexOf } from '../../api/fingerprint.ts';
import type { Claim, ExecutionBinding, OperationType } from '../../api/ptah-schema.ts';

export const OPERATION_CONTRACT_VERSION = 1;
export const MAX_JOB_NAME_LENGTH = 63;

/**
 * What an operation is decided from. A change to any of these is a different operation: the claim for the
 * old inputs is not resumed.
 */
export interface OperationInputs {
  readonly contentDigest: Sha256Digest;
  readonly snapshotName?: string;
  readonly coordinationDigest: Sha256Digest;
  readonly policyFingerprint: Sha256Digest;
  readonly executionBinding: ExecutionBinding;
  readonly activeDeadlineSeconds: number;
  /** Apply only: the plan executed and the approval consumed. */
  readonly planRef?: { readonly name: string; readonly uid: string };
  readonly planFingerprint?: Sha256Digest;
  readonly approvalRef?: { readonly name: string; readonly uid: string };
}

export function inputsFingerprint(type: OperationType, inputs: OperationInputs): Sha256Digest {
  return canonicalDigest({
    contractVersion: OPERATION_CONTRACT_VERSION,
    operation: type,
    contentDigest: inputs.contentDigest,
    snapshotName: inputs.snapshotName,
    coordinationDigest: inputs.coordinationDigest,
    policyFingerprint: inputs.policyFingerprint,
    executionBinding: { ...inputs.executionBinding },
    activeDeadlineSeconds: inputs.activeDeadlineSeconds,
    planRef: inputs.planRef === undefined ? undefined : { ...inputs.planRef },
    planFingerprint: inputs.planFingerprint,
    approvalRef: inputs.approvalRef === undefined ? undefined : { ...inputs.approvalRef },
  });
}

export interface OperationIdentity {
  readonly resourceUID: string;
  readonly generation: number;
  readonly type: OperationType;
  readonly inputsFingerprint: Sha256Digest;
  /** 1 for the first try; a retry after a failure is a new operation with the next attempt. */
  readonly attempt: number;
}

export function operationId(id: OperationIdentity): Sha256Digest {
  if (!Number.isSafeInteger(id.attempt) || id.attempt < 1) throw new RangeError('attempt starts at 1');
  return canonicalDigest({
    contractVersion: OPERATION_CONTRACT_VERSION,
    resourceUID: id.resourceUID,
    generation: id.generation,
    operation: id.type,
    inputsFingerprint: id.inputsFingerprint,
    attempt: id.attempt,
  });
}

/**
 * `ptah-<operation>-<resource>-<16 hex of the operation id>`: a DNS-1123 label of at most 63 characters.
 * The resource name is shortened to fit; the id keeps the name unique.
 */
export function jobName(type: OperationType, resourceName: string, id: Sha256Digest): string {
  const prefix = `ptah-${type.toLowerCase()}-`;
  const suffix = hexOf(id).slice(0, 16);
  const room = MAX_JOB_NAME_LENGTH - prefix.length - suffix.length - 1;
  const name = resourceName
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .slice(0, room)
    .replace(/^-+|-+$/g, '');
  return name === '' ? `${prefix}${suffix}` : `${prefix}${name}-${suffix}`;
}

export interface ClaimRequest extends OperationIdentity {
  readonly resourceName: string;
  readonly inputs: OperationInputs;
  readonly leaseDurationSeconds?: number;
}

/** The claim to persist for an operation, with nothing dispatched yet. */
export function buildClaim(request: ClaimRequest, now: Date): Claim {
  const id = operationId(request);
  const claim: Claim = {
    type: request.type,
    operationId: id,
    inputsFingerprint: request.inputsFingerprint,
    jobName: jobName(request.type, request.resourceName, id),
    attempt: request.attempt,
    generation: request.generation,
    startedAt: now.toISOString(),
    contentDigest: request.inputs.contentDigest,
    ...(request.inputs.snapshotName === undefined ? {} : { snapshotName: request.inputs.snapshotName }),
    ...(request.inputs.planRef === undefined ? {} : { planRef: request.inputs.planRef }),
    ...(request.inputs.approvalRef === undefined ? {} : { approvalRef: request.inputs.approvalRef }),
    ...(request.leaseDurationSeconds === undefined
      ? {}
      : { leaseDurationSeconds: request.leaseDurationSeconds }),
  };
  return claim;
}

/**
 * Whether a stored claim is the operation the manager would claim now. A match is resumed as it stands
 * (its Job found by name, never created twice); a mismatch means the inputs moved under it.
 */
export function claimMatches(claim: Claim, request: ClaimRequest): boolean {
  const id = operationId(request);
  return (
    claim.type === request.type &&
    claim.operationId === id &&
    claim.inputsFingerprint === request.inputsFingerprint &&
    claim.jobName === jobName(request.type, request.resourceName, id)
  );
}

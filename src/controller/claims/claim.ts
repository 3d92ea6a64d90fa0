/**
 * Claims: the record of an operation written to status before its Job exists.
 *
 * The inputs fingerprint binds everything the operation was decided from. The operation id folds the
 * resource, its generation, the operation, that fingerprint, the attempt and the instant the claim was
 * written: a periodic refresh with identical inputs is a new operation with a new Job name, because a
 * finished Job lingers for its TTL and reusing its name would harvest the old Job's result. The id is
 * therefore never re-derived after the fact: the claim (with its Job name) is durable in status before the
 * Job is created, and a restarted manager reads the name from the claim and finds or creates that one Job.
 */
import { canonicalDigest, type Sha256Digest } from '../../api/digest.ts';
import { hexOf } from '../../api/fingerprint.ts';
import type { MigrationOperationType } from '../../api/ptah-migration.ts';
import type { Claim, ExecutionBinding, OperationType } from '../../api/ptah-schema.ts';

/** Both families claim through this one module; only their operation lists and Job name prefixes differ. */
export type ResourceFamily = 'schema' | 'migration';
export type AnyOperationType = OperationType | MigrationOperationType;

/** A claim of either family: the shape both share, with the family's own operation type. */
export type OperationClaim<T extends AnyOperationType = AnyOperationType> = Omit<Claim, 'type'> & {
  readonly type: T;
};

const JOB_NAME_PREFIX: Readonly<Record<ResourceFamily, string>> = { schema: 'ptah-', migration: 'ptah-m-' };

/** 2: the execution binding epoch is bound beside the releases. */
export const OPERATION_CONTRACT_VERSION = 2;
export const MAX_JOB_NAME_LENGTH = 63;

interface ObjectRef {
  readonly name: string;
  readonly uid: string;
}

/**
 * What an operation is decided from. A change to any of these is a different operation; digests are the
 * `sha256:<hex>` strings status stores.
 */
export interface OperationInputs {
  /** The source content the operation is bound to; a Resolve has none yet. */
  readonly contentDigest?: string;
  /** An OCI source: the reference read (requested for Resolve, digest-pinned after). */
  readonly artifactReference?: string;
  /** An OCI source: the verification policy a Verify evaluates, or the one the read's artifact satisfied. */
  readonly verificationPolicy?: { readonly name: string; readonly uid: string; readonly digest: string };
  /** The immutable snapshot the Job mounts. */
  readonly snapshotName?: string;
  /** The source ConfigMap read: another ConfigMap of the same name is another source. */
  readonly configMapUID?: string;
  readonly coordinationDigest: string;
  readonly policyFingerprint: string;
  readonly executionBinding: ExecutionBinding;
  readonly activeDeadlineSeconds: number;
  /** The plan an Apply executes, or the plan whose Apply a proof Observe/Plan verifies. */
  readonly planRef?: ObjectRef;
  readonly planFingerprint?: string;
  /** The approval an Apply consumes (carried on to the proof that follows it). */
  readonly approvalRef?: ObjectRef;
}

export function inputsFingerprint(
  type: AnyOperationType,
  inputs: OperationInputs,
  family: ResourceFamily = 'schema',
): Sha256Digest {
  // Members are listed one by one so an input added to the interface without being bound here is a
  // visible omission, and so nothing outside the interface (a wider object passed in) is bound by accident.
  return canonicalDigest({
    contractVersion: OPERATION_CONTRACT_VERSION,
    // A schema's fingerprints predate the second family and stay as they were.
    ...(family === 'schema' ? {} : { family }),
    operation: type,
    contentDigest: inputs.contentDigest,
    snapshotName: inputs.snapshotName,
    configMapUID: inputs.configMapUID,
    // Absent for a ConfigMap source, so its fingerprints stay what they were.
    artifactReference: inputs.artifactReference,
    verificationPolicy:
      inputs.verificationPolicy === undefined
        ? undefined
        : {
            name: inputs.verificationPolicy.name,
            uid: inputs.verificationPolicy.uid,
            digest: inputs.verificationPolicy.digest,
          },
    coordinationDigest: inputs.coordinationDigest,
    policyFingerprint: inputs.policyFingerprint,
    executionBinding: {
      epoch: inputs.executionBinding.epoch,
      managerImage: inputs.executionBinding.managerImage,
      managerRevision: inputs.executionBinding.managerRevision,
      controllerStateVersion: inputs.executionBinding.controllerStateVersion,
      ptahVersion: inputs.executionBinding.ptahVersion,
      runnerImage: inputs.executionBinding.runnerImage,
      runnerProtocolVersion: inputs.executionBinding.runnerProtocolVersion,
    },
    activeDeadlineSeconds: inputs.activeDeadlineSeconds,
    planRef:
      inputs.planRef === undefined ? undefined : { name: inputs.planRef.name, uid: inputs.planRef.uid },
    planFingerprint: inputs.planFingerprint,
    approvalRef:
      inputs.approvalRef === undefined
        ? undefined
        : { name: inputs.approvalRef.name, uid: inputs.approvalRef.uid },
  });
}

export interface OperationIdentity {
  readonly resourceUID: string;
  readonly generation: number;
  readonly type: AnyOperationType;
  readonly inputsFingerprint: string;
  /** 1 for the first try; a retry after a failure is a new operation with the next attempt. */
  readonly attempt: number;
  /** When the claim is written (ISO 8601): a refresh with unchanged inputs is still a new operation. */
  readonly startedAt: string;
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
    startedAt: id.startedAt,
  });
}

/**
 * `ptah-<operation>-<resource>-<16 hex of the operation id>` (a migration's `ptah-m-<operation>-…`): a
 * DNS-1123 label of at most 63 characters, since Job names become Pod labels. The resource name is
 * shortened to fit; the id keeps the name unique.
 */
export function jobName(
  type: AnyOperationType,
  resourceName: string,
  id: Sha256Digest,
  family: ResourceFamily = 'schema',
): string {
  const prefix = `${JOB_NAME_PREFIX[family]}${type.toLowerCase()}-`;
  const suffix = hexOf(id).slice(0, 16);
  const room = MAX_JOB_NAME_LENGTH - prefix.length - suffix.length - 1;
  const name = resourceName
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .slice(0, room)
    .replace(/^-+|-+$/g, '');
  return name === '' ? `${prefix}${suffix}` : `${prefix}${name}-${suffix}`;
}

export interface ClaimRequest<T extends AnyOperationType = OperationType> {
  /** Absent: a schema. */
  readonly family?: ResourceFamily;
  readonly resourceUID: string;
  readonly resourceName: string;
  readonly generation: number;
  readonly type: T;
  readonly inputs: OperationInputs;
  /** 1 for the first try. */
  readonly attempt: number;
  readonly leaseDurationSeconds?: number;
}

/** The claim to persist for an operation decided at `now`, with nothing dispatched yet. */
export function buildClaim<T extends AnyOperationType = OperationType>(
  request: ClaimRequest<T>,
  now: Date,
): OperationClaim<T> {
  const family = request.family ?? 'schema';
  const fingerprint = inputsFingerprint(request.type, request.inputs, family);
  const startedAt = now.toISOString();
  const id = operationId({ ...request, inputsFingerprint: fingerprint, startedAt });
  const { inputs } = request;
  return {
    type: request.type,
    operationId: id,
    inputsFingerprint: fingerprint,
    jobName: jobName(request.type, request.resourceName, id, family),
    attempt: request.attempt,
    generation: request.generation,
    startedAt,
    ...(inputs.contentDigest === undefined ? {} : { contentDigest: inputs.contentDigest }),
    ...(inputs.snapshotName === undefined ? {} : { snapshotName: inputs.snapshotName }),
    ...(inputs.artifactReference === undefined ? {} : { artifactReference: inputs.artifactReference }),
    ...(inputs.verificationPolicy === undefined
      ? {}
      : {
          verificationPolicy: {
            name: inputs.verificationPolicy.name,
            uid: inputs.verificationPolicy.uid,
            digest: inputs.verificationPolicy.digest,
          },
        }),
    ...(inputs.planRef === undefined
      ? {}
      : { planRef: { name: inputs.planRef.name, uid: inputs.planRef.uid } }),
    ...(inputs.approvalRef === undefined
      ? {}
      : { approvalRef: { name: inputs.approvalRef.name, uid: inputs.approvalRef.uid } }),
    executionEpoch: inputs.executionBinding.epoch,
    ...(request.leaseDurationSeconds === undefined
      ? {}
      : { leaseDurationSeconds: request.leaseDurationSeconds }),
  };
}

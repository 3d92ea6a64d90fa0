/**
 * The execution binding a resource's operations and plans run under, shared by both families: the releases
 * the manager runs (its image, revision and controller-state version, the engine and runner it dispatches)
 * and the epoch that names one uninterrupted span of exactly those releases.
 *
 * The epoch is random, not derived from the releases: an upgrade and a rollback to earlier values are two
 * changes, and each retires what the epoch before it authorised. A plan computed under release A, superseded
 * under release B, must not become applicable again when A returns.
 */
import { randomBytes } from 'node:crypto';
import { BOUND_RELEASE_FIELDS, type ExecutionBinding } from '../api/ptah-schema.ts';
import { RUNNER_PROTOCOL_VERSION } from '../protocol/result.ts';
import type { ManagerIdentity } from './jobs/operation-job.ts';
import { fenceRecordedVersion } from './stored-state-fence.ts';

export type BoundReleases = Omit<ExecutionBinding, 'epoch'>;

export function newExecutionEpoch(): string {
  return `v1-${randomBytes(16).toString('hex')}`;
}

/** The releases this manager runs now. */
export function boundReleases(manager: ManagerIdentity): BoundReleases {
  return {
    managerImage: manager.managerImage,
    managerRevision: manager.managerRevision,
    controllerStateVersion: manager.controllerStateVersion,
    ptahVersion: manager.ptahVersion,
    runnerImage: manager.runnerImage,
    runnerProtocolVersion: RUNNER_PROTOCOL_VERSION,
  };
}

/** The bound releases that differ between what the resource recorded and what runs now. */
function changedReleases(recorded: BoundReleases, live: BoundReleases): (keyof BoundReleases)[] {
  return (Object.keys(BOUND_RELEASE_FIELDS) as (keyof BoundReleases)[]).filter(
    (k) => recorded[k] !== live[k],
  );
}

/**
 * The binding a resource is under now: the recorded epoch while every bound release is the one it recorded,
 * otherwise a new epoch (the status write that records it is what retires the old one). Throws
 * `StoredStateNewer` when a newer controller-state version recorded it: the pass then writes nothing.
 */
export function currentExecutionBinding(
  recorded: ExecutionBinding | undefined,
  manager: ManagerIdentity,
  mint: () => string = newExecutionEpoch,
): ExecutionBinding {
  fenceRecordedVersion(recorded?.controllerStateVersion, manager.controllerStateVersion);
  const live = boundReleases(manager);
  if (recorded !== undefined && changedReleases(recorded, live).length === 0)
    return { ...live, epoch: recorded.epoch };
  return { ...live, epoch: mint() };
}

/**
 * The epoch a claim was made under, when another one runs now: what the claim reads or runs was built from
 * releases that no longer run (a Plan's bytes, a read's runner), so a read-only claim is withdrawn rather
 * than harvested into state of the new epoch, and a dispatched Apply is waited out without reading its
 * result. A claim that predates the field is taken to belong to the epoch the resource recorded.
 */
export function retiredClaimEpoch(
  claim: { readonly executionEpoch?: string | undefined },
  recorded: ExecutionBinding | undefined,
  current: ExecutionBinding,
): string | undefined {
  const claimed = claim.executionEpoch ?? recorded?.epoch;
  return claimed !== undefined && claimed !== current.epoch ? claimed : undefined;
}

/** A dispatched Apply of a retired epoch, whose result is never read (see `retiredClaimEpoch`). */
export function isRetiredApply(
  claim: { readonly type: string; readonly dispatchStarted?: boolean; readonly executionEpoch?: string },
  recorded: ExecutionBinding | undefined,
  current: ExecutionBinding,
): boolean {
  return (
    claim.type === 'Apply' &&
    claim.dispatchStarted === true &&
    retiredClaimEpoch(claim, recorded, current) !== undefined
  );
}

/** The plan bindings that belong to the execution binding (a differing one retires the plan as such). */
const EXECUTION_PLAN_FIELDS: ReadonlySet<string> = new Set([
  'executionEpoch',
  ...Object.keys(BOUND_RELEASE_FIELDS),
]);

/** What a plan binds of the execution binding: the epoch and every release, as named plan fields. */
export function executionPlanBinding(
  binding: ExecutionBinding,
): BoundReleases & { readonly executionEpoch: string } {
  const { epoch, ...releases } = binding;
  return { executionEpoch: epoch, ...releases };
}

/**
 * Why a plan whose bindings differ from the live ones is retired: the execution binding took over (an
 * upgrade, a rollback, a new controller-state version), or another live input did.
 */
export function supersededBy(fields: readonly string[]): 'ExecutionBindingChanged' | 'Superseded' {
  return fields.some((f) => EXECUTION_PLAN_FIELDS.has(f)) ? 'ExecutionBindingChanged' : 'Superseded';
}

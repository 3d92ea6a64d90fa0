/**
 * The PtahMigration lifecycle as one pure function, over the same building blocks as the schema family:
 * claims, the operation Job, harvested frames, the realm Lease, snapshots, the journal, read requests and
 * Events. `reconciler.ts` gathers the inputs (and publishes a plan from a history reading) and performs the
 * outputs in the contract's order: `pre` (the realm Lease; the unresolved-run annotation, which must exist
 * before the status that records the run), the status, then `post` in order.
 *
 * History reads the revision table and takes no Lease. Apply runs the approved sequence under the realm
 * Lease, and Ptah compares it with its own selection under the migration lock. An outcome that is Partial or
 * Unknown latches: status.unresolvedRun, Blocked, and no Apply until a History read of the same database
 * shows nothing pending, or an acknowledgment naming the run's operation id settles it. Never a retry.
 */
import { blockedUntil } from '../decision/blocked.ts';
import { realmRefusalLifted, realmWithdrawal, type RealmVerdict } from '../realm/realm-grant.ts';
import { canonicalDigest } from '../../api/digest.ts';
import type { HistoryVerdict, MigrationHistory, RunFailure } from '../../api/ptah-migration.ts';
import type { ExecutionBinding } from '../../api/ptah-schema.ts';
import { readRequest, readRequestPending } from '../../api/read-request.ts';
import type { MigrationApplyOutputs, MigrationVerdict, RunnerResult } from '../../protocol/result.ts';
import { buildClaim } from '../claims/claim.ts';
import {
  deadlineExceeded,
  jobDeadlinePassed,
  operationFailureCause,
  type ClassifiedCause,
} from '../causes/classify-cause.ts';
import { DecisionBuilder, type DecisionOf, type EventSpec } from '../decision/builder.ts';
import type {
  AcknowledgmentView,
  Harvest,
  JobObservation,
  LastRun,
  MigrationApprovalView,
  MigrationClaim,
  MigrationJournalEntry,
  MigrationOperationType,
  MigrationPhase,
  MigrationPlanCheck,
  MigrationPlanStatus,
  MigrationStatus,
  MigrationView,
  UnresolvedRun,
} from './model.ts';
import { type CollectSnapshots } from '../snapshot/record-resolution.ts';
import { sourceStep } from '../snapshot/source-step.ts';
import type { ResolutionResult } from '../snapshot/resolve-source.ts';
import type { DurableWrite, PlanPublication } from '../decision/durable-writes.ts';
import { retiredClaimEpoch, supersededBy } from '../execution-binding.ts';
import {
  finishJobAction,
  isClaimedJob,
  unconfirmedMessage,
  type FinishJobAction,
} from '../jobs/claim-job.ts';
import {
  artifactClaimMoved,
  resolutionInputs,
  resolveResult,
  sourceRefusalMessage,
  startResolve,
  verifyResult,
  type ArtifactClaimInputs,
  type ArtifactFamily,
  type ArtifactInput,
} from '../snapshot/artifact-steps.ts';

export type { EventSpec };

export interface MigrationDecideInput {
  readonly now: Date;
  readonly migration: MigrationView;
  readonly engineSupported: boolean;
  readonly engine?: 'postgres' | 'mysql';
  /**
   * Whether the realm spec.target names admits this migration: a PtahRealm's grant and the census of both
   * families. Refused, nothing new starts; a dispatched Apply still runs to its end.
   */
  readonly realm: RealmVerdict;
  readonly coordinationDigest: string;
  readonly executionBinding: ExecutionBinding;
  readonly resolution: ResolutionResult;
  /** An OCI source: its reference and the verification policy as read now (see the schema's decide). */
  readonly artifact?: ArtifactInput;
  readonly job?: JobObservation;
  readonly harvest?: Harvest;
  /** An Apply Job this release cannot adopt (see the schema's decide): what differs. Never read. */
  readonly unconfirmedJob?: string;
  /** For a finished History with pending versions: what publishing its plan would write. */
  readonly publication?: PlanPublication;
  /** For a finished History with pending versions: the plan as published (the publication's outcome). */
  readonly published?: MigrationPlanStatus;
  /** Why such a plan was not published. */
  readonly publishRefused?: { readonly reason: string; readonly message: string };
  /** The stored plan status.plan names, checked whenever a decision rests on it. */
  readonly planCheck?: MigrationPlanCheck;
  readonly approvals: readonly MigrationApprovalView[];
  readonly acknowledgments: readonly AcknowledgmentView[];
  /** Why no approval or acknowledgment is accepted now (their webhooks are not registered), if so. */
  readonly decisionsRefused?: string;
  /** The realm Lease an Apply runs under is not the uninterrupted hold its claim recorded. */
  readonly leaseContinuityLost?: boolean;
  readonly readRequestedAt?: string;
}

export type MigrationPreAction =
  | DurableWrite
  | { readonly kind: 'acquireLease'; readonly durationSeconds: number }
  | { readonly kind: 'addFinalizer' }
  /** The copy of an unresolved run on the resource's metadata, written before the status that records it. */
  | { readonly kind: 'writeUnresolvedAnnotation'; readonly run: UnresolvedRun };

export type MigrationPostAction =
  | { readonly kind: 'createJob'; readonly claim: MigrationClaim }
  | FinishJobAction
  | { readonly kind: 'consumeApproval'; readonly name: string; readonly uid: string }
  | {
      readonly kind: 'staleApprovals';
      readonly exceptPlanUID?: string;
      readonly reason: string;
      readonly message: string;
    }
  | {
      readonly kind: 'markAcknowledgment';
      readonly name: string;
      readonly uid: string;
      readonly condition: 'Consumed' | 'Stale';
      readonly reason: 'RunAcknowledged' | 'RunNotUnresolved';
      readonly message: string;
    }
  /** After the status that no longer records the run: the copy goes last. */
  | { readonly kind: 'removeUnresolvedAnnotation' }
  | { readonly kind: 'releaseLease' }
  | { readonly kind: 'removeFinalizer' }
  | CollectSnapshots;

export type MigrationDecision = DecisionOf<MigrationStatus, MigrationPreAction, MigrationPostAction>;

export const JOB_POLL_MS = 3_000;
export const LOG_GRACE_MS = 120_000;
const HISTORY_CONTRACT_VERSION = 1;

class Builder extends DecisionBuilder<
  MigrationStatus,
  MigrationJournalEntry,
  MigrationPreAction,
  MigrationPostAction
> {
  constructor(
    readonly input: MigrationDecideInput,
    status: MigrationStatus,
  ) {
    super(input.now, input.migration.generation, status);
  }
}

export function decideMigration(input: MigrationDecideInput): MigrationDecision {
  const { migration } = input;
  const b = new Builder(input, migration.status);
  if (migration.deleting) {
    handleDeletion(b, input);
    return b.build();
  }
  if (!migration.hasFinalizer) {
    return {
      status: migration.status,
      pre: [{ kind: 'addFinalizer' }],
      post: [],
      events: [],
      requeueAfterMs: 0,
    };
  }
  // Recording the binding this pass runs under is what retires an earlier epoch, durably, for both families.
  b.status.executionBinding = input.executionBinding;
  reconcileUnresolvedCopy(b, input);
  const claim = b.status.claim;
  if (claim !== undefined) handleClaim(b, input, claim);
  else handleIdle(b, input);
  return b.build();
}

// ---------------------------------------------------------------------------------------------------------
// The unresolved-run record and its annotation copy.

/**
 * Status and the annotation say the same thing: a restore that dropped status but kept the annotation puts
 * the run back (with a Warning), a status record without its copy gets it written again, and a copy of a
 * run status no longer records (it was settled, and the pass that removes it did not finish) goes.
 */
function reconcileUnresolvedCopy(b: Builder, input: MigrationDecideInput): void {
  const st = b.status;
  const copy = input.migration.unresolvedAnnotation;
  const run = st.unresolvedRun;
  if (run === undefined && copy !== undefined && copy !== 'invalid') {
    if (st.resolvedRun?.operationId === copy.operationId) {
      b.post.push({ kind: 'removeUnresolvedAnnotation' });
      return;
    }
    st.unresolvedRun = copy;
    b.event(
      'Warning',
      'UnresolvedRunRestored',
      `status did not record run ${copy.jobName} (operation ${copy.operationId}); restored from the annotation operator.ptah.run/unresolved-run: no Apply runs until it is settled`,
    );
    return;
  }
  if (
    run !== undefined &&
    (copy === undefined || copy === 'invalid' || copy.operationId !== run.operationId)
  ) {
    b.pre.push({ kind: 'writeUnresolvedAnnotation', run });
  }
}

/** Records a Partial or Unknown run: its copy first (pre), then status, and the resource is Blocked. */
function latch(
  b: Builder,
  input: MigrationDecideInput,
  claim: MigrationClaim,
  outcome: 'Partial' | 'Unknown',
  message: string,
  apply?: MigrationApplyOutputs,
): void {
  const st = b.status;
  const run: UnresolvedRun = {
    outcome,
    operationId: claim.operationId,
    jobName: claim.jobName,
    ...(claim.jobUID !== undefined ? { jobUID: claim.jobUID } : {}),
    ...(claim.planRef !== undefined ? { planRef: claim.planRef } : {}),
    ...(st.target?.identityDigest !== undefined ? { targetIdentityDigest: st.target.identityDigest } : {}),
    recordedAt: b.now,
  };
  b.pre.push({ kind: 'writeUnresolvedAnnotation', run });
  st.unresolvedRun = run;
  recordRun(b, claim, outcome, apply);
  endClaim(b, claim);
  retirePlan(b, 'its run did not finish in a known state');
  b.event('Warning', 'ApplyOutcomeUnknown', message);
  block(
    b,
    'ApplyOutcomeUnknown',
    `run ${claim.jobName} ended ${outcome.toLowerCase()}: no Apply runs until a history read shows nothing pending or a PtahMigrationRunAcknowledgment names operation ${claim.operationId}`,
  );
  // Only the database settles the run, so its history is read at once rather than an interval later: a run
  // whose result was never read (its epoch retired) gets the fresh reading the seeds make mandatory.
  st.nextReconciliationTime = b.now;
  b.requeue(0);
}

/** The run is settled: status first (post removes the copy), the journal says how. */
function settle(
  b: Builder,
  run: UnresolvedRun,
  how:
    | { readonly resolution: 'HistoryRead' }
    | { readonly resolution: 'Acknowledged'; readonly ack: AcknowledgmentView },
): void {
  const st = b.status;
  st.unresolvedRun = undefined;
  st.resolvedRun = {
    operationId: run.operationId,
    outcome: run.outcome,
    resolution: how.resolution,
    ...(how.resolution === 'Acknowledged'
      ? {
          acknowledgmentRef: { name: how.ack.name, uid: how.ack.uid },
          ...(how.ack.acknowledgedBy !== undefined
            ? {
                acknowledgedBy: {
                  username: how.ack.acknowledgedBy.username,
                  ...(how.ack.acknowledgedBy.groups !== undefined
                    ? { groups: [...how.ack.acknowledgedBy.groups] }
                    : {}),
                },
              }
            : {}),
        }
      : {}),
    resolvedAt: b.now,
  };
  b.post.push({ kind: 'removeUnresolvedAnnotation' });
  if (how.resolution === 'Acknowledged') {
    b.record({ type: 'RunAcknowledged', outcome: run.outcome, reason: 'RunAcknowledged' });
    b.post.push({
      kind: 'markAcknowledgment',
      name: how.ack.name,
      uid: how.ack.uid,
      condition: 'Consumed',
      reason: 'RunAcknowledged',
      message: `settles run ${run.jobName}`,
    });
    b.event(
      'Normal',
      'RunAcknowledged',
      `run ${run.jobName} (${run.outcome.toLowerCase()}) acknowledged by ${how.ack.name}; the history is read again`,
    );
  } else {
    b.event(
      'Normal',
      'UnresolvedRunSettled',
      `a history read of the database run ${run.jobName} reached shows nothing pending; Apply may run again`,
    );
  }
}

/**
 * Acknowledgments are read on every idle pass, suspended or not: the one that names the unresolved run's
 * operation id, carries the stamp admission wrote and is not yet used settles it; any other unused one is
 * marked Stale, so its author sees that it settled nothing.
 */
function handleAcknowledgments(b: Builder, input: MigrationDecideInput): boolean {
  if (input.decisionsRefused !== undefined) return false;
  const st = b.status;
  const { migration } = input;
  const open = input.acknowledgments
    .filter((a) => a.migrationRef.uid === migration.uid && a.migrationRef.name === migration.name)
    .filter((a) => !a.consumed && !a.stale)
    .sort((x, y) => x.createdAt.localeCompare(y.createdAt) || x.name.localeCompare(y.name));
  const run = st.unresolvedRun;
  const stamped = (a: AcknowledgmentView) =>
    a.acknowledgedBy !== undefined &&
    a.acknowledgedBy.username !== '' &&
    a.acknowledgedAt !== undefined &&
    a.mutationRequestUID !== undefined &&
    a.mutationRequestUID !== '';
  const settling =
    run !== undefined ? open.find((a) => a.operationId === run.operationId && stamped(a)) : undefined;
  for (const a of open) {
    if (a === settling || (run !== undefined && a.operationId === run.operationId && !stamped(a))) continue;
    b.post.push({
      kind: 'markAcknowledgment',
      name: a.name,
      uid: a.uid,
      condition: 'Stale',
      reason: 'RunNotUnresolved',
      message: `operation ${a.operationId} is not the unresolved run of PtahMigration ${migration.name}`,
    });
  }
  if (run === undefined || settling === undefined) return false;
  settle(b, run, { resolution: 'Acknowledged', ack: settling });
  // The database may be anywhere the person left it: read it now rather than at the interval.
  st.nextReconciliationTime = b.now;
  b.requeue(0);
  return true;
}

// ---------------------------------------------------------------------------------------------------------
// No operation in flight.

const SETTLED_PHASES: ReadonlySet<MigrationPhase | undefined> = new Set<MigrationPhase>([
  'InSync',
  'Blocked',
  'AwaitingApproval',
  'Planning',
]);

function handleIdle(b: Builder, input: MigrationDecideInput): void {
  const { migration, now } = input;
  const spec = migration.spec;
  const st = b.status;

  const request = pendingReadRequest(input);
  if (request !== undefined && !request.valid) {
    st.lastReadRequest = request.recorded;
    b.event(
      'Warning',
      'ReadRequestInvalid',
      `annotation operator.ptah.run/read-requested-at value ${JSON.stringify(request.recorded)} is not an RFC 3339 instant; nothing was started`,
    );
  }
  const readRequested = request !== undefined && request.valid;

  const acknowledged = handleAcknowledgments(b, input);

  if (spec.suspend) {
    st.phase = 'Suspended';
    b.cond('Suspended', 'True', 'Suspended', 'spec.suspend is set; no new Job starts');
    b.cond('Ready', 'False', 'Suspended', 'suspended');
    b.cond('Progressing', 'False', 'Suspended', 'suspended');
    b.post.push({ kind: 'releaseLease' });
    st.observedGeneration = migration.generation;
    return;
  }
  b.cond('Suspended', 'False', 'Active', 'not suspended');

  if (!input.engineSupported) {
    block(
      b,
      'UnsupportedEngine',
      `spec.target.engine is ${JSON.stringify(spec.engine)}; migrations run on postgres and mysql`,
    );
    return;
  }
  if (!input.realm.admitted) {
    block(b, input.realm.reason, input.realm.message);
    return;
  }
  const source = sourceStep(b, migrationFamily(b, input), input);
  if (source === undefined) return;
  const { sourceChanged } = source;

  const generationChanged = st.observedGeneration !== migration.generation;
  const inputsChanged = sourceChanged || generationChanged;
  if (inputsChanged && st.plan !== undefined) {
    retirePlan(b, 'the source or the spec changed; the plan no longer describes them');
  }
  st.observedGeneration = migration.generation;

  if (st.plan !== undefined && input.planCheck !== undefined && !input.planCheck.ok) {
    const check = input.planCheck;
    retirePlan(
      b,
      check.kind === 'gone'
        ? check.message
        : `what it binds no longer matches the live inputs (${check.fields.join(', ')})`,
      check.kind === 'gone' ? 'PlanNoLongerCurrent' : supersededBy(check.fields),
    );
    claimOperation(b, input, 'History', {});
    return;
  }

  const due =
    acknowledged ||
    inputsChanged ||
    realmRefusalLifted(st) ||
    st.nextReconciliationTime === undefined ||
    Date.parse(st.nextReconciliationTime) <= now.getTime();
  const phase = st.phase;

  if (phase === 'Failed' && !due) {
    b.requeueAt(st.nextReconciliationTime);
    return;
  }

  if (readRequested && !due && SETTLED_PHASES.has(phase)) {
    st.lastReadRequest = request.recorded;
    st.nextReconciliationTime = b.now;
    b.event(
      'Normal',
      'ReadRequested',
      `read requested at ${request.recorded}: the history is read again now`,
    );
    b.requeue(0);
    return;
  }

  if (st.unresolvedRun !== undefined && !due) {
    // Every Apply is refused while a run is unresolved; only a history read or an acknowledgment settles it.
    b.requeueAt(st.nextReconciliationTime);
    return;
  }

  if ((phase === 'AwaitingApproval' || phase === 'Planning') && st.plan !== undefined && !due) {
    const auth = authorise(input, st.plan);
    if (auth.kind === 'wait') {
      approvalGateCondition(b, input, st.plan.name);
      b.requeueAt(st.nextReconciliationTime);
      return;
    }
    if (input.planCheck === undefined) {
      b.requeue(0);
      return;
    }
    claimApply(b, input, st.plan, auth.kind === 'approved' ? auth.approval : undefined);
    return;
  }

  if (
    (phase === 'InSync' || phase === 'Blocked' || phase === 'AwaitingApproval' || phase === 'Planning') &&
    !due
  ) {
    b.requeueAt(st.nextReconciliationTime);
    return;
  }

  if (readRequested) {
    st.lastReadRequest = request.recorded;
    b.event('Normal', 'ReadRequested', `read requested at ${request.recorded}: the read starts now`);
  }
  if (input.artifact !== undefined) startResolve(migrationFamily(b, input), input.artifact);
  else claimOperation(b, input, 'History', {});
}

/** How the shared Resolve → Verify steps claim, fail, block and retire for a migration. */
function migrationFamily(b: Builder, input: MigrationDecideInput): ArtifactFamily {
  return {
    claim: (type, artifact) => claimOperation(b, input, type, { artifact }),
    claimRead: () => claimOperation(b, input, 'History', {}),
    fail: (operation, reason, message) => fail(b, input, operation, reason, message),
    block: (reason, message) => {
      b.cond('ArtifactVerified', 'False', reason, message);
      block(b, reason, message);
    },
    retirePlan: (message, reason) => retirePlan(b, message, reason),
    // A migration keeps no PlanReady or InSync; Ready says the history's freshness is unknown.
    freshnessUnknown: (message) => b.cond('Progressing', 'Unknown', 'SourceFreshnessUnknown', message),
  };
}

function claimApply(
  b: Builder,
  input: MigrationDecideInput,
  plan: MigrationPlanStatus,
  approval: MigrationApprovalView | undefined,
): void {
  if (approval !== undefined) {
    b.event('Normal', 'ApprovedPlan', `approval ${approval.name} accepted for plan ${plan.name}`);
  }
  b.cond('ApprovalRequired', 'False', approval ? 'ApprovedPlan' : 'NotRequired', 'the plan may be applied');
  claimOperation(b, input, 'Apply', {
    plan: { name: plan.name, uid: plan.uid },
    planFingerprint: plan.fingerprint,
    ...(approval !== undefined ? { approval: { name: approval.name, uid: approval.uid } } : {}),
  });
}

function approvalGateCondition(b: Builder, input: MigrationDecideInput, planName: string): void {
  if (input.migration.spec.policy.apply === 'Never') return;
  if (input.decisionsRefused !== undefined) {
    b.cond('ApprovalRequired', 'True', 'ApprovalWebhooksMissing', input.decisionsRefused);
  } else {
    b.cond(
      'ApprovalRequired',
      'True',
      'AwaitingApproval',
      `approve plan ${planName} with a PtahMigrationApproval`,
    );
  }
}

type Authorisation =
  | { readonly kind: 'approved'; readonly approval: MigrationApprovalView }
  | { readonly kind: 'not-required' }
  | { readonly kind: 'wait' };

function authorise(input: MigrationDecideInput, plan: MigrationPlanStatus): Authorisation {
  const apply = input.migration.spec.policy.apply;
  if (apply === 'Never' || input.migration.status.unresolvedRun !== undefined) return { kind: 'wait' };
  if (apply === 'Always') return { kind: 'not-required' };
  const approval = exactApproval(input, plan);
  return approval ? { kind: 'approved', approval } : { kind: 'wait' };
}

/** The oldest unused approval naming this resource and this plan by name, UID and fingerprint, stamped. */
export function exactApproval(
  input: MigrationDecideInput,
  plan: MigrationPlanStatus,
): MigrationApprovalView | undefined {
  if (input.decisionsRefused !== undefined) return undefined;
  const { migration } = input;
  const candidates = input.approvals.filter(
    (a) =>
      a.migrationRef.name === migration.name &&
      a.migrationRef.uid === migration.uid &&
      a.planRef.name === plan.name &&
      a.planRef.uid === plan.uid &&
      a.planFingerprint === plan.fingerprint &&
      a.approver !== undefined &&
      a.approver !== '' &&
      a.approvedAt !== undefined &&
      a.approvedAt !== '' &&
      a.mutationRequestUID !== undefined &&
      a.mutationRequestUID !== '' &&
      !a.consumed &&
      !a.stale,
  );
  candidates.sort((x, y) => x.createdAt.localeCompare(y.createdAt) || x.name.localeCompare(y.name));
  return candidates[0];
}

function pendingReadRequest(input: MigrationDecideInput): ReturnType<typeof readRequest> | undefined {
  const value = input.readRequestedAt;
  if (value === undefined || !readRequestPending(value, input.migration.status.lastReadRequest))
    return undefined;
  return readRequest(value);
}

// ---------------------------------------------------------------------------------------------------------
// Deletion.

/**
 * Deleting runs nothing new and never abandons an Apply: a dispatched Apply keeps its Lease until its Job is
 * terminal, its outcome goes to the journal and an Event, and only then is the guard removed. An unresolved
 * run is discarded with the resource, with a Warning saying so.
 */
function handleDeletion(b: Builder, input: MigrationDecideInput): void {
  const st = b.status;
  const claim = st.claim;
  const job = input.job ?? { state: 'absent' as const };
  if (claim?.type === 'Apply' && claim.dispatchStarted === true) {
    const harvest = input.harvest;
    const ours = isClaimedJob(claim, job);
    const waiting =
      ours &&
      (job.state === 'running' ||
        (job.state === 'finished' &&
          (harvest === undefined || harvest.kind === 'unavailable') &&
          input.now.getTime() - Date.parse(job.finishedAt ?? input.now.toISOString()) < LOG_GRACE_MS));
    if (waiting && input.leaseContinuityLost !== true) {
      b.pre.push({ kind: 'acquireLease', durationSeconds: leaseSeconds(input) });
      b.cond('Ready', 'False', 'Deleting', `deletion waits for run ${claim.jobName} to end`);
      b.requeue(JOB_POLL_MS);
      return;
    }
    const result =
      ours && harvest?.kind === 'accepted' && input.leaseContinuityLost !== true ? harvest.result : undefined;
    const outcome = runOutcomeOf(result);
    recordRun(b, claim, outcome, result?.outputs.migrationApply);
    b.event(
      outcome === 'Applied' || outcome === 'UpToDate' ? 'Normal' : 'Warning',
      'RunFinished',
      `run ${claim.jobName} ended while the resource was deleted: ${outcome.toLowerCase()}; nothing more runs`,
    );
  }
  if (st.unresolvedRun !== undefined) {
    b.event(
      'Warning',
      'UnresolvedRunDiscarded',
      `the resource is deleted with run ${st.unresolvedRun.jobName} unresolved; the database may hold part of it`,
    );
  }
  if (claim !== undefined) b.post.push(finishJobAction(claim));
  st.claim = undefined;
  b.post.push({ kind: 'releaseLease' });
  b.post.push({ kind: 'removeFinalizer' });
}

// ---------------------------------------------------------------------------------------------------------
// An operation in flight.

export function needsLease(claim: MigrationClaim): boolean {
  return claim.type === 'Apply';
}

function leaseSeconds(input: MigrationDecideInput): number {
  return input.migration.spec.activeDeadlineSeconds + 60;
}

function handleClaim(b: Builder, input: MigrationDecideInput, claimed: MigrationClaim): void {
  let claim = claimed;
  const { migration } = input;
  const st = b.status;
  const dispatched = claim.type === 'Apply' && claim.dispatchStarted === true;

  // A read whose inputs moved is worthless and an undispatched Apply is withdrawn; a dispatched Apply is
  // observed to its end whatever changes, suspension included.
  if (!dispatched) {
    const retiredEpoch = retiredClaimEpoch(claim, migration.status.executionBinding, input.executionBinding);
    const rotated = retiredEpoch !== undefined;
    const moved =
      migration.spec.suspend ||
      rotated ||
      claim.generation !== migration.generation ||
      (claim.type === 'Resolve' || claim.type === 'Verify'
        ? artifactClaimMoved(claim, input.artifact)
        : input.resolution.ok &&
          (input.resolution.value.contentDigest !== claim.contentDigest ||
            input.resolution.value.configMapUID !== st.resolution?.configMapUID));
    // A realm that stopped admitting the resource withdraws the one mutating operation not yet started;
    // a read already claimed runs to its end and the next idle pass is Blocked.
    const refused = claim.type === 'Apply' && !input.realm.admitted;
    if (moved || refused) {
      endClaim(b, claim);
      b.post.push(finishJobAction(claim));
      if (rotated)
        b.event(
          'Normal',
          'ExecutionBindingChanged',
          `operation ${claim.type} withdrawn: it was claimed under execution binding epoch ${retiredEpoch}, retired by ${input.executionBinding.epoch}`,
        );
      else if (moved)
        b.event('Normal', 'InputsChanged', `operation ${claim.type} withdrawn: its inputs changed`);
      else if (!input.realm.admitted)
        b.event('Warning', input.realm.reason, realmWithdrawal(claim.type, input.realm));
      b.requeue(0);
      return;
    }
  }

  // An Apply dispatched before the upgrade that added the field keeps the epoch it ran under from now on.
  if (dispatched && claim.executionEpoch === undefined) {
    const epoch = retiredClaimEpoch(claim, migration.status.executionBinding, input.executionBinding);
    if (epoch !== undefined) st.claim = claim = { ...claim, executionEpoch: epoch };
  }

  const job = input.job ?? { state: 'absent' };
  if (input.leaseContinuityLost === true && needsLease(claim) && claim.leaseEpoch !== undefined) {
    b.event(
      'Warning',
      'LeaseContinuityLost',
      `the realm Lease changed hands during run ${claim.jobName}; its result is discarded`,
    );
    if (job.state !== 'absent') b.post.push(finishJobAction(claim));
    if (dispatched) {
      latch(b, input, claim, 'Unknown', `run ${claim.jobName} lost its realm Lease; its outcome is unknown`);
      return;
    }
    endClaim(b, claim);
    b.requeue(0);
    return;
  }

  if (job.state === 'absent') {
    if (claim.type === 'Apply') {
      if (dispatched) {
        latch(
          b,
          input,
          claim,
          'Unknown',
          `the Job of run ${claim.jobName} is missing; its outcome is unknown`,
        );
        return;
      }
      dispatchApply(b, input, claim);
      return;
    }
    if (claim.jobUID !== undefined) {
      const { jobUID: _vanished, ...unrecorded } = claim;
      claim = unrecorded;
      st.claim = claim;
    }
    b.post.push({ kind: 'createJob', claim });
    b.requeue(JOB_POLL_MS);
    return;
  }

  if (!isClaimedJob(claim, job)) {
    const message = `${claim.jobName} is not the Job this operation created; its result is not read`;
    if (dispatched) {
      latch(b, input, claim, 'Unknown', message);
      return;
    }
    b.event('Warning', 'JobReplaced', message);
    endClaim(b, claim);
    b.requeue(0);
    return;
  }
  if (claim.jobUID === undefined && job.uid !== '') {
    claim = { ...claim, jobUID: job.uid };
    st.claim = claim;
  }

  if (job.state === 'running' && input.harvest?.kind === 'credential-unavailable') {
    b.post.push(finishJobAction(claim));
    if (dispatched) {
      latch(b, input, claim, 'Unknown', `run ${claim.jobName} cannot start: ${input.harvest.message}`);
      return;
    }
    endClaim(b, claim);
    fail(b, input, claim.type, 'CredentialUnavailable', input.harvest.message);
    return;
  }
  if (job.state === 'running') {
    if (needsLease(claim)) b.pre.push({ kind: 'acquireLease', durationSeconds: leaseSeconds(input) });
    b.requeue(JOB_POLL_MS);
    return;
  }

  // An Apply an upgrade retired: once its Job has ended (every Pod of it gone) the TTL is all it gets; its
  // result is never read, replayed or certified, and only a fresh history read says where the database is.
  const retired = dispatched ? retiredClaimEpoch(claim, undefined, input.executionBinding) : undefined;
  if (retired !== undefined) {
    b.post.push(finishJobAction(claim));
    latch(
      b,
      input,
      claim,
      'Unknown',
      `run ${claim.jobName} ran under execution binding epoch ${retired}, retired by ${input.executionBinding.epoch}: its result is not read`,
    );
    return;
  }
  if (dispatched && input.unconfirmedJob !== undefined) {
    b.post.push(finishJobAction(claim));
    latch(b, input, claim, 'Unknown', unconfirmedMessage(claim.jobName, input.unconfirmedJob));
    return;
  }

  const harvest = input.harvest ?? { kind: 'unavailable', message: 'the result was not read' };
  if (harvest.kind === 'unavailable') {
    const finishedAt = job.finishedAt !== undefined ? Date.parse(job.finishedAt) : input.now.getTime();
    if (input.now.getTime() - finishedAt < LOG_GRACE_MS) {
      if (needsLease(claim)) b.pre.push({ kind: 'acquireLease', durationSeconds: leaseSeconds(input) });
      b.requeue(JOB_POLL_MS);
      return;
    }
  }
  b.post.push(finishJobAction(claim));

  if (harvest.kind !== 'accepted') {
    const reasons: Readonly<Record<Exclude<Harvest['kind'], 'accepted'>, string>> = {
      'snapshot-refused': 'SnapshotRefused',
      'source-refused': 'ArtifactFetchFailed',
      refused: 'ResultRefused',
      unavailable: 'ResultLost',
      'credential-unavailable': 'CredentialUnavailable',
      'oom-killed': 'OOMKilled',
    };
    // The Job controller ending the Job at its deadline says why there is no result.
    const deadline =
      harvest.kind !== 'oom-killed' && jobDeadlinePassed(input.job)
        ? deadlineExceeded(input.migration.spec.activeDeadlineSeconds)
        : undefined;
    const reason = deadline?.reason ?? reasons[harvest.kind];
    const message =
      deadline?.message ??
      (harvest.kind === 'snapshot-refused'
        ? `the snapshot failed its check${harvest.file ? ` at file ${harvest.file}` : ''}; nothing ran`
        : harvest.kind === 'source-refused'
          ? sourceRefusalMessage(harvest)
          : harvest.kind === 'oom-killed'
            ? 'the operation container ran out of memory and was killed'
            : `no acceptable result: ${harvest.message}`);
    // A refusal by an init container stopped the Pod before the container with the URL started.
    const nothingRan = harvest.kind === 'snapshot-refused' || harvest.kind === 'source-refused';
    if (dispatched && !nothingRan) {
      latch(b, input, claim, 'Unknown', `run ${claim.jobName}: ${message}`);
      return;
    }
    if (dispatched) recordRun(b, claim, 'Failed');
    endClaim(b, claim);
    fail(b, input, claim.type, reason, message);
    return;
  }
  if ((claim.type === 'Resolve' || claim.type === 'Verify') && input.artifact !== undefined) {
    endClaim(b, claim);
    const family = migrationFamily(b, input);
    if (claim.type === 'Resolve') resolveResult(b, family, input.artifact, harvest.result);
    else verifyResult(b, family, input.artifact, claim, harvest.result);
    return;
  }
  if (claim.type === 'History') historyRead(b, input, claim, harvest.result);
  else runEnded(b, input, claim, harvest.result);
}

function dispatchApply(b: Builder, input: MigrationDecideInput, claim: MigrationClaim): void {
  const st = b.status;
  const plan = st.plan;
  const current = plan !== undefined && claim.planRef !== undefined && plan.uid === claim.planRef.uid;
  const approvalOk =
    claim.approvalRef === undefined ||
    input.approvals.some((a) => a.uid === claim.approvalRef!.uid && !a.consumed && !a.stale);
  const checkOk = input.planCheck !== undefined && input.planCheck.ok;
  const auth = plan !== undefined ? authorise(input, plan) : { kind: 'wait' as const };
  if (!current || !approvalOk || !checkOk || auth.kind === 'wait' || st.unresolvedRun !== undefined) {
    endClaim(b, claim);
    b.event(
      'Warning',
      'ApplyWithdrawn',
      'the apply was withdrawn before dispatch: its plan or approval is no longer current',
    );
    if (!current || (input.planCheck !== undefined && !input.planCheck.ok))
      retirePlan(b, 'the plan is no longer current');
    st.phase = st.plan !== undefined ? 'AwaitingApproval' : 'Pending';
    b.requeue(0);
    return;
  }
  b.pre.push({ kind: 'acquireLease', durationSeconds: leaseSeconds(input) });
  st.claim = { ...claim, dispatchStarted: true };
  st.phase = 'Applying';
  b.cond('Progressing', 'True', 'Applying', `applying plan ${plan!.name}`);
  if (claim.approvalRef !== undefined) {
    b.post.push({ kind: 'consumeApproval', name: claim.approvalRef.name, uid: claim.approvalRef.uid });
    // A migration's status does not carry the approver, so neither does the entry.
    b.record({ type: 'ApprovalAccepted', approval: claim.approvalRef.name, plan: plan!.name });
  }
  b.post.push({ kind: 'createJob', claim: st.claim });
  b.event('Normal', 'ApplyStarted', `applying plan ${plan!.name}`);
  b.requeue(JOB_POLL_MS);
}

// ---------------------------------------------------------------------------------------------------------
// Results.

const VERDICTS: Readonly<Record<MigrationVerdict, HistoryVerdict>> = {
  dirty: 'Dirty',
  modified: 'Modified',
  out_of_order: 'OutOfOrder',
  ahead: 'Ahead',
  pending: 'ReadyToPlan',
  up_to_date: 'NothingPending',
};

const BLOCKED_VERDICTS: Readonly<
  Record<'dirty' | 'modified' | 'out_of_order' | 'ahead', { reason: string; message: string }>
> = {
  dirty: {
    reason: 'HistoryDirty',
    message: 'the revision table records a run that did not finish; repair it with ptah migrations repair',
  },
  modified: {
    reason: 'HistoryModified',
    message: 'an applied migration no longer matches its file (checksum); restore the file',
  },
  out_of_order: {
    reason: 'HistoryOutOfOrder',
    message: 'a pending migration sorts below one already applied; renumber it',
  },
  ahead: {
    reason: 'HistoryAhead',
    message: 'the database holds versions the migration directory does not have',
  },
};

const VERSION = /^[1-9][0-9]{0,18}$/;
const DIGEST = /^sha256:[0-9a-f]{64}$/;
const versions = (xs: readonly string[] | undefined) =>
  (xs ?? []).filter((v) => VERSION.test(v)).slice(0, 64);

function historyRead(
  b: Builder,
  input: MigrationDecideInput,
  claim: MigrationClaim,
  result: RunnerResult,
): void {
  const { migration } = input;
  const st = b.status;
  const h = result.outputs.history;
  const verifying = claim.planRef !== undefined;
  endClaim(b, claim);
  if (
    result.outcome !== 'succeeded' ||
    h === undefined ||
    !(h.verdict in VERDICTS) ||
    !DIGEST.test(h.historyFingerprint)
  ) {
    const cause = failureCause(input, result);
    const reason = cause?.reason ?? errorReason(result, 'HistoryReadFailed');
    // A deadline or an unreadable directory says nothing about the database; a refused password does.
    if (cause === undefined || cause.databaseUnreachable) {
      b.cond('DatabaseReachable', 'False', reason, cause?.message ?? 'the history could not be read');
    }
    fail(b, input, 'History', reason, cause?.message ?? 'the history read failed');
    return;
  }
  const identity =
    result.target?.identityDigest !== undefined && DIGEST.test(result.target.identityDigest)
      ? result.target.identityDigest
      : undefined;
  if (identity === undefined) {
    // A reading of an unnamed database can neither be planned against nor settle a run: refused, not guessed.
    fail(b, input, 'History', 'TargetUnreported', 'the history read did not say which database it read');
    return;
  }
  const history: MigrationHistory = {
    observedAt: b.now,
    contractVersion: HISTORY_CONTRACT_VERSION,
    verdict: VERDICTS[h.verdict],
    ...(VERSION.test(h.currentVersion) || h.currentVersion === '0'
      ? { currentVersion: h.currentVersion }
      : {}),
    ...(h.checkpointVersion !== undefined && VERSION.test(h.checkpointVersion)
      ? { checkpointVersion: h.checkpointVersion }
      : {}),
    appliedCount: Math.max(0, h.appliedCount),
    pendingCount: Math.max(0, h.pendingCount),
    fingerprint: h.historyFingerprint,
    targetIdentityDigest: identity,
    dirty: h.verdict === 'dirty' || h.dirtyVersions.length > 0,
    ...(h.modifiedVersions.length > 0 ? { modifiedVersions: versions(h.modifiedVersions) } : {}),
    ...(h.outOfOrderVersions.length > 0 ? { outOfOrderVersions: versions(h.outOfOrderVersions) } : {}),
  };
  st.history = history;
  st.target = {
    ...st.target,
    lastObservedAt: b.now,
    identityDigest: identity,
  };
  st.lastAttemptTime = claim.startedAt;
  b.cond('DatabaseReachable', 'True', 'HistoryRead', 'the history was read');

  const run = st.unresolvedRun;
  if (run !== undefined) {
    const sameTarget = run.targetIdentityDigest === undefined || run.targetIdentityDigest === identity;
    if (sameTarget && h.verdict === 'up_to_date') {
      settle(b, run, { resolution: 'HistoryRead' });
    } else {
      st.plan = undefined;
      block(
        b,
        'ApplyOutcomeUnknown',
        sameTarget
          ? `run ${run.jobName} is unresolved and the history still shows ${h.verdict === 'pending' ? 'pending versions' : `a ${h.verdict} history`}: no Apply runs until nothing is pending or a PtahMigrationRunAcknowledgment names operation ${run.operationId}`
          : `run ${run.jobName} is unresolved and this history is of another database than the run reached; it cannot settle it`,
      );
      return;
    }
  }

  const blocked =
    h.verdict === 'pending' || h.verdict === 'up_to_date' ? undefined : BLOCKED_VERDICTS[h.verdict];
  if (blocked !== undefined) {
    retirePlan(b, 'the history no longer allows it');
    block(b, blocked.reason, blocked.message);
    return;
  }
  if (h.verdict === 'up_to_date') {
    if (st.plan !== undefined) retirePlan(b, 'nothing is pending');
    st.phase = 'InSync';
    st.nextReconciliationTime = new Date(input.now.getTime() + migration.spec.intervalMs).toISOString();
    const reason = verifying ? 'HistoryMatched' : 'NothingPending';
    b.cond('Progressing', 'False', reason, verifying ? 'the history matches the run' : 'nothing is pending');
    b.cond('Ready', 'True', 'InSync', 'every migration of the directory is applied');
    b.cond('Blocked', 'False', 'NotBlocked', 'not blocked');
    b.cond('ApprovalRequired', 'False', 'NotRequired', 'nothing to approve');
    b.cond('ReconciliationFailed', 'False', 'Succeeded', 'the last operation succeeded');
    if (verifying)
      b.event(
        'Normal',
        'HistoryMatched',
        `the history read after the run of plan ${claim.planRef!.name} shows nothing pending`,
      );
    b.requeueAt(st.nextReconciliationTime);
    return;
  }

  // Pending versions: a plan, unless the policy applies nothing.
  b.cond('Blocked', 'False', 'NotBlocked', 'not blocked');
  if (migration.spec.policy.apply === 'Never') {
    retirePlan(b, 'spec.policy.apply is Never');
    block(
      b,
      'ApplyDisabled',
      `spec.policy.apply is Never: ${h.pendingCount} pending migration(s) are not applied`,
    );
    return;
  }
  if (input.published === undefined && input.publishRefused === undefined && input.publication) {
    b.publish(input.publication);
    return;
  }
  const published = input.published;
  if (published === undefined) {
    fail(
      b,
      input,
      'History',
      input.publishRefused?.reason ?? 'PublishFailed',
      input.publishRefused?.message ?? 'the plan could not be published',
    );
    return;
  }
  const same = st.plan !== undefined && st.plan.uid === published.uid;
  st.plan = published;
  if (!same) {
    b.record({ type: 'PlanPublished', plan: published.name, reason: 'Published' });
    b.event(
      'Normal',
      'PlanPublished',
      `plan ${published.name} published: ${h.pendingCount} pending migration(s)`,
    );
    b.post.push({
      kind: 'staleApprovals',
      exceptPlanUID: published.uid,
      reason: 'PlanNoLongerCurrent',
      message: `plan ${published.name} replaced the plan it names`,
    });
  }
  st.nextReconciliationTime = new Date(input.now.getTime() + migration.spec.intervalMs).toISOString();
  b.cond('ReconciliationFailed', 'False', 'Succeeded', 'the last operation succeeded');
  if (migration.spec.policy.apply === 'Always') {
    claimApply(b, input, published, undefined);
    return;
  }
  st.phase = 'AwaitingApproval';
  approvalGateCondition(b, input, published.name);
  b.cond('Progressing', 'False', 'AwaitingApproval', `plan ${published.name} waits for an approval`);
  b.cond('Ready', 'False', 'AwaitingApproval', 'waiting for an approval');
  b.requeue(0);
}

type RunOutcomeName = LastRun['outcome'];

function runOutcomeOf(result: RunnerResult | undefined): RunOutcomeName {
  const out = result?.outputs.migrationApply;
  if (result === undefined || out === undefined) return result?.outcome === 'refused' ? 'Failed' : 'Unknown';
  const byOutcome: Readonly<Record<MigrationApplyOutputs['runOutcome'], RunOutcomeName>> = {
    up_to_date: 'UpToDate',
    applied: 'Applied',
    failed: 'Failed',
    partial: 'Partial',
    unknown: 'Unknown',
  };
  const named = byOutcome[out.runOutcome] ?? 'Unknown';
  // The runner's own outcome must agree: a success it did not report, or a failure it called uncertain, is
  // read the cautious way.
  if ((named === 'Applied' || named === 'UpToDate') && result.outcome !== 'succeeded') return 'Unknown';
  if (named === 'Failed' && result.outcome === 'uncertain') return 'Unknown';
  return named;
}

function runEnded(
  b: Builder,
  input: MigrationDecideInput,
  claim: MigrationClaim,
  result: RunnerResult,
): void {
  const st = b.status;
  // An Apply the runner refused before ptah started never produced migration outputs: nothing ran.
  const out = result.outputs.migrationApply;
  const outcome = out === undefined && result.outcome === 'refused' ? 'Failed' : runOutcomeOf(result);
  if (outcome === 'Partial' || outcome === 'Unknown') {
    latch(
      b,
      input,
      claim,
      outcome,
      `run ${claim.jobName} ended ${outcome.toLowerCase()}${stopText(out)}; nothing is retried`,
      out,
    );
    return;
  }
  recordRun(b, claim, outcome, out);
  endClaim(b, claim);
  if (outcome === 'Failed') {
    retirePlan(b, 'its run failed');
    b.cond('Progressing', 'False', 'RunFailed', 'the run failed');
    const cause = failureCause(input, result);
    if (cause?.databaseUnreachable === true)
      b.cond('DatabaseReachable', 'False', cause.reason, cause.message);
    fail(
      b,
      input,
      'Apply',
      cause?.reason ?? errorReason(result, 'RunFailed'),
      `the run failed${stopText(out)}${cause !== undefined ? `: ${cause.message}` : ''}`,
    );
    return;
  }
  // Applied or up to date: the history read back says whether it matches, never the exit code.
  b.event(
    'Normal',
    'RunFinished',
    `run ${claim.jobName} applied ${out?.appliedVersions.length ?? 0} migration(s); the history is read back`,
  );
  const planRef = claim.planRef;
  st.plan = undefined;
  claimOperation(b, input, 'History', planRef !== undefined ? { verifies: planRef } : {});
}

/** Where a run stopped, as numbers and codes only. */
function stopText(out: MigrationApplyOutputs | undefined): string {
  const f = failureOf(out);
  if (f === undefined)
    return out?.stoppedAt !== undefined && VERSION.test(out.stoppedAt.version)
      ? ` at version ${out.stoppedAt.version}`
      : '';
  const codes = [
    ...(f.sqlState !== undefined ? [`SQLSTATE ${f.sqlState}`] : []),
    ...(f.mysqlErrorNumber !== undefined ? [`error ${f.mysqlErrorNumber}`] : []),
  ];
  return ` at version ${f.version}, statement ${f.statementPosition}${codes.length ? ` (${codes.join(', ')})` : ''}`;
}

/** The run's failure as status records it: version, position and codes, checked again (read from a log). */
function failureOf(out: MigrationApplyOutputs | undefined): RunFailure | undefined {
  const s = out?.stoppedAt;
  if (s === undefined || !VERSION.test(s.version) || s.position === undefined) return undefined;
  if (!Number.isSafeInteger(s.position) || s.position < 1) return undefined;
  return {
    version: s.version,
    statementPosition: s.position,
    ...(typeof s.sqlstate === 'string' && /^[0-9A-Z]{5}$/.test(s.sqlstate) ? { sqlState: s.sqlstate } : {}),
    ...(typeof s.errno === 'number' && Number.isSafeInteger(s.errno) && s.errno >= 1 && s.errno <= 65535
      ? { mysqlErrorNumber: s.errno }
      : {}),
  };
}

function recordRun(
  b: Builder,
  claim: MigrationClaim,
  outcome: RunOutcomeName,
  out?: MigrationApplyOutputs,
): void {
  const applied = (out?.appliedVersions ?? []).filter((v) => VERSION.test(v)).slice(0, 256);
  const failure = failureOf(out);
  const stopped =
    out?.stoppedAt?.version !== undefined && VERSION.test(out.stoppedAt.version)
      ? out.stoppedAt.version
      : undefined;
  b.status.lastRun = {
    outcome,
    operationId: claim.operationId,
    jobName: claim.jobName,
    ...(claim.jobUID !== undefined ? { jobUID: claim.jobUID } : {}),
    ...(claim.planRef !== undefined ? { planRef: claim.planRef } : {}),
    startedAt: claim.startedAt,
    finishedAt: b.now,
    ...(applied.length > 0 ? { appliedVersions: applied } : {}),
    ...(failure !== undefined ? { failure } : {}),
  };
  b.record({
    type: 'RunFinished',
    outcome,
    plan: claim.planRef?.name,
    startedAt: claim.startedAt,
    appliedCount: Math.min(256, applied.length),
    stoppedAtVersion: stopped,
  });
}

// ---------------------------------------------------------------------------------------------------------
// Small pieces.

interface ClaimOptions {
  readonly plan?: { readonly name: string; readonly uid: string };
  readonly planFingerprint?: string;
  readonly approval?: { readonly name: string; readonly uid: string };
  /** A History that reads back the history after the run of this plan. */
  readonly verifies?: { readonly name: string; readonly uid: string };
  /** Resolve and Verify bind what they read of the artifact in place of a resolution. */
  readonly artifact?: ArtifactClaimInputs;
}

/** The policy as it affects an operation: apply, the lock timeout and the transaction mode (unset included). */
export function migrationPolicyFingerprint(policy: MigrationView['spec']['policy']): string {
  return canonicalDigest({
    apply: policy.apply,
    lockTimeoutSeconds: policy.lockTimeoutSeconds,
    transactionMode: policy.transactionMode,
  });
}

function claimOperation(
  b: Builder,
  input: MigrationDecideInput,
  type: MigrationOperationType,
  options: ClaimOptions,
): void {
  const st = b.status;
  const res = st.resolution;
  // A source a Job resolves (OCI, Git) reads from what status recorded, which a Resolve may have just written.
  if (
    options.artifact === undefined &&
    (res === undefined || (input.artifact === undefined && !input.resolution.ok))
  ) {
    fail(b, input, type, 'SourceUnresolved', 'the source has not been resolved');
    return;
  }
  const { migration } = input;
  const planRef = options.plan ?? options.verifies;
  st.claim = buildClaim<MigrationOperationType>(
    {
      family: 'migration',
      resourceUID: migration.uid,
      resourceName: migration.name,
      generation: migration.generation,
      type,
      attempt: 1,
      inputs: {
        ...(options.artifact !== undefined ? options.artifact : resolutionInputs(res!)),
        coordinationDigest: input.coordinationDigest,
        policyFingerprint: migrationPolicyFingerprint(migration.spec.policy),
        executionBinding: input.executionBinding,
        activeDeadlineSeconds: migration.spec.activeDeadlineSeconds,
        ...(planRef !== undefined ? { planRef } : {}),
        ...(options.planFingerprint !== undefined ? { planFingerprint: options.planFingerprint } : {}),
        ...(options.approval !== undefined ? { approvalRef: options.approval } : {}),
      },
    },
    input.now,
  );
  st.lastAttemptTime = b.now;
  st.phase =
    type === 'Resolve'
      ? 'Resolving'
      : type === 'Verify'
        ? 'Verifying'
        : type === 'Apply'
          ? 'Applying'
          : options.verifies !== undefined
            ? 'VerifyingHistory'
            : 'Reading';
  if (type === 'History' && options.verifies === undefined)
    b.cond('Progressing', 'True', 'Reading', 'reading the history');
  b.requeue(0);
}

/** Blocked: the answer will not change until somebody changes an input; the interval still reads again. */
function block(b: Builder, reason: string, message: string): void {
  const { migration, now } = b.input;
  const st = b.status;
  st.nextReconciliationTime = blockedUntil(st, reason, message, now, migration.spec.intervalMs);
  st.phase = 'Blocked';
  st.observedGeneration = migration.generation;
  b.cond('Blocked', 'True', reason, message);
  b.cond('Progressing', 'False', reason, message);
  b.cond('Ready', 'False', reason, message);
  b.cond('ReconciliationFailed', 'False', reason, 'blocked, not failed');
  b.event('Warning', reason, message);
  b.requeueAt(st.nextReconciliationTime);
}

/** Failed: a configuration or dispatch failure; retried after the retry interval. */
function fail(
  b: Builder,
  input: MigrationDecideInput,
  operation: MigrationOperationType,
  reason: string,
  message: string,
): void {
  const st = b.status;
  st.phase = 'Failed';
  st.observedGeneration = input.migration.generation;
  st.nextReconciliationTime = new Date(
    input.now.getTime() + input.migration.spec.failureRetryIntervalMs,
  ).toISOString();
  b.cond('ReconciliationFailed', 'True', reason, message);
  b.cond('Ready', 'False', reason, message);
  b.record({ type: 'OperationFailed', operation, reason });
  b.event('Warning', reason, `${operation} failed: ${message}`);
  b.requeueAt(st.nextReconciliationTime);
}

function endClaim(b: Builder, claim: MigrationClaim): void {
  b.status.claim = undefined;
  if (needsLease(claim)) b.post.push({ kind: 'releaseLease' });
}

function retirePlan(b: Builder, message: string, reason = 'PlanNoLongerCurrent'): void {
  const st = b.status;
  if (st.plan === undefined) return;
  const text = `plan ${st.plan.name} retired: ${message}`;
  st.plan = undefined;
  b.post.push({ kind: 'staleApprovals', reason, message: text });
  b.event('Normal', reason, text);
}

function failureCause(input: MigrationDecideInput, result: RunnerResult): ClassifiedCause | undefined {
  return operationFailureCause(input.job, result, input.migration.spec.activeDeadlineSeconds);
}

/** A runner error code (`sequence_mismatch`) as a condition reason (`SequenceMismatch`); never its message. */
export function errorReason(result: RunnerResult, fallback: string): string {
  const code = result.error?.code;
  if (code === undefined || !/^[a-z][a-z0-9_]*$/.test(code)) return fallback;
  return code
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}

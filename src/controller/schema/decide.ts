/**
 * The PtahSchema lifecycle as one pure function: from the resource, its resolution, the claimed Job and what
 * its Pod reported, the published plan, the approvals and the clock, to the next status, the writes that
 * follow it and when to look again. `reconciler.ts` gathers the inputs and performs the outputs; everything
 * that decides lives here so it can be tested without a cluster.
 *
 * Ordering contract with the I/O layer: `pre` actions run first (a Lease that cannot be taken stops the pass
 * before anything is written), then the status is written, then `post` actions run in order. So a claim is
 * durable before its Job is created, an Apply's `dispatchStarted` is durable before its Job, and a Lease is
 * released only after the status that stops needing it.
 */
import { blockedUntil } from '../decision/blocked.ts';
import { realmRefusalLifted, realmWithdrawal, type RealmVerdict } from '../realm/realm-grant.ts';
import { SCHEMA_ENGINE_DIALECTS } from '../../protocol/dialects.ts';
import { canonicalDigest } from '../../api/digest.ts';
import { type RunnerResult, serverReportOf } from '../../protocol/result.ts';
import { buildClaim, inputsFingerprint, type OperationInputs } from '../claims/claim.ts';
import {
  deadlineExceeded,
  jobDeadlinePassed,
  oomKilled,
  operationFailureCause,
  type ClassifiedCause,
} from '../causes/classify-cause.ts';
import type { TargetConflict } from '../realm/target-conflict.ts';
import { policyFingerprint } from '../../api/fingerprint.ts';
import { MAX_RETIRED_PLANS, type ExecutionBinding, type JournalEntry } from '../../api/ptah-schema.ts';
import { DecisionBuilder, type DecisionOf, type EventSpec } from '../decision/builder.ts';
import { readRequest, readRequestPending } from '../../api/read-request.ts';
import type {
  ApprovalView,
  Claim,
  Harvest,
  JobObservation,
  OperationType,
  Phase,
  PlanCheck,
  PlanStatus,
  PublishedPlan,
  Resolution,
  SchemaStatus,
  SchemaView,
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

export interface DecideInput {
  readonly now: Date;
  readonly schema: SchemaView;
  readonly engineSupported: boolean;
  /** The canonical engine, when supported. */
  readonly engine?: 'postgres' | 'mysql';
  /**
   * Whether the realm spec.target names admits this resource: a PtahRealm's grant and the census of both
   * families. Refused, nothing new starts; a dispatched Apply and the proof it is owed still run to their end.
   */
  readonly realm: RealmVerdict;
  /** A resource in another realm reads the same database (by the identity the runner reports). */
  readonly targetConflict?: TargetConflict;
  readonly coordinationDigest: string;
  /** The manager, engine and runner releases a claimed operation runs under; bound into its identity. */
  readonly executionBinding: ExecutionBinding;
  readonly resolution: ResolutionResult;
  /**
   * An OCI source: its reference and the verification policy as read now. `resolution` is then what status
   * recorded, since Resolve and Verify are Jobs whose results the decision itself records.
   */
  readonly artifact?: ArtifactInput;
  /** The Job the claim names, when there is a claim. */
  readonly job?: JobObservation;
  /** What its Pod reported, when the Job finished. */
  readonly harvest?: Harvest;
  /**
   * A finished Apply Job another manager process dispatched that this release does not build the same from
   * the claim (jobs/job-adoption.ts): what differs. Its result is not read.
   */
  readonly unconfirmedJob?: string;
  /** For a finished Plan with changes: what publishing it would write (the plan object and its chunks). */
  readonly publication?: PlanPublication;
  /** For a finished Plan with changes: the plan as published and read back (the publication's outcome). */
  readonly published?: PublishedPlan;
  /** For a finished Plan with changes that was not published: why (a binding the runner did not report). */
  readonly publishRefused?: { readonly reason: string; readonly message: string };
  /**
   * The stored plan status.plan names, checked whenever a decision rests on it: object, chunks, and every
   * binding recomputed from live inputs.
   */
  readonly planCheck?: PlanCheck;
  readonly approvals: readonly ApprovalView[];
  /**
   * Why no approval is accepted now: the approval webhooks are not registered as this manager serves them,
   * so an approval could carry a typed approver nobody stamped. Undefined when they are.
   */
  readonly approvalsRefused?: string;
  /**
   * The realm Lease the claim runs under is no longer the uninterrupted hold whose epoch the claim
   * recorded: somebody else held it in between. Whatever the Job produced is discarded, never read.
   */
  readonly leaseContinuityLost?: boolean;
  /** The operator.ptah.run/read-requested-at annotation: a person asks for a read now. */
  readonly readRequestedAt?: string;
  /**
   * For a proof (the Observe and Plan after an Apply): the target identity the applied plan binds, read from
   * the immutable plan object. A proof read from any other database proves nothing about this Apply.
   */
  readonly appliedPlanTargetIdentity?: string;
}

export type PreAction =
  | DurableWrite
  | { readonly kind: 'acquireLease'; readonly durationSeconds: number }
  /** Put the deletion guard on the resource; nothing else happens in that pass. */
  | { readonly kind: 'addFinalizer' }
  /**
   * Copy the verified chunks of the plan an Apply is about to run into the ConfigMaps its Job mounts (Pods
   * cannot mount a chunk object). Before the status write that starts the dispatch: a projection that cannot
   * be made, or exists with other bytes, stops the pass before anything counts as dispatched.
   */
  | { readonly kind: 'projectPlan'; readonly plan: { readonly name: string; readonly uid: string } };

export type PostAction =
  | { readonly kind: 'createJob'; readonly claim: Claim }
  /** Set the finished Job's TTL, or delete a running one; `jobUID`, when recorded, names the only Job it may touch. */
  | FinishJobAction
  | {
      readonly kind: 'consumeApproval';
      readonly name: string;
      readonly uid: string;
      readonly operationId: string;
    }
  | {
      readonly kind: 'staleApprovals';
      readonly exceptPlanUID?: string;
      /** The Stale condition's reason and message on every approval this marks. */
      readonly reason: string;
      readonly message: string;
    }
  | { readonly kind: 'releaseLease' }
  /** The last write for a deleted resource: nothing it started is still running. */
  | { readonly kind: 'removeFinalizer' }
  | CollectSnapshots
  /**
   * Delete the resource's plans (and with them their chunks) that nothing names any more: not the current
   * plan, not the applied one, not a claim's, not one status.retiredPlans records (that list is the bounded
   * history, MAX_RETIRED_PLANS). `keep` holds plan names.
   */
  | { readonly kind: 'collectPlans'; readonly keep: readonly string[] };

export type { EventSpec };

export type Decision = DecisionOf<SchemaStatus, PreAction, PostAction>;

/** How often a running Job is looked at when no watch event arrives. */
export const JOB_POLL_MS = 3_000;
/** How long a finished Pod's log may stay unreadable before the result counts as lost. */
export const LOG_GRACE_MS = 120_000;

class Builder extends DecisionBuilder<SchemaStatus, JournalEntry, PreAction, PostAction> {
  constructor(
    readonly input: DecideInput,
    status: SchemaStatus,
  ) {
    super(input.now, input.schema.generation, status);
  }

  /** An entry's time is its transition's (the claimed Job's end) unless it names its own. */
  override record(
    entry: Parameters<DecisionBuilder<SchemaStatus, JournalEntry, PreAction, PostAction>['record']>[0],
  ): this {
    return super.record({ time: claimedJobEnd(this.input), ...stripUndefined(entry) });
  }
}

function stripUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/**
 * When the claimed Job ended, as the Job controller recorded it: the transition a result belongs to. Not
 * for a Job of another UID under the claimed name, nor while it runs.
 */
function claimedJobEnd(input: DecideInput): string | undefined {
  const claim = input.schema.status.claim;
  const job = input.job;
  if (claim === undefined || job === undefined || job.state !== 'finished' || !isClaimedJob(claim, job))
    return undefined;
  return job.finishedAt;
}

export function decide(input: DecideInput): Decision {
  const { schema } = input;
  const b = new Builder(input, schema.status);
  if (schema.deleting) {
    handleDeletion(b, input);
    return b.build();
  }
  if (!schema.hasFinalizer) {
    // Before anything can run: a resource deleted during its Apply must wait for that Apply to end.
    return {
      status: schema.status,
      pre: [{ kind: 'addFinalizer' }],
      post: [],
      events: [],
      requeueAfterMs: 0,
    };
  }
  // Recording the binding this pass runs under is what retires an earlier epoch, durably, for both families.
  b.status.executionBinding = input.executionBinding;
  const claim = schema.status.claim;
  if (claim !== undefined) {
    handleClaim(b, input, claim);
  } else {
    handleIdle(b, input);
  }
  return b.build();
}

// ---------------------------------------------------------------------------------------------------------
// No operation in flight: gates, resolution, and what to start next.

function handleIdle(b: Builder, input: DecideInput): void {
  const { schema, now } = input;
  const spec = schema.spec;
  const st = b.status;

  // A value that is not an instant starts nothing; recording it answered reports it once, not every pass.
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

  if (spec.suspend) {
    setPhase(b, 'Suspended');
    b.cond('Suspended', 'True', 'Suspended', 'spec.suspend is set; no new Job starts');
    b.cond('Ready', 'False', 'Suspended', 'suspended');
    b.post.push({ kind: 'releaseLease' });
    st.observedGeneration = schema.generation;
    return;
  }
  b.cond('Suspended', 'False', 'Active', 'not suspended');

  if (!input.engineSupported) {
    block(
      b,
      'EngineSupported',
      'UnsupportedEngine',
      'the engine named in spec.target.engine is not supported',
    );
    b.cond(
      'EngineSupported',
      'False',
      'UnsupportedEngine',
      `spec.target.engine is ${JSON.stringify(schema.spec.engine)}; the schema engine ships ${SCHEMA_ENGINE_DIALECTS.join(', ')}`,
    );
    return;
  }
  b.cond('EngineSupported', 'True', 'SupportedEngine', 'engine supported');

  if (!input.realm.admitted) {
    block(b, 'Ready', input.realm.reason, input.realm.message);
    return;
  }
  if (input.targetConflict?.later === true) {
    blockTargetConflict(b, input.targetConflict);
    return;
  }

  const source = sourceStep(b, schemaFamily(b, input), input);
  if (source === undefined) return;
  const { sourceChanged } = source;

  const generationChanged = st.observedGeneration !== schema.generation;
  const inputsChanged = sourceChanged || generationChanged;
  if (inputsChanged && st.plan !== undefined) {
    retirePlan(b, 'the source or the spec changed; the plan no longer describes them');
  }
  st.observedGeneration = schema.generation;

  // A waiting plan is read back whenever a decision rests on it, not only when someone approves: a plan
  // that no longer binds what an Apply would run under is retired at once, and one that no longer
  // reassembles as soon as an Apply is possible (its chunks are read only then: decision/plan-read.ts).
  if (st.plan !== undefined && input.planCheck !== undefined && !input.planCheck.ok) {
    retireOnFailedCheck(b, input.planCheck);
    // A Failed resource keeps its retry delay: the plan goes now, the read waits for the retry.
    const retryAt = st.nextReconciliationTime;
    if (st.phase === 'Failed' && retryAt !== undefined && Date.parse(retryAt) > now.getTime()) {
      b.requeueAt(retryAt);
      return;
    }
    claimOperation(b, input, 'Observe', {});
    return;
  }

  const due =
    inputsChanged ||
    realmRefusalLifted(st) ||
    st.nextReconciliationTime === undefined ||
    Date.parse(st.nextReconciliationTime) <= now.getTime();
  const phase = st.phase;

  // A Failed resource keeps its retry delay: the request is answered when the retry starts its read.
  if (phase === 'Failed' && !due) {
    b.requeueAt(st.nextReconciliationTime);
    return;
  }

  // A settled resource answers a read request by making its next read due now; the next pass starts it as
  // the interval would have, so a waiting plan is kept unless that reading retires it, and an approval that
  // arrived meanwhile waits for the fresh reading rather than racing it.
  if (readRequested && !due && SETTLED_PHASES.has(phase)) {
    st.lastReadRequest = request.recorded;
    st.nextReconciliationTime = b.now;
    b.event(
      'Normal',
      'ReadRequested',
      `read requested at ${request.recorded}: the database is read again now`,
    );
    b.requeue(0);
    return;
  }

  if ((phase === 'AwaitingApproval' || phase === 'ReadyToApply') && st.plan !== undefined && !due) {
    const decision = applyAuthorisation(input, st.plan);
    if (decision.kind === 'wait') {
      if (phase === 'AwaitingApproval') approvalGateCondition(b, input, st.plan.name);
      b.requeueAt(st.nextReconciliationTime);
      return;
    }
    if (input.planCheck === undefined) {
      // Never claimed on a plan nobody read back: the I/O layer reads it whole whenever an Apply is possible.
      b.requeue(0);
      return;
    }
    const approval = decision.kind === 'approved' ? decision.approval : undefined;
    if (approval !== undefined) {
      st.plan = {
        ...st.plan,
        approval: {
          name: approval.name,
          uid: approval.uid,
          approver: { username: approval.approver ?? '' },
          approvedAt: approval.approvedAt ?? '',
        },
      };
      b.event('Normal', 'ApprovedPlan', `approval ${approval.name} accepted for plan ${st.plan.name}`);
    }
    setPhase(b, 'ReadyToApply');
    b.cond('ApprovalRequired', 'False', approval ? 'ApprovedPlan' : 'NotRequired', 'the plan may be applied');
    claimOperation(b, input, 'Apply', {
      plan: st.plan,
      ...(approval !== undefined ? { approval: { name: approval.name, uid: approval.uid } } : {}),
    });
    return;
  }

  if (
    (phase === 'InSync' || phase === 'Blocked' || phase === 'AwaitingApproval' || phase === 'ReadyToApply') &&
    !due
  ) {
    b.requeueAt(st.nextReconciliationTime);
    return;
  }

  // Every refresh reads the database afresh: Observe, then Plan. A read that starts now answers a request
  // made before it (a Failed resource's retry, a first read, a refresh that was due anyway).
  if (readRequested) {
    st.lastReadRequest = request.recorded;
    b.event('Normal', 'ReadRequested', `read requested at ${request.recorded}: the read starts now`);
  }
  startRead(b, input);
}

/** A refresh reads the source afresh first: Resolve for an OCI source, else straight to Observe. */
function startRead(b: Builder, input: DecideInput): void {
  if (input.artifact !== undefined) startResolve(schemaFamily(b, input), input.artifact);
  else claimOperation(b, input, 'Observe', {});
}

/** How the shared Resolve → Verify steps claim, fail, block and retire for a schema. */
function schemaFamily(b: Builder, input: DecideInput): ArtifactFamily {
  return {
    claim: (type, artifact) => claimOperation(b, input, type, { artifact }),
    claimRead: () => claimOperation(b, input, 'Observe', {}),
    fail: (operation, reason, message) => fail(b, input, operation, reason, message),
    block: (reason, message) => block(b, 'ArtifactVerified', reason, message),
    retirePlan: (message, reason) => retirePlan(b, message, reason),
    freshnessUnknown: (message) => {
      b.cond('PlanReady', 'Unknown', 'SourceFreshnessUnknown', message);
      b.cond('InSync', 'Unknown', 'SourceFreshnessUnknown', message);
    },
  };
}

/** While approvals are refused the waiting resource says why; once they are accepted again, it says so. */
function approvalGateCondition(b: Builder, input: DecideInput, planName: string): void {
  if (input.approvalsRefused !== undefined) {
    b.cond('ApprovalRequired', 'True', 'ApprovalWebhooksMissing', input.approvalsRefused);
  } else {
    b.cond(
      'ApprovalRequired',
      'True',
      'AwaitingApproval',
      `approve plan ${planName} with a PtahSchemaApproval`,
    );
  }
}

/**
 * Deleting never runs SQL and never abandons an Apply: a dispatched Apply keeps its realm Lease until its
 * Job is terminal, its outcome goes to the journal and an Event, and only then is the guard removed (and
 * garbage collection takes the owned Jobs, snapshots and plans). Anything read-only simply stops.
 */
function handleDeletion(b: Builder, input: DecideInput): void {
  const st = b.status;
  const claim = st.claim;
  const job = input.job ?? { state: 'absent' as const };
  if (claim?.type === 'Apply' && claim.dispatchStarted === true && isClaimedJob(claim, job)) {
    const harvest = input.harvest;
    const waiting =
      job.state === 'running' ||
      (job.state === 'finished' &&
        (harvest === undefined || harvest.kind === 'unavailable') &&
        input.now.getTime() - Date.parse(job.finishedAt ?? input.now.toISOString()) < LOG_GRACE_MS);
    if (waiting && input.leaseContinuityLost !== true) {
      b.pre.push({ kind: 'acquireLease', durationSeconds: input.schema.spec.activeDeadlineSeconds + 60 });
      b.cond('Ready', 'False', 'Deleting', `deletion waits for apply ${claim.jobName} to end`);
      b.requeue(JOB_POLL_MS);
      return;
    }
    const result =
      harvest?.kind === 'accepted' && input.leaseContinuityLost !== true ? harvest.result : undefined;
    const outcome =
      result?.outcome === 'succeeded'
        ? 'Succeeded'
        : result?.outcome === 'failed' || result?.outcome === 'refused'
          ? 'Failed'
          : 'Unknown';
    if (outcome === 'Failed')
      b.record({ type: 'OperationFailed', operation: 'Apply', reason: errorReason(result!, 'ApplyFailed') });
    else b.record({ type: 'ApplyFinished', outcome, plan: claim.planRef?.name, startedAt: claim.startedAt });
    b.event(
      outcome === 'Succeeded' ? 'Normal' : 'Warning',
      outcome === 'Succeeded'
        ? 'ApplyFinished'
        : outcome === 'Failed'
          ? 'ApplyFailed'
          : 'ApplyOutcomeUnknown',
      `apply ${claim.jobName} ended while the resource was deleted: ${outcome.toLowerCase()}; nothing more runs`,
    );
  } else if (claim?.type === 'Apply' && claim.dispatchStarted === true) {
    b.record({
      type: 'ApplyFinished',
      outcome: 'Unknown',
      plan: claim.planRef?.name,
      startedAt: claim.startedAt,
    });
    b.event(
      'Warning',
      'ApplyOutcomeUnknown',
      `the Job of apply ${claim.jobName} is missing; nothing more runs`,
    );
  }
  if (claim !== undefined) b.post.push(finishJobAction(claim));
  st.claim = undefined;
  b.post.push({ kind: 'releaseLease' });
  b.post.push({ kind: 'removeFinalizer' });
}

/** The phases a read request moves the next read of; anything else answers it when its own read starts. */
const SETTLED_PHASES: ReadonlySet<Phase | undefined> = new Set<Phase>([
  'InSync',
  'Blocked',
  'ReadyToApply',
  'AwaitingApproval',
]);

/**
 * The read request status has not recorded as answered, if any. Only asked when no operation is running:
 * a read already under way may have read the database before the change the request is about.
 */
function pendingReadRequest(input: DecideInput): ReturnType<typeof readRequest> | undefined {
  const value = input.readRequestedAt;
  if (value === undefined || !readRequestPending(value, input.schema.status.lastReadRequest))
    return undefined;
  return readRequest(value);
}

export type Authorisation =
  | { readonly kind: 'approved'; readonly approval: ApprovalView }
  | { readonly kind: 'not-required' }
  | { readonly kind: 'wait' };

/** Whether the current plan may be applied now: policy Always needs nothing, OnApproval an exact approval. */
export function applyAuthorisation(input: DecideInput, plan: PlanStatus): Authorisation {
  const policy = input.schema.spec.policy;
  if (policy.apply === 'Never') return { kind: 'wait' };
  if (plan.destructive && !policy.allowDestructive) return { kind: 'wait' };
  if (policy.apply === 'Always' && !plan.destructive) return { kind: 'not-required' };
  const approval = exactApproval(input, plan);
  return approval ? { kind: 'approved', approval } : { kind: 'wait' };
}

/**
 * The oldest approval that names this resource and this plan by name, UID and fingerprint, carries the
 * identity admission stamped, and was not consumed. Anything short of all of that is not an approval.
 */
export function exactApproval(input: DecideInput, plan: PlanStatus): ApprovalView | undefined {
  const { schema } = input;
  const candidates = input.approvals.filter(
    (a) =>
      a.schemaRef.name === schema.name &&
      a.schemaRef.uid === schema.uid &&
      a.planRef.name === plan.name &&
      a.planRef.uid === plan.uid &&
      a.planFingerprint === plan.fingerprint &&
      a.approver !== undefined &&
      a.approver !== '' &&
      // Admission stamps all three; an approval missing any of them was never stamped.
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

// ---------------------------------------------------------------------------------------------------------
// An operation in flight.

function isProof(claim: Claim): boolean {
  return claim.type !== 'Apply' && claim.planRef !== undefined;
}

export function needsLease(claim: Claim): boolean {
  return claim.type === 'Plan' || claim.type === 'Apply' || isProof(claim);
}

/**
 * The name is borne by another object than the Job this operation created (deleted and recreated by
 * someone else): whatever it reports is not this operation's result, so it is neither read nor touched.
 * An Apply is then as good as missing: its outcome is unknown and it is never dispatched again; a read-only
 * operation starts afresh under a new name (a proof, still owed for the Apply before it, as a proof).
 */
function jobReplaced(b: Builder, input: DecideInput, claim: Claim): void {
  const message = `${claim.jobName} is not the Job this operation created; its result is not read`;
  if (claim.type === 'Apply') {
    b.event('Warning', 'ApplyOutcomeUnknown', message);
    applyEnded(b, input, claim, 'Unknown');
    return;
  }
  b.event('Warning', 'JobReplaced', message);
  if (isProof(claim)) {
    claimOperation(b, input, 'Observe', proofOptions(claim));
    return;
  }
  endChain(b, claim);
  b.requeue(0);
}

function handleClaim(b: Builder, input: DecideInput, claimed: Claim): void {
  let claim = claimed;
  const { schema } = input;
  const st = b.status;
  const dispatchedApply = claim.type === 'Apply' && claim.dispatchStarted === true;

  // A read-only operation whose inputs moved is worthless; a dispatched Apply is never abandoned, and the
  // proof that follows an Apply outranks suspension and spec changes: it is owed for what already ran.
  if (!dispatchedApply && !isProof(claim)) {
    const retiredEpoch = retiredClaimEpoch(claim, schema.status.executionBinding, input.executionBinding);
    const rotated = retiredEpoch !== undefined;
    const moved =
      schema.spec.suspend ||
      rotated ||
      claim.generation !== schema.generation ||
      (claim.type === 'Resolve' || claim.type === 'Verify'
        ? artifactClaimMoved(claim, input.artifact)
        : input.resolution.ok &&
          (input.resolution.value.contentDigest !== claim.contentDigest ||
            input.resolution.value.configMapUID !== st.resolution?.configMapUID));
    // A realm that stopped admitting the resource withdraws the one mutating operation not yet started;
    // a read already claimed runs to its end and the next idle pass is Blocked.
    const refused = claim.type === 'Apply' && !input.realm.admitted;
    if (moved || refused) {
      st.claim = undefined;
      b.post.push(finishJobAction(claim));
      if (needsLease(claim)) b.post.push({ kind: 'releaseLease' });
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
  if (dispatchedApply && claim.executionEpoch === undefined) {
    const epoch = retiredClaimEpoch(claim, schema.status.executionBinding, input.executionBinding);
    if (epoch !== undefined) st.claim = claim = { ...claim, executionEpoch: epoch };
  }

  const job = input.job ?? { state: 'absent' };
  const leaseSeconds = schema.spec.activeDeadlineSeconds + 60;

  // Checked before anything is read or created: a proof inherits its Apply's hold, so a gap in that hold
  // between the Apply and the proof (somebody else held the realm) is noticed even before the proof's Job.
  if (input.leaseContinuityLost === true && needsLease(claim) && claim.leaseEpoch !== undefined) {
    leaseLost(b, input, claim, job);
    return;
  }

  if (job.state === 'absent') {
    if (claim.type === 'Apply') {
      if (claim.dispatchStarted) {
        // The Job was meant to exist and does not: whatever happened is unknown, and only a fresh
        // observation can say where the database stands. It is never created again.
        b.event('Warning', 'ApplyOutcomeUnknown', `the Job of apply ${claim.jobName} is missing`);
        applyEnded(b, input, claim, 'Unknown');
        return;
      }
      dispatchApply(b, input, claim, leaseSeconds);
      return;
    }
    // A read-only Job that vanished is created again under the same name: that is another object, so the
    // UID recorded for the vanished one goes and the next pass records the new one.
    if (claim.jobUID !== undefined) {
      const { jobUID: _vanished, ...unrecorded } = claim;
      claim = unrecorded;
      st.claim = claim;
    }
    if (needsLease(claim)) b.pre.push({ kind: 'acquireLease', durationSeconds: leaseSeconds });
    b.post.push({ kind: 'createJob', claim });
    b.requeue(JOB_POLL_MS);
    return;
  }

  if (!isClaimedJob(claim, job)) {
    jobReplaced(b, input, claim);
    return;
  }
  if (claim.jobUID === undefined && job.uid !== '') {
    // From now on only this object's result counts: a Job recreated under the name is somebody else's.
    claim = { ...claim, jobUID: job.uid };
    st.claim = claim;
  }

  if (job.state === 'running' && input.harvest?.kind === 'credential-unavailable') {
    credentialMissing(b, input, claim, input.harvest.message);
    return;
  }
  if (job.state === 'running') {
    if (needsLease(claim)) b.pre.push({ kind: 'acquireLease', durationSeconds: leaseSeconds });
    b.requeue(JOB_POLL_MS);
    return;
  }

  // An Apply an upgrade retired: once its Job has ended (every Pod of it gone) the TTL is all it gets; its
  // result is never read, replayed or certified, and only a fresh reading says where the database stands.
  const retired = dispatchedApply ? retiredClaimEpoch(claim, undefined, input.executionBinding) : undefined;
  if (retired !== undefined) {
    b.post.push(finishJobAction(claim));
    b.event(
      'Warning',
      'ApplyOutcomeUnknown',
      `apply ${claim.jobName} ran under execution binding epoch ${retired}, retired by ${input.executionBinding.epoch}: its result is not read, and a fresh observation decides`,
    );
    applyEnded(b, input, claim, 'Unknown');
    return;
  }
  // An Apply another process dispatched, that this release does not build the same: it cannot adopt it.
  if (dispatchedApply && input.unconfirmedJob !== undefined) {
    b.post.push(finishJobAction(claim));
    b.event('Warning', 'ApplyOutcomeUnknown', unconfirmedMessage(claim.jobName, input.unconfirmedJob));
    applyEnded(b, input, claim, 'Unknown');
    return;
  }

  const harvest = input.harvest ?? { kind: 'unavailable', message: 'the result was not read' };
  if (harvest.kind === 'unavailable') {
    const finishedAt = job.finishedAt !== undefined ? Date.parse(job.finishedAt) : input.now.getTime();
    if (input.now.getTime() - finishedAt < LOG_GRACE_MS) {
      if (needsLease(claim)) b.pre.push({ kind: 'acquireLease', durationSeconds: leaseSeconds });
      b.requeue(JOB_POLL_MS);
      return;
    }
  }
  b.post.push(finishJobAction(claim));

  if (harvest.kind !== 'accepted') {
    // What the node or the Job says outranks a missing frame: it says why there is none.
    const classified =
      harvest.kind === 'oom-killed'
        ? oomKilled(harvest.exitCode)
        : jobDeadlinePassed(input.job)
          ? deadlineExceeded(schema.spec.activeDeadlineSeconds)
          : undefined;
    const reason =
      classified?.reason ??
      (harvest.kind === 'snapshot-refused'
        ? 'SnapshotRefused'
        : harvest.kind === 'source-refused'
          ? 'ArtifactFetchFailed'
          : harvest.kind === 'refused'
            ? 'ResultRefused'
            : 'ResultLost');
    const message =
      classified?.message ??
      (harvest.kind === 'snapshot-refused'
        ? `the snapshot failed its check${harvest.file ? ` at file ${harvest.file}` : ''}; nothing ran`
        : harvest.kind === 'source-refused'
          ? sourceRefusalMessage(harvest)
          : harvest.kind === 'oom-killed'
            ? 'the operation container was killed for its memory'
            : `no acceptable result: ${harvest.message}`);
    if (claim.type === 'Apply' && harvest.kind !== 'snapshot-refused') {
      // A mutating operation whose result cannot be read has an unknown outcome, never a success.
      b.event(
        'Warning',
        'ApplyOutcomeUnknown',
        classified !== undefined ? `the outcome of the apply is unknown: ${message}` : message,
      );
      applyEnded(b, input, claim, 'Unknown');
      return;
    }
    endChain(b, claim);
    fail(b, input, claim.type, reason, message);
    return;
  }
  handleResult(b, input, claim, harvest.result);
}

/**
 * The operation container cannot start: its Secret or key is missing. The Job is deleted, so it cannot start
 * later once the Secret appears; the next attempt is a new operation after the retry interval. An Apply's
 * container never started, but a Pod deleted in the same instant cannot be proved idle, so its outcome is
 * unknown and its proof reads the database (and fails the same way while the Secret stays missing).
 */
function credentialMissing(b: Builder, input: DecideInput, claim: Claim, message: string): void {
  b.post.push(finishJobAction(claim));
  if (claim.type === 'Apply') {
    b.event('Warning', 'CredentialUnavailable', `apply ${claim.jobName} cannot start: ${message}`);
    applyEnded(b, input, claim, 'Unknown');
    return;
  }
  endChain(b, claim);
  fail(b, input, claim.type, 'CredentialUnavailable', message);
}

/**
 * The realm Lease the claim runs under is not the uninterrupted hold its epoch names: whatever its Job
 * produced is discarded unread. A dispatched Apply's outcome is then unknown; a proof proves nothing, so
 * the Apply's outcome stays unknown until a fresh proof under a new hold reads the database.
 */
function leaseLost(b: Builder, input: DecideInput, claim: Claim, job: JobObservation): void {
  b.event(
    'Warning',
    'LeaseContinuityLost',
    `the realm Lease changed hands during ${claim.type.toLowerCase()} ${claim.jobName}; its result is discarded`,
  );
  if (job.state !== 'absent') b.post.push(finishJobAction(claim));
  if (claim.type === 'Apply') {
    if (claim.dispatchStarted === true) {
      applyEnded(b, input, claim, 'Unknown', { freshHold: true });
      return;
    }
    endChain(b, claim);
    b.requeue(0);
    return;
  }
  if (isProof(claim)) {
    b.cond('InSync', 'Unknown', 'LeaseContinuityLost', 'the proof after the apply lost its realm Lease');
    claimOperation(b, input, 'Observe', {
      ...proofOptions(claim),
      leaseEpoch: undefined,
      applyOutcome: 'Unknown',
    });
    return;
  }
  endChain(b, claim);
  b.requeue(0);
}

/** Another realm reached the same database first: only one realm may change a database. */
function blockTargetConflict(b: Builder, conflict: TargetConflict): void {
  b.status.claim = undefined;
  block(
    b,
    'Ready',
    'RealmConflict',
    `PtahSchema ${conflict.other} manages the same database in another realm; only one realm may change it`,
  );
}

function dispatchApply(b: Builder, input: DecideInput, claim: Claim, leaseSeconds: number): void {
  const st = b.status;
  const conflict = input.targetConflict;
  if (conflict?.later === true) {
    // Seen before the mutating operation, not at the next idle pass: nothing was dispatched yet.
    b.post.push({ kind: 'releaseLease' });
    blockTargetConflict(b, conflict);
    return;
  }
  if (conflict?.otherApplying === true) {
    // The later resource's Apply runs to its end before this one starts on the same database.
    b.requeue(5_000);
    return;
  }
  const plan = st.plan;
  const stillCurrent = plan !== undefined && claim.planRef !== undefined && plan.uid === claim.planRef.uid;
  const approvalOk =
    claim.approvalRef === undefined ||
    input.approvals.some((a) => a.uid === claim.approvalRef!.uid && !a.consumed && !a.stale);
  const check = input.planCheck;
  const checkOk = check !== undefined && check.ok;
  const auth = plan !== undefined ? applyAuthorisation(input, plan) : { kind: 'wait' as const };
  if (!stillCurrent || !approvalOk || !checkOk || auth.kind === 'wait' || input.schema.spec.suspend) {
    // Withdrawn before dispatch: nothing ran, nothing is recorded as applied.
    st.claim = undefined;
    b.post.push({ kind: 'releaseLease' });
    b.event(
      'Warning',
      'ApplyWithdrawn',
      'the apply was withdrawn before dispatch: its plan or approval is no longer current',
    );
    if (check !== undefined && !check.ok && stillCurrent) retireOnFailedCheck(b, check);
    else if (!stillCurrent) retirePlan(b, 'the plan is no longer current');
    setPhase(b, st.plan !== undefined ? 'AwaitingApproval' : 'Pending');
    b.requeue(0);
    return;
  }
  b.pre.push({ kind: 'acquireLease', durationSeconds: leaseSeconds });
  b.pre.push({ kind: 'projectPlan', plan: { name: plan!.name, uid: plan!.uid } });
  st.claim = { ...claim, dispatchStarted: true };
  setPhase(b, 'Applying');
  b.cond('Applying', 'True', 'OperationInProgress', `applying plan ${plan!.name}`);
  if (claim.approvalRef !== undefined) {
    b.post.push({
      kind: 'consumeApproval',
      name: claim.approvalRef.name,
      uid: claim.approvalRef.uid,
      operationId: claim.operationId,
    });
    b.record({
      type: 'ApprovalAccepted',
      approval: claim.approvalRef.name,
      plan: plan!.name,
      approver: plan!.approval?.approver.username,
    });
  }
  b.post.push({ kind: 'createJob', claim: st.claim });
  b.event('Normal', 'ApplyStarted', `applying plan ${plan!.name}`);
  b.requeue(JOB_POLL_MS);
}

function handleResult(b: Builder, input: DecideInput, claim: Claim, result: RunnerResult): void {
  const { schema } = input;
  const st = b.status;

  if ((claim.type === 'Resolve' || claim.type === 'Verify') && input.artifact !== undefined) {
    endChain(b, claim);
    if (claim.type === 'Resolve') resolveResult(b, schemaFamily(b, input), input.artifact, result);
    else verifyResult(b, schemaFamily(b, input), input.artifact, claim, result);
    return;
  }

  if (isProof(claim) && result.outcome === 'succeeded' && !provesAppliedTarget(input, result)) {
    refuseProofFromAnotherTarget(b, input, claim);
    return;
  }
  if (isProof(claim) && result.outcome === 'succeeded' && proofSuperseded(b, input, claim)) {
    settleSuperseded(b, input, claim);
    return;
  }

  if (claim.type === 'Observe') {
    const drift = result.outputs.drift;
    if (result.outcome !== 'succeeded' || drift === undefined) {
      const cause = failureCause(input, result);
      const reason = cause?.reason ?? errorReason(result, 'ObserveFailed');
      // A desired state that does not load, a deadline: the database may be perfectly readable.
      if (cause === undefined || cause.databaseUnreachable)
        b.cond('DatabaseReachable', 'False', reason, cause?.message ?? 'the database could not be read');
      endChain(b, claim);
      fail(b, input, 'Observe', reason, cause?.message ?? 'observe failed');
      return;
    }
    st.drift = {
      reportDigest: drift.reportDigest,
      dialect: st.target?.engine ?? 'postgres',
      total: drift.total,
      highestSeverity: severity(drift.highestSeverity),
      categories: Object.entries(drift.categories)
        .sort(([a], [b2]) => a.localeCompare(b2))
        .slice(0, 64)
        .map(([category, count]) => ({
          category: category.replace(/[^a-z0-9_]/g, '_'),
          count,
          severity: 'info' as const,
        })),
      observedAt: b.now,
    };
    // The frame decoder checks only its top level: the server is taken only in the allowed words.
    const server = serverReportOf(drift.server);
    st.target = {
      ...st.target,
      lastObservedAt: b.now,
      ...(server !== undefined ? { server } : {}),
      ...(result.target?.identityDigest !== undefined &&
      /^sha256:[0-9a-f]{64}$/.test(result.target.identityDigest)
        ? { identityDigest: result.target.identityDigest }
        : {}),
    };
    b.cond('DatabaseReachable', 'True', 'Observed', 'the database was read');
    if (!isProof(claim) && input.targetConflict?.later === true) {
      endChain(b, claim);
      blockTargetConflict(b, input.targetConflict);
      return;
    }
    b.cond(
      'DriftDetected',
      drift.drifted ? 'True' : 'False',
      drift.drifted ? 'Drift' : 'NoDrift',
      `${drift.total} findings`,
    );
    claimOperation(b, input, 'Plan', isProof(claim) ? proofOptions(claim) : {});
    return;
  }

  if (claim.type === 'Plan') {
    const plan = result.outputs.plan;
    if (result.error?.code === 'protected_table') {
      endChain(b, claim);
      st.plan = undefined;
      block(
        b,
        'PlanReady',
        'ProtectedTable',
        'the plan would change a table listed in spec.policy.protectedTables',
      );
      b.cond('InSync', 'False', 'ProtectedTable', 'a protected table differs from the declaration');
      b.event(
        'Warning',
        'ProtectedTableRefused',
        'the plan would change a protected table; nothing was published',
      );
      return;
    }
    if (result.outcome !== 'succeeded' || plan === undefined) {
      const cause = failureCause(input, result);
      const reason = cause?.reason ?? errorReason(result, 'PlanFailed');
      if (cause?.databaseUnreachable === true) b.cond('DatabaseReachable', 'False', reason, cause.message);
      endChain(b, claim);
      fail(b, input, 'Plan', reason, cause?.message ?? 'plan failed');
      return;
    }
    if (plan.planOutcome === 'NoChanges') {
      converged(b, input, claim);
      return;
    }
    if (input.published === undefined && input.publishRefused === undefined && input.publication) {
      b.publish(input.publication);
      return;
    }
    if (input.published === undefined) {
      endChain(b, claim);
      const refused = input.publishRefused;
      fail(
        b,
        input,
        'Plan',
        refused?.reason ?? 'PublishFailed',
        refused?.message ?? 'the plan could not be published',
      );
      return;
    }
    const published = input.published.plan;
    endChain(b, claim);
    if (isProof(claim) && applyOutcomeOf(claim, st) !== 'Unknown') {
      // An Apply ran and the database still differs: a process exit is not convergence.
      b.record({ type: 'Verified', outcome: 'DriftRemains', plan: claim.planRef?.name });
      st.plan = undefined;
      b.cond('InSync', 'False', 'DriftRemains', 'the database still differs after the apply');
      fail(b, input, 'Plan', 'DriftRemains', 'the database still differs after the apply');
      return;
    }
    if (isProof(claim)) {
      // An Apply of unknown outcome (it may never have run): the fresh plan is simply the next plan.
      b.record({ type: 'Verified', outcome: 'DriftRemains', plan: claim.planRef?.name });
    }
    const same = st.plan !== undefined && st.plan.uid === published.uid;
    st.plan = same
      ? { ...published, ...(st.plan?.approval ? { approval: st.plan.approval } : {}) }
      : published;
    if (!same) {
      collectPlans(b, published.name);
      b.record({
        type: 'PlanPublished',
        plan: published.name,
        reason: 'Published',
        time: published.createdAt,
      });
      b.event('Normal', 'PlanPublished', `plan ${published.name} published`);
      b.post.push({
        kind: 'staleApprovals',
        exceptPlanUID: published.uid,
        reason: 'PlanNoLongerCurrent',
        message: `plan ${published.name} replaced the plan it names`,
      });
    }
    st.nextReconciliationTime = new Date(input.now.getTime() + schema.spec.intervalMs).toISOString();
    st.lastAttemptTime = claim.startedAt;
    b.cond('PlanReady', 'True', 'PlanReady', `plan ${published.name} is ready`);
    b.cond('InSync', 'False', 'PlanReady', 'the database differs from the declaration');
    b.cond('ReconciliationFailed', 'False', 'Succeeded', 'the last operation succeeded');
    const policy = schema.spec.policy;
    if (published.destructive && !policy.allowDestructive) {
      block(
        b,
        'Ready',
        'DestructiveChangesDisabled',
        'the plan is destructive and spec.policy.allowDestructive is false',
        true,
      );
      return;
    }
    if (policy.apply === 'Never') {
      block(
        b,
        'Ready',
        'ApplyDisabled',
        'spec.policy.apply is Never: plans are recorded, none is applied',
        true,
      );
      return;
    }
    if (policy.apply === 'Always' && !published.destructive) {
      setPhase(b, 'ReadyToApply');
      b.cond('ApprovalRequired', 'False', 'NotRequired', 'policy Always');
      b.cond('Ready', 'False', 'ApplyPending', 'the plan is about to be applied');
      b.requeue(0);
      return;
    }
    setPhase(b, 'AwaitingApproval');
    b.cond(
      'ApprovalRequired',
      'True',
      'AwaitingApproval',
      `approve plan ${published.name} with a PtahSchemaApproval`,
    );
    b.cond('Ready', 'False', 'AwaitingApproval', 'waiting for an approval');
    b.requeue(0);
    return;
  }

  // Apply.
  const cause = result.outcome === 'succeeded' ? undefined : failureCause(input, result);
  if (result.outcome === 'succeeded' || result.outcome === 'uncertain') {
    b.event(
      result.outcome === 'succeeded' ? 'Normal' : 'Warning',
      result.outcome === 'succeeded' ? 'ApplyFinished' : 'ApplyOutcomeUnknown',
      `the apply ended${partialApplyText(result)}${cause !== undefined ? ` (${cause.reason}: ${cause.message})` : ''}; a fresh observation decides whether the database converged`,
    );
    applyEnded(b, input, claim, result.outcome === 'succeeded' ? 'Succeeded' : 'Unknown');
    return;
  }
  // The runner reports that nothing it started changed the database (or nothing started at all).
  endChain(b, claim);
  st.plan = undefined;
  b.cond('Applying', 'False', 'OperationFailed', 'the apply failed');
  if (cause?.databaseUnreachable === true) b.cond('DatabaseReachable', 'False', cause.reason, cause.message);
  fail(
    b,
    input,
    'Apply',
    cause?.reason ?? errorReason(result, 'ApplyFailed'),
    cause !== undefined
      ? `the apply failed and changed nothing: ${cause.message}`
      : applyFailureMessage(result),
  );
}

function failureCause(input: DecideInput, result: RunnerResult): ClassifiedCause | undefined {
  return operationFailureCause(input.job, result, input.schema.spec.activeDeadlineSeconds);
}

/**
 * Where a partial MySQL apply stopped, from the runner's numbers (checked again here: the frame is read from
 * a Pod log). Empty when the runner reported none.
 */
function partialApplyText(result: RunnerResult): string {
  const p = result.outputs.apply?.partial;
  const count = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
  if (p === undefined || !count(p.position) || !count(p.applied)) return '';
  const codes = [
    ...(count(p.errno) ? [`error ${p.errno}`] : []),
    ...(typeof p.sqlstate === 'string' && /^[0-9A-Z]{5}$/.test(p.sqlstate) ? [`SQLSTATE ${p.sqlstate}`] : []),
  ];
  return ` partially: statement ${p.position} failed${codes.length ? ` (${codes.join(', ')})` : ''} after ${p.applied} statement(s) committed on their own, never rolled back`;
}

/** A proof counts only when read from the database the applied plan was computed against. */
function provesAppliedTarget(input: DecideInput, result: RunnerResult): boolean {
  const expected = input.appliedPlanTargetIdentity;
  return expected !== undefined && result.target?.identityDigest === expected;
}

/**
 * The Secret now names another database (or the applied plan's binding cannot be read): whatever that
 * database says, it is not where the plan ran, so it can neither prove convergence nor remaining drift. The
 * spent plan goes; the retry reads the database the Secret names now, afresh.
 */
function refuseProofFromAnotherTarget(b: Builder, input: DecideInput, claim: Claim): void {
  const st = b.status;
  endChain(b, claim);
  st.plan = undefined;
  const message =
    input.appliedPlanTargetIdentity === undefined
      ? 'the applied plan cannot be read, so no database can prove its apply'
      : 'the database read after the apply is not the one the plan was computed against';
  b.record({ type: 'Verified', outcome: 'TargetChanged', plan: claim.planRef?.name });
  b.cond('InSync', 'False', 'TargetIdentityMismatch', message);
  fail(b, input, claim.type, 'TargetIdentityMismatch', message);
}

/** Constant text by error code: the runner's own message may name things status must not carry. */
function applyFailureMessage(result: RunnerResult): string {
  if (result.error?.code === 'target_identity_mismatch')
    return 'the Secret names another database than the plan was computed against; nothing ran';
  if (result.error?.code === 'invalid_database_url')
    return 'the database URL in the Secret is refused (the Pod log names the part); nothing ran';
  return result.outcome === 'refused'
    ? 'the apply was refused before it started; nothing ran'
    : 'apply failed';
}

/** How the Apply a proof verifies ended: as its claim carries it, else as the journal recorded it. */
function applyOutcomeOf(claim: Claim, st: SchemaStatus): string | undefined {
  if (claim.applyOutcome !== undefined) return claim.applyOutcome;
  return [...(st.journal?.entries ?? [])].reverse().find((e) => e.type === 'ApplyFinished')?.outcome;
}

/**
 * An Apply is over, or can no longer be followed: the journal records how it ended (Unknown when nothing
 * trustworthy says), then Observe and Plan run again under the same Lease, owed either way; only a
 * no-change plan says InSync. The Apply itself is never dispatched again.
 */
function applyEnded(
  b: Builder,
  input: DecideInput,
  claim: Claim,
  outcome: 'Succeeded' | 'Unknown',
  how: { readonly freshHold?: boolean } = {},
): void {
  b.record({ type: 'ApplyFinished', outcome, plan: claim.planRef?.name, startedAt: claim.startedAt });
  b.cond('Applying', 'False', 'VerifyingConvergence', 'the apply ended');
  // The proof runs under the Apply's own hold: it inherits the epoch, so any gap is seen as a gap. An
  // Apply whose hold was already lost has none to pass on; its proof takes a new one.
  const leaseEpoch = how.freshHold === true ? undefined : claim.leaseEpoch;
  claimOperation(b, input, 'Observe', { ...proofOptions(claim), leaseEpoch, applyOutcome: outcome });
}

/**
 * The proof of an Apply carries its plan and approval references (never the plan status itself), the hold
 * it runs under and how the Apply ended.
 */
function proofOptions(claim: Claim): ClaimOptions {
  return {
    ...(claim.planRef !== undefined ? { planRefOnly: claim.planRef } : {}),
    ...(claim.approvalRef !== undefined ? { approval: claim.approvalRef } : {}),
    ...(claim.leaseEpoch !== undefined ? { leaseEpoch: claim.leaseEpoch } : {}),
    ...(claim.applyOutcome !== undefined ? { applyOutcome: claim.applyOutcome } : {}),
    proof: true,
  };
}

function converged(b: Builder, input: DecideInput, claim: Claim): void {
  const st = b.status;
  endChain(b, claim);
  if (isProof(claim) && claim.planRef !== undefined) {
    const plan = st.plan;
    st.applied = {
      planRef: claim.planRef,
      planFingerprint:
        plan?.uid === claim.planRef.uid ? plan.fingerprint : (plan?.fingerprint ?? claim.inputsFingerprint),
      contentDigest: claim.contentDigest ?? st.resolution?.contentDigest ?? claim.inputsFingerprint,
      completedAt: b.now,
    };
    b.record({ type: 'Verified', outcome: 'InSync', plan: claim.planRef.name });
    collectPlans(b);
    b.event('Normal', 'Converged', `a fresh plan after applying ${claim.planRef.name} has no changes`);
  }
  if (st.plan !== undefined)
    b.post.push({
      kind: 'staleApprovals',
      reason: 'PlanNoLongerCurrent',
      message: 'the database matches the declaration; the plan it names is not needed',
    });
  st.plan = undefined;
  setPhase(b, 'InSync');
  st.nextReconciliationTime = new Date(input.now.getTime() + input.schema.spec.intervalMs).toISOString();
  st.lastAttemptTime = claim.startedAt;
  b.cond('InSync', 'True', 'NoChanges', 'a fresh plan has no changes');
  b.cond('Ready', 'True', 'InSync', 'the database matches the declaration');
  b.cond('PlanReady', 'False', 'NoChanges', 'nothing to apply');
  b.cond('ApprovalRequired', 'False', 'NotRequired', 'nothing to approve');
  b.cond('ReconciliationFailed', 'False', 'Succeeded', 'the last operation succeeded');
  b.requeueAt(st.nextReconciliationTime);
}

// ---------------------------------------------------------------------------------------------------------
// Small pieces.

interface ClaimOptions {
  readonly plan?: PlanStatus;
  /** A proof claim carries the applied plan's reference without the plan status. */
  readonly planRefOnly?: { readonly name: string; readonly uid: string };
  readonly approval?: { readonly name: string; readonly uid: string };
  readonly proof?: boolean;
  /** A proof runs under the hold of the Apply it verifies, whose epoch it carries. */
  readonly leaseEpoch?: string | undefined;
  readonly applyOutcome?: 'Succeeded' | 'Unknown';
  /** Resolve and Verify bind what they read of the artifact in place of a resolution. */
  readonly artifact?: ArtifactClaimInputs;
}

function claimOperation(b: Builder, input: DecideInput, type: OperationType, options: ClaimOptions): void {
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
  const { schema } = input;
  st.claim = buildClaim(
    {
      resourceUID: schema.uid,
      resourceName: schema.name,
      generation: schema.generation,
      type,
      attempt: 1,
      inputs: operationInputs(input, res, options),
    },
    input.now,
  );
  if (options.leaseEpoch !== undefined) st.claim = { ...st.claim, leaseEpoch: options.leaseEpoch };
  if (options.applyOutcome !== undefined) st.claim = { ...st.claim, applyOutcome: options.applyOutcome };
  st.lastAttemptTime = b.now;
  const proof = options.proof === true;
  const phase: Phase =
    type === 'Apply' ? 'ReadyToApply' : proof ? 'VerifyingConvergence' : CLAIM_PHASES[type];
  setPhase(b, phase);
  if (type !== 'Apply' && !proof)
    b.cond('Ready', st.phase === 'InSync' ? 'True' : 'False', 'Refreshing', 'reading the database');
  b.requeue(0);
}

const CLAIM_PHASES: Readonly<Record<OperationType, Phase>> = {
  Resolve: 'Resolving',
  Verify: 'Verifying',
  Observe: 'Observing',
  Plan: 'Planning',
  Apply: 'ReadyToApply',
};

/** What a claim made now with these options would bind: the live inputs of the resource. */
function operationInputs(
  input: DecideInput,
  res: Resolution | undefined,
  options: ClaimOptions,
): OperationInputs {
  const { schema } = input;
  const planRef = options.plan ? { name: options.plan.name, uid: options.plan.uid } : options.planRefOnly;
  return {
    ...(options.artifact !== undefined ? options.artifact : resolutionInputs(res!)),
    coordinationDigest: input.coordinationDigest,
    policyFingerprint: policyFingerprint({
      apply: schema.spec.policy.apply,
      allowDestructive: schema.spec.policy.allowDestructive,
      protectedTables: [...schema.spec.policy.protectedTables],
      exclude: [...schema.spec.policy.exclude],
    }),
    executionBinding: input.executionBinding,
    activeDeadlineSeconds: schema.spec.activeDeadlineSeconds,
    ...(planRef !== undefined ? { planRef } : {}),
    ...(options.plan !== undefined ? { planFingerprint: options.plan.fingerprint } : {}),
    ...(options.approval !== undefined ? { approvalRef: options.approval } : {}),
  };
}

/**
 * A proof whose inputs were taken over while it ran: a newer generation, another policy, execution binding
 * or source than the claim bound. What it read answers the old inputs, so it settles nothing about the new.
 */
function proofSuperseded(b: Builder, input: DecideInput, claim: Claim): boolean {
  if (claim.generation !== input.schema.generation) return true;
  const res = b.status.resolution;
  if (res === undefined || !input.resolution.ok) return false;
  return (
    inputsFingerprint(claim.type, operationInputs(input, res, proofOptions(claim))) !==
    claim.inputsFingerprint
  );
}

/** The journal says the proof was superseded, and a fresh read under the new inputs starts now. */
function settleSuperseded(b: Builder, input: DecideInput, claim: Claim): void {
  const st = b.status;
  endChain(b, claim);
  b.record({ type: 'Verified', outcome: 'Superseded', plan: claim.planRef?.name, reason: 'InputsChanged' });
  b.event(
    'Normal',
    'Superseded',
    `the observation after applying ${claim.planRef?.name ?? 'the plan'} was taken over by newer inputs; reading again`,
  );
  if (st.plan !== undefined && st.plan.uid === claim.planRef?.uid) st.plan = undefined;
  b.cond('InSync', 'Unknown', 'Superseded', 'newer inputs took over before the apply was verified');
  claimOperation(b, input, 'Observe', {});
}

/** Once a transition leaves plans behind: keep what status still names (read when the post action runs). */
function collectPlans(b: Builder, ...also: string[]): void {
  const st = b.status;
  const keep = new Set<string>(also);
  if (st.plan !== undefined) keep.add(st.plan.name);
  if (st.applied !== undefined) keep.add(st.applied.planRef.name);
  if (st.claim?.planRef !== undefined) keep.add(st.claim.planRef.name);
  for (const r of st.retiredPlans ?? []) keep.add(r.name);
  b.post.push({ kind: 'collectPlans', keep: [...keep].sort() });
}

function setPhase(b: Builder, phase: Phase): void {
  b.status.phase = phase;
}

/** Blocked: the answer will not change until somebody changes an input; the interval still refreshes it. */
function block(b: Builder, type: string, reason: string, message: string, keepPlan = false): void {
  const { schema, now } = b.input;
  const st = b.status;
  st.nextReconciliationTime = blockedUntil(st, reason, message, now, schema.spec.intervalMs);
  setPhase(b, 'Blocked');
  st.observedGeneration = schema.generation;
  if (!keepPlan) st.plan = undefined;
  b.cond(type, 'False', reason, message);
  b.cond('Ready', 'False', reason, message);
  b.cond('ReconciliationFailed', 'False', reason, 'blocked, not failed');
  b.event('Warning', reason, message);
  b.requeueAt(st.nextReconciliationTime);
}

/** Failed: something went wrong and a retry is reasonable, after the retry interval. */
function fail(
  b: Builder,
  input: DecideInput,
  operation: OperationType,
  reason: string,
  message: string,
): void {
  const st = b.status;
  setPhase(b, 'Failed');
  st.observedGeneration = input.schema.generation;
  st.nextReconciliationTime = new Date(
    input.now.getTime() + input.schema.spec.failureRetryIntervalMs,
  ).toISOString();
  b.cond('ReconciliationFailed', 'True', reason, message);
  b.cond('Ready', 'False', reason, message);
  b.record({ type: 'OperationFailed', operation, reason });
  b.event('Warning', reason, `${operation} failed: ${message}`);
  b.requeueAt(st.nextReconciliationTime);
}

/** The claim is done; a Lease held for it goes once the status that no longer needs it is written. */
function endChain(b: Builder, claim: Claim): void {
  b.status.claim = undefined;
  if (needsLease(claim)) b.post.push({ kind: 'releaseLease' });
}

function retirePlan(b: Builder, message: string, reason = 'PlanNoLongerCurrent'): void {
  const st = b.status;
  if (st.plan === undefined) return;
  const text = `plan ${st.plan.name} retired: ${message}`;
  st.plan = undefined;
  b.post.push({ kind: 'staleApprovals', reason, message: text });
  b.cond('PlanReady', 'False', reason, message);
  b.event(reason === 'PlanTampered' ? 'Warning' : 'Normal', reason, text);
}

/**
 * The stored plan failed a read-back: gone (re-plan), tampered (retired for good, so the same bindings are
 * published again under a new name with new chunks), or superseded by live inputs (the journal says so).
 * Every approval naming it goes Stale with the reason.
 */
function retireOnFailedCheck(b: Builder, check: Exclude<PlanCheck, { ok: true }>): void {
  const st = b.status;
  const plan = st.plan;
  if (plan === undefined) return;
  switch (check.kind) {
    case 'gone':
      return retirePlan(b, check.message);
    case 'tampered': {
      const retired = [
        ...(st.retiredPlans ?? []),
        { name: plan.name, uid: plan.uid, fingerprint: plan.fingerprint, reason: 'PlanTampered' },
      ];
      st.retiredPlans = retired.slice(-MAX_RETIRED_PLANS);
      const where = check.failing === plan.name ? 'the plan' : `chunk ${check.failing}`;
      return retirePlan(
        b,
        `${where} failed its read-back (${check.reason}); it is never applied, and a new plan is published`,
        'PlanTampered',
      );
    }
    case 'superseded': {
      const reason = supersededBy(check.fields);
      b.record({
        type: 'Verified',
        outcome: 'Superseded',
        plan: plan.name,
        reason: reason === 'ExecutionBindingChanged' ? reason : 'LiveBindingChanged',
      });
      return retirePlan(
        b,
        `what it binds no longer matches the live inputs (${check.fields.join(', ')})`,
        reason,
      );
    }
  }
}

const SEVERITIES = ['safe', 'info', 'warning', 'error', 'destructive'] as const;
function severity(s: string): (typeof SEVERITIES)[number] {
  return (SEVERITIES as readonly string[]).includes(s) ? (s as (typeof SEVERITIES)[number]) : 'safe';
}

/** A runner error code (`plans_differ`) as a condition reason (`PlansDiffer`); never its message. */
export function errorReason(result: RunnerResult, fallback: string): string {
  const code = result.error?.code;
  if (code === undefined || !/^[a-z][a-z0-9_]*$/.test(code)) return fallback;
  return code
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}

/** A digest of the status fields a reader compares, to skip writes that change nothing. */
export function statusDigest(status: SchemaStatus): string {
  return canonicalDigest(JSON.parse(JSON.stringify(status)) as never);
}

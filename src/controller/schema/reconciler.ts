/**
 * The I/O around `decide`: gather the inputs from the API server, perform the decision's writes in the
 * order it fixes (pre → status → post), and say when to look again. Re-reads everything on every pass and
 * writes only the difference, so running it twice is harmless.
 *
 * The manager never reads a Secret and never opens a database connection: the Secret is named in the Job,
 * and Kubernetes resolves it inside the Pod.
 */
import type { ConditionUpdate } from '../../api/conditions.ts';
import { schemaEngineShips } from '../../protocol/dialects.ts';
import type { ApprovalGate } from '../runtime/approval-webhook-gate.ts';
import type { BatchV1Api, CoreV1Api, V1Job } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { canonicalDigest } from '../../api/digest.ts';
import { realmDigestOf } from '../../api/fingerprint.ts';
import { realmRefOf } from '../../api/ptah-realm.ts';
import { LABELS, READ_REQUESTED_ANNOTATION, SCHEMA_FINALIZER } from '../../api/meta.ts';
import {
  canonicalEngine,
  type ExecutionBinding,
  type PtahSchema,
  type Resolution,
} from '../../api/ptah-schema.ts';
import type { PtahSchemaApproval } from '../../api/ptah-schema-approval.ts';
import type { PtahSchemaPlan } from '../../api/ptah-schema-plan.ts';
import type { RunnerResult } from '../../protocol/result.ts';
import { currentExecutionBinding, executionPlanBinding } from '../execution-binding.ts';
import { buildSchemaPlan, type PlanInputs } from '../../plan-store/build-plan.ts';
import { liveBindingDifferences } from '../../plan-store/live-binding.ts';
import { coordinationOf, schemaLiveBinding } from '../live-binding.ts';
import { projectForApply, readPlanBytes } from './plan-storage.ts';
import { markDecision } from '../decision/mark-decision.ts';
import { planRead, type PlanRead } from '../decision/plan-read.ts';
import { managerEventRecorder, type EventRecorder } from '../events/event-recorder.ts';
import { finishJob } from '../jobs/finish-job.ts';
import { JobAdoption } from '../jobs/job-adoption.ts';
import { readClaimedJob } from '../jobs/claimed-job-read.ts';
import {
  collectSnapshots,
  resolveConfigMapSource,
  type ResolutionResult,
} from '../snapshot/resolve-source.ts';
import {
  decideWithPublication,
  isDurableWrite,
  performWrite,
  type PublicationOutcome,
  type WriteDeps,
} from '../decision/durable-writes.ts';
import { sourceBinding } from '../snapshot/source-binding.ts';
import { artifactDecideInputs } from '../snapshot/oci-inputs.ts';
import type { ManagerIdentity } from '../jobs/operation-job.ts';
import { REALM_ADMITTED } from '../realm/realm-grant.ts';
import type { RealmCensus } from '../realm/realm-census.ts';
import { realmHolderIdentity, type RealmLeases } from '../realm/realm-lease.ts';
import { targetConflict, type TargetClaimant, type TargetConflict } from '../realm/target-conflict.ts';
import type { ObjectKey, ReconcileResult } from '../runtime/reconcile.ts';
import { applyAuthorisation, decide, type Decision, type EventSpec, type PostAction } from './decide.ts';
import { harvestJob } from '../jobs/harvest.ts';
import { isConflict, orUndefined, PtahObjects } from '../runtime/kube.ts';
import type { Harvest, PlanCheck, PlanStatus, SchemaView } from './model.ts';
import { approvalView, schemaView } from './view.ts';
import { schemaJob } from './schema-job.ts';

export interface SchemaReconcilerDeps {
  readonly core: CoreV1Api;
  readonly batch: BatchV1Api;
  readonly ptah: PtahObjects;
  readonly leases: RealmLeases;
  /** Whether the realm this resource names admits it: the grant and the census of both families. */
  readonly census: RealmCensus;
  readonly manager: ManagerIdentity;
  readonly log: Logger;
  readonly clock?: () => Date;
  /** Why approvals are not accepted now (the approval webhooks are not registered), or undefined. */
  readonly approvalGate: ApprovalGate;
  /**
   * The watch cache of every PtahSchema, cluster-wide (namespace given: that namespace's). The realm and
   * target checks read it instead of listing every resource on every pass; absent, they list uncached.
   */
  readonly schemaCache?: SchemaCache;
}

export interface SchemaCache {
  /** Undefined until the watch's first list has arrived: an empty cache is not an empty cluster. */
  list(namespace?: string): readonly PtahSchema[] | undefined;
}

/** Throws when this replica may no longer write (leadership lost); called before every write. */
type WriteGuard = () => void;

type InputsOf<T> = T extends (input: infer I) => unknown ? I : never;
type DecideInput = InputsOf<typeof decide>;

export class SchemaReconciler {
  private readonly clock: () => Date;
  private readonly events: EventRecorder;

  private readonly adoption: JobAdoption;

  constructor(private readonly deps: SchemaReconcilerDeps) {
    this.clock = deps.clock ?? (() => new Date());
    this.events = managerEventRecorder({ core: deps.core, log: deps.log, clock: this.clock });
    this.adoption = new JobAdoption(deps, deps.manager, this.clock);
  }

  /**
   * `leadership` aborts when this replica stops being the leader: every write checks it first, so a deposed
   * leader stops writing at once instead of finishing a pass decided under an authority it no longer has.
   */
  async reconcile(key: ObjectKey, leadership?: AbortSignal): Promise<ReconcileResult> {
    const { ptah, log } = this.deps;
    const guard: WriteGuard = () => leadership?.throwIfAborted();
    const obj = await ptah.get<PtahSchema>('ptahschemas', key.namespace, key.name);
    if (obj === undefined) return {};
    const view = schemaView(obj);
    const now = this.clock();
    const engine = canonicalEngine(view.spec.engine);
    const coordination = coordinationOf(view);

    const readRequestedAt = obj.metadata.annotations?.[READ_REQUESTED_ANNOTATION];
    // Fail closed: without the webhooks that stamp the approver, no approval is read at all.
    const gate = await this.deps.approvalGate();
    const approvalsRefused = gate.ok ? undefined : gate.reason;
    // An approval older than the guard may have passed no webhook, its stamp typed by hand: never read.
    const guarded = (a: PtahSchemaApproval) =>
      gate.ok && new Date(a.metadata.creationTimestamp ?? 0).getTime() > gate.since.getTime();
    const oci = view.deleting ? undefined : await artifactDecideInputs(this.deps.core, 'PtahSchema', view);
    const input: DecideInput = {
      now,
      schema: view,
      ...(oci !== undefined ? { artifact: oci.artifact } : {}),
      ...(readRequestedAt !== undefined ? { readRequestedAt } : {}),
      engineSupported: engine !== undefined && schemaEngineShips(engine),
      ...(engine !== undefined ? { engine } : {}),
      realm:
        engine !== undefined && !view.deleting
          ? await this.deps.census.verdict('PtahSchema', obj)
          : REALM_ADMITTED,
      coordinationDigest: coordination,
      executionBinding: currentExecutionBinding(view.status.executionBinding, this.deps.manager),
      resolution: view.deleting
        ? { ok: false, reason: 'Deleting', message: 'deleting' }
        : (oci?.resolution ?? (await this.resolve(obj, view, now))),
      approvals: approvalsRefused
        ? []
        : (await ptah.list<PtahSchemaApproval>('ptahschemaapprovals', view.namespace))
            .filter((a) => a.spec.schemaRef.uid === view.uid && guarded(a))
            .map(approvalView),
      ...(approvalsRefused !== undefined ? { approvalsRefused } : {}),
    };
    const claim = view.status.claim;
    let extra: Partial<DecideInput> = {};
    if (claim !== undefined) {
      // A claim that recorded a hold (a proof inherits its Apply's) must still own that very hold. A retired
      // epoch's Apply, a replaced Job or one this release cannot adopt is never read; decide says what follows.
      const read = await readClaimedJob(
        { ...this.deps, adoption: this.adoption },
        { kind: 'PtahSchema', namespace: view.namespace, name: view.name, uid: view.uid },
        claim,
        { coordination, epoch: claim.leaseEpoch },
        { recorded: view.status.executionBinding, current: input.executionBinding },
      );
      const { result } = read;
      extra = read.decideInput;
      if (result.read) {
        const harvest = await harvestJob(this.deps.core, view.namespace, claim, result.uid);
        extra = {
          ...extra,
          harvest,
          ...this.publication(obj, view, coordination, input.executionBinding, harvest),
        };
        if (claim.type !== 'Apply' && claim.planRef !== undefined) {
          const applied = await this.appliedPlanTarget(view, claim.planRef);
          if (applied !== undefined) extra = { ...extra, appliedPlanTargetIdentity: applied };
        }
      }
      if (read.blocked !== undefined) extra = { ...extra, harvest: read.blocked };
    }
    // The database this resource reads, as the runner reported it (a finished Observe reports it first).
    const reportedIdentity =
      extra.harvest?.kind === 'accepted' && claim?.type === 'Observe'
        ? extra.harvest.result.target?.identityDigest
        : undefined;
    const identity = reportedIdentity ?? view.status.target?.identityDigest;
    if (engine !== undefined && !view.deleting && identity !== undefined) {
      const conflict = await this.targetConflict(obj, coordination, identity);
      if (conflict !== undefined) extra = { ...extra, targetConflict: conflict };
    }
    const plan = view.status.plan;
    if (plan !== undefined) {
      const authorised = () => applyAuthorisation({ ...input, ...extra }, plan).kind !== 'wait';
      const read = planRead(claim, authorised);
      if (read !== 'none') {
        const check = await this.checkPlan(view, plan, coordination, input.executionBinding, read);
        extra = { ...extra, planCheck: check };
      }
    }

    const decision = await decideWithPublication(decide, { ...input, ...extra }, this.writes(guard), (o) =>
      this.publicationOutcome(o),
    );
    return this.perform(obj, view, coordination, decision, log, guard);
  }

  // -------------------------------------------------------------------------------------------------------

  private async perform(
    obj: PtahSchema,
    view: SchemaView,
    coordination: string,
    decided: Decision,
    log: Logger,
    guard: WriteGuard,
  ): Promise<ReconcileResult> {
    let decision = decided;
    const holder = realmHolderIdentity(view.uid);
    let status = decision.status;
    for (const pre of decision.pre) {
      guard();
      if (isDurableWrite(pre)) {
        await performWrite(this.writes(guard), pre);
        continue;
      }
      if (pre.kind === 'projectPlan') {
        await this.project(view, pre.plan, guard);
        continue;
      }
      if (pre.kind === 'addFinalizer') {
        await this.deps.ptah.patchMetadata('ptahschemas', view.namespace, view.name, {
          resourceVersion: obj.metadata.resourceVersion,
          finalizers: [...(obj.metadata.finalizers ?? []), SCHEMA_FINALIZER],
        });
        continue;
      }
      const lease = await this.deps.leases.acquire(coordination, holder, pre.durationSeconds);
      if (!lease.held) {
        log.info(
          { schema: view.name, namespace: view.namespace },
          'realm lease held by another resource; waiting',
        );
        return { requeueAfterMs: Math.min(lease.retryAfterMs, 5_000) };
      }
      // The claim records the epoch it first held, before its Job exists; a later pass that finds another
      // epoch knows the hold was interrupted.
      if (status.claim !== undefined && status.claim.leaseEpoch === undefined) {
        status = { ...status, claim: { ...status.claim, leaseEpoch: lease.epoch } };
      } else if (status.claim?.leaseEpoch !== undefined && status.claim.leaseEpoch !== lease.epoch) {
        // The hold was lost between reading and acquiring: write nothing; the next pass sees the gap.
        return { requeueAfterMs: 0 };
      }
    }
    decision = { ...decision, status };
    const before = canonicalDigest(JSON.parse(JSON.stringify(view.status)) as never);
    const after = canonicalDigest(JSON.parse(JSON.stringify(decision.status)) as never);
    if (before !== after) {
      guard();
      try {
        await this.deps.ptah.replaceStatus('ptahschemas', view.namespace, view.name, {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          metadata: {
            name: view.name,
            namespace: view.namespace,
            resourceVersion: obj.metadata.resourceVersion,
          },
          status: decision.status,
        });
      } catch (error) {
        // Somebody wrote first: nothing after the status write may run on a decision from old inputs.
        if (isConflict(error)) return { requeueAfterMs: 0 };
        // A deleted resource without the guard is gone already: nothing is left to record.
        if (view.deleting && (error as { code?: number }).code === 404) return {};
        throw error;
      }
      if (decision.status.phase !== view.status.phase) {
        log.info(
          {
            schema: view.name,
            namespace: view.namespace,
            from: view.status.phase,
            to: decision.status.phase,
          },
          'phase changed',
        );
      }
    }
    for (const action of decision.post) {
      guard();
      await this.post(obj, view, decision, action, coordination, holder);
    }
    for (const event of decision.events) {
      guard();
      await this.event(obj, event);
    }
    return decision.requeueAfterMs !== undefined ? { requeueAfterMs: decision.requeueAfterMs } : {};
  }

  private async post(
    obj: PtahSchema,
    view: SchemaView,
    decision: Decision,
    action: PostAction,
    coordination: string,
    holder: string,
  ): Promise<void> {
    const { batch, core, ptah, log } = this.deps;
    switch (action.kind) {
      case 'createJob': {
        const body = await this.jobFor(view, action.claim);
        try {
          this.adoption.created(await batch.createNamespacedJob({ namespace: view.namespace, body }));
          log.info(
            {
              schema: view.name,
              namespace: view.namespace,
              job: action.claim.jobName,
              operation: action.claim.type,
            },
            'operation job created',
          );
        } catch (error) {
          // The name is the lock: AlreadyExists means a previous pass (or process) created this very Job.
          if (!isConflict(error)) throw error;
        }
        return;
      }
      case 'finishJob':
        await finishJob(batch, view.namespace, action, view.uid, log);
        return;
      case 'consumeApproval':
        await this.markApproval(view.namespace, action.name, [
          {
            type: 'Accepted',
            status: 'True',
            reason: 'ApprovedPlan',
            message: `accepted for the apply of plan ${decision.status.plan?.name ?? 'it names'}`,
          },
          { type: 'Consumed', status: 'True', reason: 'DispatchCommitted', message: 'consumed by an apply' },
        ]);
        return;
      case 'staleApprovals': {
        const approvals = await ptah.list<PtahSchemaApproval>('ptahschemaapprovals', view.namespace);
        for (const a of approvals) {
          const v = approvalView(a);
          if (a.spec.schemaRef.uid !== view.uid || v.consumed || v.stale) continue;
          if (a.spec.planRef.uid === action.exceptPlanUID || a.spec.planRef.uid === decision.status.plan?.uid)
            continue;
          await this.markApproval(view.namespace, a.metadata.name, [
            { type: 'Stale', status: 'True', reason: action.reason, message: action.message },
            {
              type: 'Accepted',
              status: 'False',
              reason: action.reason,
              message: 'never applied: it went stale',
            },
          ]);
        }
        return;
      }
      case 'releaseLease':
        await this.deps.leases.release(coordination, holder);
        return;
      case 'removeFinalizer': {
        const current = await ptah.get<PtahSchema>('ptahschemas', view.namespace, view.name);
        const finalizers = current?.metadata.finalizers ?? [];
        if (current === undefined || !finalizers.includes(SCHEMA_FINALIZER)) return;
        await ptah.patchMetadata('ptahschemas', view.namespace, view.name, {
          resourceVersion: current.metadata.resourceVersion,
          finalizers: finalizers.filter((f) => f !== SCHEMA_FINALIZER),
        });
        log.info({ schema: view.name, namespace: view.namespace }, 'deletion guard removed');
        return;
      }
      case 'collectSnapshots': {
        const inUse = new Set(action.keep);
        const claim = decision.status.claim;
        if (claim?.snapshotName) inUse.add(claim.snapshotName);
        await collectSnapshots(
          core,
          { kind: 'PtahSchema', namespace: view.namespace, name: view.name, uid: view.uid },
          inUse,
          log,
        );
        return;
      }
      case 'collectPlans':
        await this.collectPlans(view, new Set(action.keep));
        return;
    }
    void obj;
  }

  /**
   * Deletes this resource's plans that status no longer names. Their chunks are owned by their plan, and
   * garbage collection takes them with it: admission (ptah-config-map-deletion) lets the manager delete no
   * ConfigMap but a source snapshot. Only plans this resource owns, by UID, are touched.
   */
  private async collectPlans(view: SchemaView, keep: ReadonlySet<string>): Promise<void> {
    const { ptah, log } = this.deps;
    const plans = await ptah.list<PtahSchemaPlan>(
      'ptahschemaplans',
      view.namespace,
      `${LABELS.schema}=${view.name}`,
    );
    for (const plan of plans) {
      const owned = (plan.metadata.ownerReferences ?? []).some(
        (o) => o.uid === view.uid && o.controller === true,
      );
      const uid = plan.metadata.uid;
      if (!owned || uid === undefined || keep.has(plan.metadata.name)) continue;
      // A conflict is a newer object under the name (the UID precondition): it is not ours to delete.
      await orUndefined(ptah.delete('ptahschemaplans', view.namespace, plan.metadata.name, uid)).catch(
        (error: unknown) => {
          if (!isConflict(error)) throw error;
        },
      );
      log.info(
        {
          schema: view.name,
          namespace: view.namespace,
          plan: plan.metadata.name,
        },
        'retired plan deleted',
      );
    }
  }

  /** The projections the Apply of `ref` mounts, from chunks verified in this very step. */
  private async project(
    view: SchemaView,
    ref: { readonly name: string; readonly uid: string },
    guard: WriteGuard,
  ): Promise<void> {
    const plan = await this.deps.ptah.get<PtahSchemaPlan>('ptahschemaplans', view.namespace, ref.name);
    if (plan === undefined || plan.metadata.uid !== ref.uid) {
      throw new Error(`plan ${ref.name}, which the Apply is about to run, was deleted or replaced`);
    }
    await projectForApply(this.deps, plan, guard);
  }

  private jobFor(view: SchemaView, claim: NonNullable<SchemaView['status']['claim']>): Promise<V1Job> {
    return schemaJob(this.deps, view, claim, this.deps.manager, this.clock());
  }

  /** Accepted, Consumed and Stale as the approval's printer columns show them. */
  private async markApproval(namespace: string, name: string, updates: readonly ConditionUpdate[]) {
    await markDecision(this.deps.ptah, 'ptahschemaapprovals', namespace, name, updates, this.clock());
  }

  private async event(obj: PtahSchema, e: EventSpec): Promise<void> {
    await this.events.record(
      {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        name: obj.metadata.name,
        namespace: obj.metadata.namespace!,
        uid: obj.metadata.uid!,
      },
      e,
    );
  }

  // -------------------------------------------------------------------------------------------------------
  // Inputs.

  /** Resolve for a ConfigMap source is not a Job: read the source, write the immutable snapshot. */
  private async resolve(obj: PtahSchema, view: SchemaView, now: Date): Promise<ResolutionResult> {
    return resolveConfigMapSource(
      this.deps.core,
      obj,
      obj.spec.desired.configMap,
      view.status.resolution,
      now,
      view.spec.sourcePolicyName,
    );
  }

  /** Another resource, in any namespace, in another realm over the same database. */
  private async targetConflict(
    obj: PtahSchema,
    coordination: string,
    identity: string,
  ): Promise<TargetConflict | undefined> {
    // From the watch cache: this check runs on every pass that knows its target, so an uncached list would
    // cost one cluster-wide request per resource per pass. The cache lags the API by a watch event at most;
    // a list would not close the gap between reading and dispatching either.
    const all = this.deps.schemaCache?.list() ?? (await this.deps.ptah.listAll<PtahSchema>('ptahschemas'));
    const claimant = (s: PtahSchema): TargetClaimant => {
      const e = canonicalEngine(s.spec.target.engine);
      const ns = s.metadata.namespace ?? '';
      const c = s.status?.claim;
      return {
        namespace: ns,
        name: s.metadata.name ?? '',
        uid: s.metadata.uid ?? '',
        createdAt: s.metadata.creationTimestamp ? new Date(s.metadata.creationTimestamp).toISOString() : '',
        coordinationDigest: e ? realmDigestOf(e, ns, realmRefOf(s.spec.target)) : '',
        identityDigest: s.status?.target?.identityDigest,
        active: s.metadata.deletionTimestamp === undefined && s.spec.suspend !== true,
        applying: c?.type === 'Apply' && c.dispatchStarted === true,
      };
    };
    return targetConflict(
      { ...claimant(obj), coordinationDigest: coordination },
      identity,
      all.map(claimant),
    );
  }

  /**
   * What publishing a finished Plan's changed bytes would write: the plan object and its chunks, built from
   * the result and the bindings (nothing is written here; the decision publishes it, durable-writes.ts).
   */
  private publication(
    obj: PtahSchema,
    view: SchemaView,
    coordination: string,
    binding: ExecutionBinding,
    harvest: Harvest,
  ): Pick<DecideInput, 'publication' | 'publishRefused'> {
    const claim = view.status.claim;
    if (claim?.type !== 'Plan' || harvest.kind !== 'accepted') return {};
    const result = harvest.result;
    const out = result.outputs.plan;
    if (result.outcome !== 'succeeded' || out?.planOutcome !== 'Changes' || out.bytesBase64 === undefined)
      return {};
    const bytes = Buffer.from(out.bytesBase64, 'base64');
    const res = view.status.resolution;
    if (res === undefined) return {};
    const inputs = planInputs(view, res, coordination, result, binding);
    if (!inputs.ok) return { publishRefused: { reason: 'PlanBindingIncomplete', message: inputs.message } };
    let built = buildSchemaPlan(obj, inputs.value, bytes);
    // A plan retired for good is never published again under its name, nor are its chunks reused.
    const retired = (view.status.retiredPlans ?? []).filter(
      (r) => r.fingerprint === built.plan.spec.fingerprint,
    );
    if (retired.length > 0) built = buildSchemaPlan(obj, inputs.value, bytes, retired.length);
    return { publication: { kind: 'PtahSchemaPlan', plan: built.plan, pieces: built.pieces } };
  }

  /** The status of a plan the decision's publication stored, or why it stored none. */
  private publicationOutcome(outcome: PublicationOutcome): Pick<DecideInput, 'published' | 'publishRefused'> {
    if (!outcome.ok) return { publishRefused: { reason: outcome.reason, message: outcome.message } };
    const plan = outcome.plan as PtahSchemaPlan;
    const status: PlanStatus = {
      name: plan.metadata.name,
      uid: plan.metadata.uid!,
      fingerprint: plan.spec.fingerprint,
      contentDigest: plan.spec.binding.planContentDigest,
      destructive: plan.spec.binding.destructive,
      statementCount: plan.spec.binding.statementCount,
      createdAt: plan.metadata.creationTimestamp
        ? new Date(plan.metadata.creationTimestamp).toISOString()
        : this.clock().toISOString(),
    };
    return { published: { plan: status } };
  }

  private writes(guard: WriteGuard): WriteDeps {
    return { core: this.deps.core, ptah: this.deps.ptah, clock: this.clock, guard };
  }

  /** The target identity the applied plan binds; undefined when that plan is gone or was replaced. */
  private async appliedPlanTarget(
    view: SchemaView,
    ref: { readonly name: string; readonly uid: string },
  ): Promise<string | undefined> {
    const plan = await this.deps.ptah.get<PtahSchemaPlan>('ptahschemaplans', view.namespace, ref.name);
    return plan?.metadata.uid === ref.uid ? plan.spec.binding.targetIdentityDigest : undefined;
  }

  /**
   * Reads the stored plan back and recomputes every binding that is a live input, whenever a decision rests
   * on the plan; when an Apply is possible (`whole`) it also rebuilds the plan from its chunks, exactly as
   * the Apply will (decision/plan-read.ts).
   */
  private async checkPlan(
    view: SchemaView,
    status: PlanStatus,
    coordination: string,
    binding: ExecutionBinding,
    read: Exclude<PlanRead, 'none'>,
  ): Promise<PlanCheck> {
    const plan = await this.deps.ptah.get<PtahSchemaPlan>('ptahschemaplans', view.namespace, status.name);
    if (
      plan === undefined ||
      plan.metadata.uid !== status.uid ||
      plan.spec.fingerprint !== status.fingerprint
    ) {
      return { ok: false, kind: 'gone', message: `plan ${status.name} was deleted or replaced` };
    }
    if (read === 'whole') {
      const r = await readPlanBytes(this.deps.ptah, plan);
      if (!r.ok)
        return { ok: false, kind: 'tampered', failing: r.failing, reason: r.reason, message: r.message };
    }
    const fields = liveBindingDifferences(plan, schemaLiveBinding(view, coordination, binding));
    return fields.length === 0 ? { ok: true } : { ok: false, kind: 'superseded', fields };
  }
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;

/**
 * Every binding the plan's fingerprint covers that exists at this stage. A binding the runner must report
 * and did not (target identity, observed or desired state) refuses the plan: a made-up digest would bind
 * nothing.
 */
function planInputs(
  view: SchemaView,
  res: Resolution,
  coordination: string,
  result: RunnerResult,
  binding: ExecutionBinding,
): { ok: true; value: PlanInputs } | { ok: false; message: string } {
  const out = result.outputs.plan!;
  const reported = {
    targetIdentityDigest: result.target?.identityDigest,
    observedStateFingerprint: out.observedStateFingerprint,
    desiredStateFingerprint: out.desiredStateFingerprint,
  };
  const missing = Object.entries(reported)
    .filter(([, v]) => v === undefined || !DIGEST.test(v))
    .map(([k]) => k);
  const source = sourceBinding(res);
  if (missing.length > 0 || !source.ok) {
    return {
      ok: false,
      message: `the plan was not published: the runner did not report ${[...missing, ...(source.ok ? [] : source.missing)].join(', ')}`,
    };
  }
  const live = schemaLiveBinding(view, coordination, binding);
  return {
    ok: true,
    value: {
      ...source.value,
      coordinationDigest: coordination,
      targetIdentityDigest: reported.targetIdentityDigest!,
      observedStateFingerprint: reported.observedStateFingerprint!,
      desiredStateFingerprint: reported.desiredStateFingerprint!,
      policyFingerprint: live.policyFingerprint!,
      ...executionPlanBinding(binding),
      dialect: canonicalEngine(view.spec.engine) ?? 'postgres',
      // A plan that does not say whether it is destructive is treated as destructive: the safe reading.
      destructive: out.destructive ?? true,
      statementCount: Math.max(1, out.statementCount ?? out.dryRunStatements ?? 1),
    },
  };
}

/**
 * The I/O around `decideMigration`: gather the inputs from the API server (uncached), publish a plan from a
 * history reading that has pending versions, then perform the decision in the contract's order (pre →
 * status → post, then Events). Everything it writes it builds from the shared blocks the schema family uses:
 * the snapshot resolution, the operation Job, the harvest, the realm Lease, decision marks and Events.
 *
 * The manager never reads a Secret and never opens a database connection.
 */
import type { BatchV1Api, CoreV1Api, V1Job } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { canonicalDigest } from '../../api/digest.ts';
import { migrationPlanFingerprint, migrationPlanName } from '../../api/fingerprint.ts';
import { API_GROUP, API_VERSION, READ_REQUESTED_ANNOTATION } from '../../api/meta.ts';
import {
  MAX_PLAN_MIGRATIONS,
  MIGRATION_FINALIZER,
  UNRESOLVED_RUN_ANNOTATION,
  type PtahMigration,
} from '../../api/ptah-migration.ts';
import type {
  PtahMigrationApproval,
  PtahMigrationRunAcknowledgment,
} from '../../api/ptah-migration-approval.ts';
import {
  MIGRATION_PLAN_CONTRACT_VERSION,
  type MigrationPlanBinding,
  type PlannedMigration,
  type PtahMigrationPlan,
} from '../../api/ptah-migration-plan.ts';
import { canonicalEngine, type ExecutionBinding } from '../../api/ptah-schema.ts';
import type { RunnerResult } from '../../protocol/result.ts';
import { currentExecutionBinding, executionPlanBinding } from '../execution-binding.ts';
import { coordinationOf, migrationLiveBinding } from '../live-binding.ts';
import { migrationLiveBindingDifferences } from '../../plan-store/live-binding.ts';
import { migrationPlanMetadata } from '../../plan-store/plan-metadata.ts';
import { planRead } from '../decision/plan-read.ts';
import { markDecision } from '../decision/mark-decision.ts';
import { managerEventRecorder, type EventRecorder } from '../events/event-recorder.ts';
import { finishJob } from '../jobs/finish-job.ts';
import { JobAdoption } from '../jobs/job-adoption.ts';
import { readClaimedJob } from '../jobs/claimed-job-read.ts';
import { harvestJob, runnerOperation } from '../jobs/harvest.ts';
import { sourceBinding } from '../snapshot/source-binding.ts';
import { artifactDecideInputs } from '../snapshot/oci-inputs.ts';
import type { ManagerIdentity } from '../jobs/operation-job.ts';
import { REALM_ADMITTED } from '../realm/realm-grant.ts';
import type { RealmCensus } from '../realm/realm-census.ts';
import { realmHolderIdentity, type RealmLeases } from '../realm/realm-lease.ts';
import type { ApprovalGate } from '../runtime/approval-webhook-gate.ts';
import { isConflict, type PtahObjects } from '../runtime/kube.ts';
import type { ObjectKey, ReconcileResult } from '../runtime/reconcile.ts';
import { collectSnapshots, resolveConfigMapSource } from '../snapshot/resolve-source.ts';
import {
  decideWithPublication,
  isDurableWrite,
  performWrite,
  type PublicationOutcome,
  type WriteDeps,
} from '../decision/durable-writes.ts';
import {
  decideMigration,
  type EventSpec,
  type MigrationDecideInput,
  type MigrationDecision,
  type MigrationPostAction,
} from './decide.ts';
import { migrationJob } from './migration-job.ts';
import type {
  Harvest,
  MigrationClaim,
  MigrationPlanCheck,
  MigrationPlanStatus,
  MigrationView,
} from './model.ts';
import { acknowledgmentView, migrationApprovalView, migrationView } from './view.ts';

export interface MigrationReconcilerDeps {
  readonly core: CoreV1Api;
  readonly batch: BatchV1Api;
  readonly ptah: PtahObjects;
  readonly leases: RealmLeases;
  /** Whether the realm this resource names admits it: the grant and the census of both families. */
  readonly census: RealmCensus;
  readonly manager: ManagerIdentity;
  readonly log: Logger;
  readonly clock?: () => Date;
  /** Whether the webhooks that stamp approvals and acknowledgments are registered. */
  readonly approvalGate: ApprovalGate;
}

type WriteGuard = () => void;

export class MigrationReconciler {
  private readonly clock: () => Date;
  private readonly events: EventRecorder;

  private readonly adoption: JobAdoption;

  constructor(private readonly deps: MigrationReconcilerDeps) {
    this.clock = deps.clock ?? (() => new Date());
    this.events = managerEventRecorder({ core: deps.core, log: deps.log, clock: this.clock });
    this.adoption = new JobAdoption(deps, deps.manager, this.clock);
  }

  async reconcile(key: ObjectKey, leadership?: AbortSignal): Promise<ReconcileResult> {
    const { ptah } = this.deps;
    const guard: WriteGuard = () => leadership?.throwIfAborted();
    const obj = await ptah.get<PtahMigration>('ptahmigrations', key.namespace, key.name);
    if (obj === undefined) return {};
    const view = migrationView(obj);
    const now = this.clock();
    const engine = canonicalEngine(view.spec.engine);
    const coordination = coordinationOf(view);
    const gate = await this.deps.approvalGate();
    // A decision older than the guard may have passed no webhook, its stamp typed by hand: never read.
    const guarded = (o: { metadata: { creationTimestamp?: string } }) =>
      gate.ok && new Date(o.metadata.creationTimestamp ?? 0).getTime() > gate.since.getTime();
    const readRequestedAt = obj.metadata.annotations?.[READ_REQUESTED_ANNOTATION];
    const oci = view.deleting ? undefined : await artifactDecideInputs(this.deps.core, 'PtahMigration', view);
    let input: MigrationDecideInput = {
      now,
      migration: view,
      ...(oci !== undefined ? { artifact: oci.artifact } : {}),
      ...(readRequestedAt !== undefined ? { readRequestedAt } : {}),
      engineSupported: engine !== undefined,
      ...(engine !== undefined ? { engine } : {}),
      realm:
        engine !== undefined && !view.deleting
          ? await this.deps.census.verdict('PtahMigration', obj)
          : REALM_ADMITTED,
      coordinationDigest: coordination,
      executionBinding: currentExecutionBinding(view.status.executionBinding, this.deps.manager),
      resolution: view.deleting
        ? { ok: false, reason: 'Deleting', message: 'deleting' }
        : (oci?.resolution ??
          (await resolveConfigMapSource(
            this.deps.core,
            obj,
            obj.spec.desired.configMap,
            view.status.resolution,
            now,
            view.spec.sourcePolicyName,
          ))),
      approvals: gate.ok
        ? (await ptah.list<PtahMigrationApproval>('ptahmigrationapprovals', view.namespace))
            .filter((a) => a.spec.migrationRef.uid === view.uid && guarded(a))
            .map(migrationApprovalView)
        : [],
      acknowledgments: gate.ok
        ? (await ptah.list<PtahMigrationRunAcknowledgment>('ptahmigrationrunacknowledgments', view.namespace))
            .filter((a) => a.spec.migrationRef.uid === view.uid && guarded(a))
            .map(acknowledgmentView)
        : [],
      ...(gate.ok ? {} : { decisionsRefused: gate.reason }),
    };
    const claim = view.status.claim;
    if (claim !== undefined) {
      // Only an Apply holds the realm. A retired epoch's Apply, a replaced Job or one this release cannot
      // adopt is never read.
      const read = await readClaimedJob(
        { ...this.deps, adoption: this.adoption },
        { kind: 'PtahMigration', namespace: view.namespace, name: view.name, uid: view.uid },
        claim,
        { coordination, epoch: claim.type === 'Apply' ? claim.leaseEpoch : undefined },
        { recorded: view.status.executionBinding, current: input.executionBinding },
      );
      const { result } = read;
      input = { ...input, ...read.decideInput };
      if (result.read) {
        const harvest = await harvestJob(
          this.deps.core,
          view.namespace,
          claim,
          result.uid,
          claim.type === 'Apply' ? 'migration-apply' : runnerOperation(claim),
        );
        input = {
          ...input,
          harvest,
          ...this.publication(obj, view, coordination, input.executionBinding, harvest),
        };
      }
      if (read.blocked !== undefined) input = { ...input, harvest: read.blocked };
    }
    const plan = view.status.plan;
    // A migration plan's object is the whole plan (it has no chunks): whenever a plan is read, all of it is.
    if (plan !== undefined && planRead(claim, () => true) !== 'none') {
      input = { ...input, planCheck: await this.checkPlan(view, plan, coordination, input.executionBinding) };
    }
    const decision = await decideWithPublication(decideMigration, input, this.writes(guard), (o) =>
      this.publicationOutcome(o),
    );
    return this.perform(obj, view, coordination, decision, guard);
  }

  // -------------------------------------------------------------------------------------------------------

  private async perform(
    obj: PtahMigration,
    view: MigrationView,
    coordination: string,
    decision: MigrationDecision,
    guard: WriteGuard,
  ): Promise<ReconcileResult> {
    const { ptah, log } = this.deps;
    const holder = realmHolderIdentity(view.uid);
    let status = decision.status;
    let resourceVersion = obj.metadata.resourceVersion;
    for (const pre of decision.pre) {
      guard();
      if (isDurableWrite(pre)) {
        await performWrite(this.writes(guard), pre);
        continue;
      }
      if (pre.kind === 'addFinalizer') {
        await ptah.patchMetadata('ptahmigrations', view.namespace, view.name, {
          resourceVersion,
          finalizers: [...(obj.metadata.finalizers ?? []), MIGRATION_FINALIZER],
        });
        return { requeueAfterMs: 0 };
      }
      if (pre.kind === 'writeUnresolvedAnnotation') {
        // The copy first: a restore that drops the status written next still brings the run back.
        try {
          const written = await ptah.patchMetadata<PtahMigration>(
            'ptahmigrations',
            view.namespace,
            view.name,
            {
              resourceVersion,
              annotations: { [UNRESOLVED_RUN_ANNOTATION]: JSON.stringify(pre.run) },
            },
          );
          resourceVersion = written.metadata.resourceVersion;
        } catch (error) {
          if (isConflict(error)) return { requeueAfterMs: 0 };
          throw error;
        }
        continue;
      }
      const lease = await this.deps.leases.acquire(coordination, holder, pre.durationSeconds);
      if (!lease.held) {
        log.info(
          { migration: view.name, namespace: view.namespace },
          'realm lease held by another resource; waiting',
        );
        return { requeueAfterMs: Math.min(lease.retryAfterMs, 5_000) };
      }
      if (status.claim !== undefined && status.claim.leaseEpoch === undefined) {
        status = { ...status, claim: { ...status.claim, leaseEpoch: lease.epoch } };
      } else if (status.claim?.leaseEpoch !== undefined && status.claim.leaseEpoch !== lease.epoch) {
        return { requeueAfterMs: 0 };
      }
    }
    const before = canonicalDigest(JSON.parse(JSON.stringify(view.status)) as never);
    const after = canonicalDigest(JSON.parse(JSON.stringify(status)) as never);
    if (before !== after) {
      guard();
      try {
        await ptah.replaceStatus('ptahmigrations', view.namespace, view.name, {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          metadata: { name: view.name, namespace: view.namespace, resourceVersion },
          status,
        });
      } catch (error) {
        if (isConflict(error)) return { requeueAfterMs: 0 };
        if (view.deleting && (error as { code?: number }).code === 404) return {};
        throw error;
      }
      if (status.phase !== view.status.phase) {
        log.info(
          { migration: view.name, namespace: view.namespace, from: view.status.phase, to: status.phase },
          'phase changed',
        );
      }
    }
    for (const action of decision.post) {
      guard();
      await this.post(view, status, action, coordination, holder);
    }
    for (const event of decision.events) {
      guard();
      await this.event(obj, event);
    }
    return decision.requeueAfterMs !== undefined ? { requeueAfterMs: decision.requeueAfterMs } : {};
  }

  private async post(
    view: MigrationView,
    status: MigrationDecision['status'],
    action: MigrationPostAction,
    coordination: string,
    holder: string,
  ): Promise<void> {
    const { batch, core, ptah, log } = this.deps;
    const ns = view.namespace;
    switch (action.kind) {
      case 'createJob': {
        const body = await this.jobFor(view, action.claim);
        try {
          this.adoption.created(await batch.createNamespacedJob({ namespace: ns, body }));
          log.info(
            { migration: view.name, namespace: ns, job: action.claim.jobName, operation: action.claim.type },
            'operation job created',
          );
        } catch (error) {
          // The name is the lock: AlreadyExists means a previous pass (or process) created this very Job.
          if (!isConflict(error)) throw error;
        }
        return;
      }
      case 'finishJob':
        await finishJob(batch, ns, action, view.uid, log);
        return;
      case 'consumeApproval':
        await markDecision(
          ptah,
          'ptahmigrationapprovals',
          ns,
          action.name,
          [
            {
              type: 'Consumed',
              status: 'True',
              reason: 'DispatchCommitted',
              message: 'consumed by an apply',
            },
          ],
          this.clock(),
        );
        return;
      case 'staleApprovals': {
        for (const a of await ptah.list<PtahMigrationApproval>('ptahmigrationapprovals', ns)) {
          const v = migrationApprovalView(a);
          if (a.spec.migrationRef.uid !== view.uid || v.consumed || v.stale) continue;
          if (a.spec.planRef.uid === action.exceptPlanUID || a.spec.planRef.uid === status.plan?.uid)
            continue;
          await markDecision(
            ptah,
            'ptahmigrationapprovals',
            ns,
            a.metadata.name,
            [{ type: 'Stale', status: 'True', reason: action.reason, message: action.message }],
            this.clock(),
          );
        }
        return;
      }
      case 'markAcknowledgment':
        await markDecision(
          ptah,
          'ptahmigrationrunacknowledgments',
          ns,
          action.name,
          [{ type: action.condition, status: 'True', reason: action.reason, message: action.message }],
          this.clock(),
        );
        return;
      case 'removeUnresolvedAnnotation': {
        const current = await ptah.get<PtahMigration>('ptahmigrations', ns, view.name);
        if (current?.metadata.annotations?.[UNRESOLVED_RUN_ANNOTATION] === undefined) return;
        await ptah.patchMetadata('ptahmigrations', ns, view.name, {
          resourceVersion: current.metadata.resourceVersion,
          annotations: { [UNRESOLVED_RUN_ANNOTATION]: null },
        });
        return;
      }
      case 'releaseLease':
        await this.deps.leases.release(coordination, holder);
        return;
      case 'removeFinalizer': {
        const current = await ptah.get<PtahMigration>('ptahmigrations', ns, view.name);
        const finalizers = current?.metadata.finalizers ?? [];
        if (current === undefined || !finalizers.includes(MIGRATION_FINALIZER)) return;
        await ptah.patchMetadata('ptahmigrations', ns, view.name, {
          resourceVersion: current.metadata.resourceVersion,
          finalizers: finalizers.filter((f) => f !== MIGRATION_FINALIZER),
        });
        log.info({ migration: view.name, namespace: ns }, 'deletion guard removed');
        return;
      }
      case 'collectSnapshots': {
        const inUse = new Set(action.keep);
        if (status.claim?.snapshotName) inUse.add(status.claim.snapshotName);
        await collectSnapshots(
          core,
          { kind: 'PtahMigration', namespace: ns, name: view.name, uid: view.uid },
          inUse,
          log,
        );
        return;
      }
    }
  }

  private jobFor(view: MigrationView, claim: MigrationClaim): Promise<V1Job> {
    return migrationJob(this.deps, view, claim, this.deps.manager, this.clock());
  }

  private async event(obj: PtahMigration, e: EventSpec): Promise<void> {
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

  /**
   * What publishing a finished History's pending versions would write: the plan object, which names Ptah's
   * own selection under the name its fingerprint gives (immutable, no SQL). Nothing is written here; the
   * decision publishes it (decision/durable-writes.ts).
   */
  private publication(
    obj: PtahMigration,
    view: MigrationView,
    coordination: string,
    binding: ExecutionBinding,
    harvest: Harvest,
  ): Pick<MigrationDecideInput, 'publication' | 'publishRefused'> {
    const claim = view.status.claim;
    if (claim?.type !== 'History' || harvest.kind !== 'accepted') return {};
    const result = harvest.result;
    const h = result.outputs.history;
    if (result.outcome !== 'succeeded' || h?.verdict !== 'pending') return {};
    if (
      view.spec.policy.apply === 'Never' ||
      (view.status.unresolvedRun ?? view.unresolvedAnnotation) !== undefined
    )
      return {};
    const built = buildPlan(obj, view, coordination, result, binding);
    if (!built.ok) return { publishRefused: built.refused };
    return { publication: { kind: 'PtahMigrationPlan', plan: built.plan } };
  }

  /** The status of a plan the decision's publication stored, or why it stored none. */
  private publicationOutcome(
    outcome: PublicationOutcome,
  ): Pick<MigrationDecideInput, 'published' | 'publishRefused'> {
    if (!outcome.ok) return { publishRefused: { reason: outcome.reason, message: outcome.message } };
    const plan = outcome.plan;
    return {
      published: {
        name: plan.metadata.name,
        uid: plan.metadata.uid!,
        fingerprint: plan.spec.fingerprint,
        createdAt: plan.metadata.creationTimestamp
          ? new Date(plan.metadata.creationTimestamp).toISOString()
          : this.clock().toISOString(),
      },
    };
  }

  private writes(guard: WriteGuard): WriteDeps {
    return { core: this.deps.core, ptah: this.deps.ptah, clock: this.clock, guard };
  }

  /** The stored plan, read back: the same object, and every binding it holds still the live one. */
  private async checkPlan(
    view: MigrationView,
    status: MigrationPlanStatus,
    coordination: string,
    binding: ExecutionBinding,
  ): Promise<MigrationPlanCheck> {
    const plan = await this.deps.ptah.get<PtahMigrationPlan>(
      'ptahmigrationplans',
      view.namespace,
      status.name,
    );
    if (
      plan === undefined ||
      plan.metadata.uid !== status.uid ||
      plan.spec.fingerprint !== status.fingerprint
    ) {
      return { ok: false, kind: 'gone', message: `plan ${status.name} was deleted or replaced` };
    }
    const fields = migrationLiveBindingDifferences(plan, migrationLiveBinding(view, coordination, binding));
    return fields.length === 0 ? { ok: true } : { ok: false, kind: 'superseded', fields };
  }
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;

function buildPlan(
  obj: PtahMigration,
  view: MigrationView,
  coordination: string,
  result: RunnerResult,
  execution: ExecutionBinding,
):
  | { readonly ok: true; readonly plan: PtahMigrationPlan }
  | { readonly ok: false; readonly refused: { readonly reason: string; readonly message: string } } {
  const h = result.outputs.history!;
  const source = sourceBinding(view.status.resolution);
  const identity = result.target?.identityDigest;
  if (!source.ok || identity === undefined || !DIGEST.test(identity) || !DIGEST.test(h.historyFingerprint)) {
    return {
      ok: false,
      refused: {
        reason: 'PlanBindingIncomplete',
        message:
          'the plan was not published: the history read did not report the target identity or the history fingerprint',
      },
    };
  }
  if (h.pending.length === 0 || h.pending.length > MAX_PLAN_MIGRATIONS) {
    return {
      ok: false,
      refused: {
        reason: 'TooManyPending',
        message: `${h.pending.length} migrations are pending; one plan runs 1 to ${MAX_PLAN_MIGRATIONS}: apply the directory in steps`,
      },
    };
  }
  const binding: MigrationPlanBinding = {
    contractVersion: MIGRATION_PLAN_CONTRACT_VERSION,
    migrationUID: view.uid,
    ...source.value,
    coordinationDigest: coordination,
    targetIdentityDigest: identity,
    historyFingerprint: h.historyFingerprint,
    currentVersion: h.currentVersion,
    transactionMode: view.spec.policy.transactionMode,
    ...executionPlanBinding(execution),
    dialect: canonicalEngine(view.spec.engine) ?? 'postgres',
  };
  const migrations: PlannedMigration[] = h.pending.map((m) => ({
    version: m.version,
    versionKey: m.versionKey,
    description: m.description.slice(0, 128),
    checksum: m.checksum,
    checkpoint: m.checkpoint,
    transactionMode: m.transactionMode,
  }));
  const fingerprint = migrationPlanFingerprint(binding, migrations);
  return {
    ok: true,
    plan: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'PtahMigrationPlan',
      metadata: migrationPlanMetadata(
        { ...obj, metadata: { ...obj.metadata, namespace: view.namespace } },
        migrationPlanName(fingerprint),
      ),
      spec: { migrationRef: { name: view.name, uid: view.uid }, fingerprint, binding, migrations },
    },
  };
}

/**
 * What a plan's owner says of a plan being created, for vcontrollerwrite (src/admission/plan-objects.ts):
 * the owner read now (its UID the one the plan's owner reference names), the metadata the plan builder
 * gives a plan of that fingerprint, and the bindings that are inputs of the manager and differ from the live
 * ones, by the very comparison the reconciler makes before an Apply (live-binding.ts).
 *
 * Two differences from that comparison, both about timing. The execution binding is the one the resource
 * records, not recomputed from this replica's releases: the leader publishes only under the epoch the
 * resource recorded (a rotated epoch withdraws the claim instead), and the replica answering the webhook
 * may run another release mid-rollout. And the bindings the plan takes from the run that produced it are
 * not compared: the database it read (`targetIdentityDigest`) and, for a migration, the history it read
 * (`historyFingerprint`) reach the resource's status only in the write after the plan's creation, so the
 * live side does not know them yet; the reconciler compares them before an Apply.
 */
import { isSha256Digest, type Sha256Digest } from '../api/digest.ts';
import { migrationPlanFingerprint, migrationPlanName, planName } from '../api/fingerprint.ts';
import type { PtahMigration } from '../api/ptah-migration.ts';
import type { PtahMigrationPlan } from '../api/ptah-migration-plan.ts';
import type { PtahSchema } from '../api/ptah-schema.ts';
import type { PtahSchemaPlan } from '../api/ptah-schema-plan.ts';
import type { PlanAgainstOwner, PlanKind } from '../admission/plan-objects.ts';
import type { OwningResource } from '../admission/vcontrollerwrite.ts';
import { liveBindingDifferences, migrationLiveBindingDifferences } from '../plan-store/live-binding.ts';
import { migrationPlanMetadata, schemaPlanMetadata } from '../plan-store/plan-metadata.ts';
import type { JobReaders } from './jobs/job-readers.ts';
import { coordinationOf, migrationLiveBinding, schemaLiveBinding } from './live-binding.ts';
import { migrationView } from './migration/view.ts';
import { schemaView } from './schema/view.ts';

/** The bindings a plan takes from the run that produced it, which its owner records only afterwards. */
const FROM_THE_RUN: Readonly<Record<PlanKind, ReadonlySet<string>>> = {
  SchemaPlan: new Set(['targetIdentityDigest']),
  MigrationPlan: new Set(['targetIdentityDigest', 'historyFingerprint']),
};

export async function planAgainstOwner(
  readers: JobReaders,
  kind: PlanKind,
  owner: OwningResource,
  plan: unknown,
): Promise<PlanAgainstOwner> {
  const fingerprint = (plan as { spec?: { fingerprint?: unknown } }).spec?.fingerprint;
  if (!isSha256Digest(fingerprint)) return { ok: false, reason: 'its fingerprint is not a SHA-256 digest' };
  const judged = await JUDGE[kind](readers, owner, plan);
  return judged.ok
    ? { ...judged, differing: judged.differing.filter((f) => !FROM_THE_RUN[kind].has(f)) }
    : judged;
}

const JUDGE: Readonly<
  Record<PlanKind, (r: JobReaders, o: OwningResource, plan: unknown) => Promise<PlanAgainstOwner>>
> = {
  SchemaPlan: async (readers, owner, written) => {
    const obj = await readers.ptah.get<PtahSchema>('ptahschemas', owner.namespace, owner.name);
    if (obj === undefined || obj.metadata.uid !== owner.uid) return gone(owner);
    const plan = written as PtahSchemaPlan;
    const view = schemaView(obj);
    const fingerprint = plan.spec.fingerprint as Sha256Digest;
    // A fingerprint retired for good is published again under the name its count of retirements gives.
    const retired = (view.status.retiredPlans ?? []).filter((r) => r.fingerprint === fingerprint).length;
    const binding = view.status.executionBinding;
    return {
      ok: true,
      owner: obj,
      metadata: schemaPlanMetadata(obj, planName(fingerprint, retired)),
      differing: liveBindingDifferences(plan, schemaLiveBinding(view, coordinationOf(view), binding)),
    };
  },
  MigrationPlan: async (readers, owner, written) => {
    const obj = await readers.ptah.get<PtahMigration>('ptahmigrations', owner.namespace, owner.name);
    if (obj === undefined || obj.metadata.uid !== owner.uid) return gone(owner);
    const plan = written as PtahMigrationPlan;
    const view = migrationView(obj);
    const binding = view.status.executionBinding;
    const differing = migrationLiveBindingDifferences(
      plan,
      migrationLiveBinding(view, coordinationOf(view), binding),
    );
    // The name is the fingerprint's, so the fingerprint must be the one its bindings and migrations hash to.
    let recomputed: string | undefined;
    try {
      recomputed = migrationPlanFingerprint(plan.spec.binding, plan.spec.migrations);
    } catch {
      recomputed = undefined;
    }
    if (recomputed !== plan.spec.fingerprint) differing.push('fingerprint');
    return {
      ok: true,
      owner: obj,
      metadata: migrationPlanMetadata(obj, migrationPlanName(plan.spec.fingerprint as Sha256Digest)),
      differing,
    };
  },
};

function gone(owner: OwningResource): PlanAgainstOwner {
  return { ok: false, reason: `its owner ${owner.kind} ${owner.name} with UID ${owner.uid} does not exist` };
}

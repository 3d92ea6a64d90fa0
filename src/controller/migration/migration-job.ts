/**
 * The Job a PtahMigration claim runs, built from the resource, the claim and (for an Apply) the plan the
 * claim names. Called by the reconciler to dispatch and by the controller-write webhook to rebuild the Job
 * it is asked to admit, so both always build the same object.
 */
import type { V1Job } from '@kubernetes/client-node';
import { canonicalEngine } from '../../api/ptah-schema.ts';
import type { PtahMigrationPlan } from '../../api/ptah-migration-plan.ts';
import { buildMigrationJob, type ManagerIdentity } from '../jobs/operation-job.ts';
import { claimedPlan, type JobReaders } from '../jobs/job-readers.ts';
import { artifactJobFor, ociJobSource } from '../snapshot/oci-inputs.ts';
import type { MigrationClaim, MigrationView } from './model.ts';

export async function migrationJob(
  readers: JobReaders,
  view: MigrationView,
  claim: MigrationClaim,
  manager: ManagerIdentity,
  now: Date,
): Promise<V1Job> {
  if (claim.type === 'Resolve' || claim.type === 'Verify') {
    return artifactJobFor(
      readers.core,
      { kind: 'PtahMigration', name: view.name, namespace: view.namespace, uid: view.uid },
      claim,
      view.spec,
      manager,
      now,
    );
  }
  const oci = ociJobSource('PtahMigration', view.spec.oci);
  const git = view.spec.git;
  const plan =
    claim.type === 'Apply'
      ? await claimedPlan<PtahMigrationPlan>(readers, 'ptahmigrationplans', view.namespace, claim.planRef!)
      : undefined;
  return buildMigrationJob({
    migration: { name: view.name, namespace: view.namespace, uid: view.uid },
    claim,
    ...(oci !== undefined ? { oci } : {}),
    ...(git !== undefined ? { git } : {}),
    engine: canonicalEngine(view.spec.engine) ?? 'postgres',
    urlFrom: view.spec.urlFrom,
    activeDeadlineSeconds: view.spec.activeDeadlineSeconds,
    ...(plan !== undefined
      ? {
          plan: {
            fingerprint: plan.spec.fingerprint,
            sequence: plan.spec.migrations.map((m) => ({ version: m.version, checksum: m.checksum })),
            historyFingerprint: plan.spec.binding.historyFingerprint,
            targetIdentityDigest: plan.spec.binding.targetIdentityDigest,
            transactionMode: plan.spec.binding.transactionMode,
            lockTimeoutSeconds: view.spec.policy.lockTimeoutSeconds,
          },
        }
      : {}),
    manager,
    now,
  });
}

/**
 * The ValidatingAdmissionPolicies of a release, built in one place so every installer (the Helm chart, whose
 * template scripts/gen-admission-policies.ts writes from this list, and the test environments) registers the
 * same CEL. Each module under policies/ says why its policy exists.
 *
 * Policies rather than webhooks: the API server evaluates them in process, so they hold while the manager is
 * down or its webhook unreachable (and fail closed if they cannot be evaluated), they need no read of another
 * object, and the component they guard can neither slow nor bypass them.
 */
import type { GuardPolicy, ReleaseIdentity } from './policies/cel.ts';
import { chunkPolicy, configMapDeletionPolicy, configMapPolicy } from './policies/config-maps.ts';
import { jobPolicy } from './policies/job-shape.ts';
import { migrationPlanPolicy, schemaPlanPolicy } from './policies/plans.ts';
import { resourceUpdatePolicy } from './policies/resource-update.ts';
import { statusGuard } from './policies/status-guard.ts';
import { unresolvedRunGuard } from './policies/unresolved-run-guard.ts';

export { managerServiceAccountUsername, type GuardPolicy, type ReleaseIdentity } from './policies/cel.ts';
export { STATUS_GUARD_NAME } from './policies/status-guard.ts';
export { UNRESOLVED_RUN_GUARD_NAME } from './policies/unresolved-run-guard.ts';
export { RESOURCE_UPDATE_POLICY_NAME } from './policies/resource-update.ts';
export { JOB_POLICY_NAME } from './policies/job-shape.ts';
export {
  CHUNK_POLICY_NAME,
  CONFIG_MAP_DELETION_POLICY_NAME,
  CONFIG_MAP_POLICY_NAME,
} from './policies/config-maps.ts';
export { MIGRATION_PLAN_POLICY_NAME, SCHEMA_PLAN_POLICY_NAME } from './policies/plans.ts';

/**
 * Every policy a release installs, in a stable order: the two guards of the manager's state against everyone
 * else, then the seven typed policies, one per kind and verb, that hold the manager's own writes to their
 * narrow structural form (the Job, the plan chunk, the ConfigMaps it creates, the schema plan, the migration
 * plan, the ConfigMap deletion, the PtahSchema/PtahMigration update).
 */
export function admissionPolicies(release: ReleaseIdentity): readonly GuardPolicy[] {
  return [
    statusGuard(release),
    unresolvedRunGuard(release),
    jobPolicy(release),
    chunkPolicy(),
    configMapPolicy(release),
    schemaPlanPolicy(release),
    migrationPlanPolicy(release),
    configMapDeletionPolicy(release),
    resourceUpdatePolicy(release),
  ];
}

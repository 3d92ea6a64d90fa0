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
import { resourceUpdatePolicy } from './policies/resource-update.ts';
import { statusGuard } from './policies/status-guard.ts';
import { unresolvedRunGuard } from './policies/unresolved-run-guard.ts';

export { managerServiceAccountUsername, type GuardPolicy, type ReleaseIdentity } from './policies/cel.ts';
export { STATUS_GUARD_NAME } from './policies/status-guard.ts';
export { UNRESOLVED_RUN_GUARD_NAME } from './policies/unresolved-run-guard.ts';
export { RESOURCE_UPDATE_POLICY_NAME } from './policies/resource-update.ts';

/** Every policy a release installs, in a stable order. */
export function admissionPolicies(release: ReleaseIdentity): readonly GuardPolicy[] {
  return [statusGuard(release), unresolvedRunGuard(release), resourceUpdatePolicy(release)];
}

/**
 * The ValidatingAdmissionPolicies that guard the manager's own state against everyone else, built in one
 * place so every installer (the Helm chart, the test environments) registers the same CEL.
 *
 * The unresolved-run annotation guard: `operator.ptah.run/unresolved-run` on a PtahMigration is the copy
 * of status.unresolvedRun that survives a restore dropping status, and the manager brings a latched run
 * back from it. Anyone who could change it on an existing object could release that latch without an
 * acknowledgment, so only the manager may (seed: credentials and admission). A create carrying it is
 * admitted: that is what a restore is.
 *
 * A policy rather than a webhook: the API server evaluates it in process, so the guard holds while the
 * manager is down or its webhook unreachable (and fails closed if the policy cannot be evaluated), it
 * needs no read of any other object, and it cannot be slowed or bypassed by the component it guards.
 */
import type * as k8s from '@kubernetes/client-node';
import { API_GROUP } from '../api/meta.ts';
import { UNRESOLVED_RUN_ANNOTATION } from '../api/ptah-migration.ts';

export const UNRESOLVED_RUN_GUARD_NAME = 'ptah-unresolved-run-annotation-guard';

export interface ManagerIdentity {
  /** The manager ServiceAccount's username, `system:serviceaccount:<namespace>:<name>`. */
  readonly username: string;
}

export function managerServiceAccountUsername(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/** A CEL string literal; usernames and keys here hold no quote or backslash, but a literal is built right. */
function celString(s: string): string {
  return JSON.stringify(s);
}

export function unresolvedRunAnnotationGuard(manager: ManagerIdentity): {
  readonly policy: k8s.V1ValidatingAdmissionPolicy;
  readonly binding: k8s.V1ValidatingAdmissionPolicyBinding;
} {
  const key = celString(UNRESOLVED_RUN_ANNOTATION);
  // The annotation as a list of zero or one value, so "absent" and "empty" are different values.
  const value = (o: string) =>
    `has(${o}.metadata.annotations) && ${key} in ${o}.metadata.annotations ? [${o}.metadata.annotations[${key}]] : []`;
  return {
    policy: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: UNRESOLVED_RUN_GUARD_NAME },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: [API_GROUP],
              apiVersions: ['*'],
              // The main resource only: a status write cannot change metadata, and the status guard owns it.
              resources: ['ptahmigrations'],
              operations: ['UPDATE'],
            },
          ],
        },
        matchConditions: [
          {
            name: 'not-the-manager',
            expression: `request.userInfo.username != ${celString(manager.username)}`,
          },
        ],
        variables: [
          { name: 'before', expression: value('oldObject') },
          { name: 'after', expression: value('object') },
        ],
        validations: [
          {
            expression: 'variables.before == variables.after',
            messageExpression: `'only the manager may change the ${UNRESOLVED_RUN_ANNOTATION} annotation of PtahMigration ' + object.metadata.name + ': it records a run that may have changed part of the database; settle the run and create a PtahMigrationRunAcknowledgment (kubectl ptah migration acknowledge ' + object.metadata.name + ')'`,
            reason: 'Forbidden',
          },
        ],
      },
    },
    binding: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: UNRESOLVED_RUN_GUARD_NAME },
      spec: { policyName: UNRESOLVED_RUN_GUARD_NAME, validationActions: ['Deny'] },
    },
  };
}

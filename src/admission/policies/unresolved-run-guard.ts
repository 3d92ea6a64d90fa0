/**
 * The unresolved-run annotation guard: `operator.ptah.run/unresolved-run` on a PtahMigration is the copy of
 * status.unresolvedRun that survives a restore dropping status, and the manager brings a latched run back
 * from it. Anyone who could change it on an existing object could release that latch without an
 * acknowledgment, so only the manager may. A create carrying it is admitted: that is what a restore is.
 *
 * A policy rather than a webhook: the API server evaluates it in process, so the guard holds while the
 * manager is down or its webhook unreachable (and fails closed if the policy cannot be evaluated), it needs no
 * read of any other object, and it cannot be slowed or bypassed by the component it guards.
 */
import { API_GROUP } from '../../api/meta.ts';
import { UNRESOLVED_RUN_ANNOTATION } from '../../api/ptah-migration.ts';
import { byManager, celString, guardPolicy, type GuardPolicy, type ReleaseIdentity } from './cel.ts';

export const UNRESOLVED_RUN_GUARD_NAME = 'ptah-unresolved-run-annotation-guard';

/** The annotation of `o` as a list of zero or one value, so "absent" and "empty" are different values. */
export function annotationValue(o: string, key: string): string {
  const k = celString(key);
  return `has(${o}.metadata.annotations) && ${k} in ${o}.metadata.annotations ? [${o}.metadata.annotations[${k}]] : []`;
}

export function unresolvedRunGuard(release: ReleaseIdentity): GuardPolicy {
  return guardPolicy(UNRESOLVED_RUN_GUARD_NAME, {
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
    matchConditions: [{ name: 'not-the-manager', expression: `!(${byManager(release)})` }],
    variables: [
      { name: 'before', expression: annotationValue('oldObject', UNRESOLVED_RUN_ANNOTATION) },
      { name: 'after', expression: annotationValue('object', UNRESOLVED_RUN_ANNOTATION) },
    ],
    validations: [
      {
        expression: 'variables.before == variables.after',
        messageExpression: `${celString(`only the manager may change the ${UNRESOLVED_RUN_ANNOTATION} annotation of PtahMigration `)} + object.metadata.name + ': it records a run that may have changed part of the database; settle the run and create a PtahMigrationRunAcknowledgment (kubectl ptah migration acknowledge ' + object.metadata.name + ')'`,
        reason: 'Forbidden',
      },
    ],
  });
}

/**
 * The policy over PtahSchema and PtahMigration updates: these are resources a person owns, and the manager
 * writes to their main resource for two reasons only, its own finalizer (the deletion guard) and, on a
 * PtahMigration, the unresolved-run annotation. Any other change the manager's ServiceAccount sends (the spec,
 * a label, another annotation, an owner, another finalizer) is refused, so a manager that went wrong cannot
 * rewrite what a person declared. It carries no image or state version: no manager stamps these resources.
 * Everyone else's updates are the unresolved-run guard's and RBAC's business, not this policy's.
 */
import { API_GROUP, SCHEMA_FINALIZER } from '../../api/meta.ts';
import { MIGRATION_FINALIZER, UNRESOLVED_RUN_ANNOTATION } from '../../api/ptah-migration.ts';
import { byManager, celString, guardPolicy, type GuardPolicy, type ReleaseIdentity } from './cel.ts';

export const RESOURCE_UPDATE_POLICY_NAME = 'ptah-resource-update';

/** Both lists or maps compared as sets of keys (or items) without `skip`, values included for maps. */
const sameMapExcept = (a: string, b: string, skip: string) =>
  `${a}.filter(k, k != ${skip}).all(k, k in ${b} && ${b}[k] == ${a}[k]) && ${b}.filter(k, k != ${skip}).all(k, k in ${a})`;
const sameSetExcept = (a: string, b: string, skip: string) =>
  `${a}.filter(f, f != ${skip}).all(f, f in ${b}) && ${b}.filter(f, f != ${skip}).all(f, f in ${a})`;

export function resourceUpdatePolicy(release: ReleaseIdentity): GuardPolicy {
  const finalizer = `object.kind == 'PtahMigration' ? ${celString(MIGRATION_FINALIZER)} : ${celString(SCHEMA_FINALIZER)}`;
  // The one annotation the manager moves, on a migration; on a schema no key is exempt ('' is no key).
  const movable = `object.kind == 'PtahMigration' ? ${celString(UNRESOLVED_RUN_ANNOTATION)} : ''`;
  const meta = (o: string, field: string, empty: string) =>
    `has(${o}.metadata.${field}) ? ${o}.metadata.${field} : ${empty}`;
  return guardPolicy(RESOURCE_UPDATE_POLICY_NAME, {
    matchConstraints: {
      resourceRules: [
        {
          apiGroups: [API_GROUP],
          apiVersions: ['*'],
          resources: ['ptahschemas', 'ptahmigrations'],
          operations: ['UPDATE'],
        },
      ],
    },
    matchConditions: [{ name: 'the-manager', expression: byManager(release) }],
    variables: [
      { name: 'finalizer', expression: finalizer },
      { name: 'movable', expression: movable },
      { name: 'annotationsBefore', expression: meta('oldObject', 'annotations', '{}') },
      { name: 'annotationsAfter', expression: meta('object', 'annotations', '{}') },
      { name: 'finalizersBefore', expression: meta('oldObject', 'finalizers', '[]') },
      { name: 'finalizersAfter', expression: meta('object', 'finalizers', '[]') },
    ],
    validations: [
      {
        expression: `(has(object.spec) ? object.spec : {}) == (has(oldObject.spec) ? oldObject.spec : {})`,
        messageExpression: `'the manager may not change the spec of ' + object.kind + ' ' + object.metadata.name + ': a person declares it'`,
        reason: 'Forbidden',
      },
      {
        expression: `(${meta('object', 'labels', '{}')}) == (${meta('oldObject', 'labels', '{}')}) && (${meta('object', 'ownerReferences', '[]')}) == (${meta('oldObject', 'ownerReferences', '[]')})`,
        messageExpression: `'the manager may not change the labels or owners of ' + object.kind + ' ' + object.metadata.name`,
        reason: 'Forbidden',
      },
      {
        expression: sameMapExcept(
          'variables.annotationsAfter',
          'variables.annotationsBefore',
          'variables.movable',
        ),
        messageExpression: `'the manager moves no annotation of ' + object.kind + ' ' + object.metadata.name + (variables.movable == '' ? '' : ' but ' + variables.movable)`,
        reason: 'Forbidden',
      },
      {
        expression: sameSetExcept(
          'variables.finalizersAfter',
          'variables.finalizersBefore',
          'variables.finalizer',
        ),
        messageExpression: `'the manager adds or removes no finalizer of ' + object.kind + ' ' + object.metadata.name + ' but ' + variables.finalizer`,
        reason: 'Forbidden',
      },
    ],
  });
}

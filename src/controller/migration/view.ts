/**
 * Maps stored objects onto the migration decision's view: the spec with every default applied and durations
 * in milliseconds, the unresolved-run annotation parsed and checked, approvals and acknowledgments reduced to
 * what their exactness is judged on.
 */
import { realmRefOf } from '../../api/ptah-realm.ts';
import { gitSourceView, ociSourceView } from '../snapshot/artifact-steps.ts';
import { parseDuration } from '../../api/duration.ts';
import {
  MIGRATION_FINALIZER,
  UNRESOLVED_RUN_ANNOTATION,
  ptahMigrationSpec,
  unresolvedRun,
  type PtahMigration,
  type UnresolvedRun,
} from '../../api/ptah-migration.ts';
import type {
  PtahMigrationApproval,
  PtahMigrationRunAcknowledgment,
} from '../../api/ptah-migration-approval.ts';
import { validate, withDefaults } from '../../api/schema-dsl.ts';
import type { AcknowledgmentView, MigrationApprovalView, MigrationView } from './model.ts';

/** The annotation's run, `invalid` when it holds something else, undefined when there is none. */
export function parseUnresolvedAnnotation(value: string | undefined): UnresolvedRun | 'invalid' | undefined {
  if (value === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return 'invalid';
  }
  const checked = validate(unresolvedRun, parsed);
  return checked.ok ? checked.value : 'invalid';
}

export function migrationView(obj: PtahMigration): MigrationView {
  const spec = withDefaults(ptahMigrationSpec, obj.spec);
  const cm = spec.desired.configMap;
  const oci = ociSourceView(spec.desired);
  const git = gitSourceView(spec.desired);
  const annotation = parseUnresolvedAnnotation(obj.metadata.annotations?.[UNRESOLVED_RUN_ANNOTATION]);
  return {
    namespace: obj.metadata.namespace ?? '',
    name: obj.metadata.name,
    uid: obj.metadata.uid ?? '',
    generation: obj.metadata.generation ?? 0,
    deleting: obj.metadata.deletionTimestamp !== undefined,
    hasFinalizer: (obj.metadata.finalizers ?? []).includes(MIGRATION_FINALIZER),
    spec: {
      engine: spec.target.engine,
      realm: realmRefOf(spec.target),
      urlFrom: { name: spec.target.urlFrom.name, key: spec.target.urlFrom.key },
      configMap: {
        name: cm?.name ?? '',
        files: (cm?.files ?? []).map((f) => ({ key: f.key, path: f.path ?? f.key })),
      },
      ...(oci !== undefined ? { oci } : {}),
      ...(git !== undefined ? { git } : {}),
      ...(spec.verificationPolicyFrom !== undefined
        ? { verificationPolicyName: spec.verificationPolicyFrom.name }
        : {}),
      ...(spec.sourcePolicyFrom !== undefined ? { sourcePolicyName: spec.sourcePolicyFrom.name } : {}),
      policy: {
        apply: spec.policy.apply,
        lockTimeoutSeconds: Math.round(parseDuration(spec.policy.lockTimeout) / 1000),
        transactionMode: spec.policy.transactionMode ?? 'unset',
      },
      intervalMs: parseDuration(spec.interval),
      failureRetryIntervalMs: parseDuration(spec.execution.failureRetryInterval),
      activeDeadlineSeconds: spec.execution.activeDeadlineSeconds,
      suspend: spec.suspend,
    },
    status: obj.status ?? {},
    ...(annotation !== undefined ? { unresolvedAnnotation: annotation } : {}),
  };
}

const isTrue = (conds: readonly { type: string; status: string }[] | undefined, type: string) =>
  (conds ?? []).some((c) => c.type === type && c.status === 'True');

export function migrationApprovalView(obj: PtahMigrationApproval): MigrationApprovalView {
  const conds = obj.status?.conditions;
  return {
    name: obj.metadata.name,
    uid: obj.metadata.uid ?? '',
    createdAt: obj.metadata.creationTimestamp ?? '',
    migrationRef: obj.spec.migrationRef,
    planRef: obj.spec.planRef,
    planFingerprint: obj.spec.planFingerprint,
    ...(obj.spec.approver?.username ? { approver: obj.spec.approver.username } : {}),
    ...(obj.spec.approvedAt ? { approvedAt: obj.spec.approvedAt } : {}),
    ...(obj.spec.mutationRequestUID ? { mutationRequestUID: obj.spec.mutationRequestUID } : {}),
    consumed: isTrue(conds, 'Consumed'),
    stale: isTrue(conds, 'Stale') || obj.metadata.deletionTimestamp !== undefined,
  };
}

export function acknowledgmentView(obj: PtahMigrationRunAcknowledgment): AcknowledgmentView {
  const conds = obj.status?.conditions;
  const by = obj.spec.acknowledgedBy;
  return {
    name: obj.metadata.name,
    uid: obj.metadata.uid ?? '',
    createdAt: obj.metadata.creationTimestamp ?? '',
    migrationRef: obj.spec.migrationRef,
    operationId: obj.spec.operationId,
    ...(by?.username
      ? { acknowledgedBy: { username: by.username, ...(by.groups ? { groups: [...by.groups] } : {}) } }
      : {}),
    ...(obj.spec.acknowledgedAt ? { acknowledgedAt: obj.spec.acknowledgedAt } : {}),
    ...(obj.spec.mutationRequestUID ? { mutationRequestUID: obj.spec.mutationRequestUID } : {}),
    consumed: isTrue(conds, 'Consumed'),
    stale: isTrue(conds, 'Stale') || obj.metadata.deletionTimestamp !== undefined,
  };
}

/**
 * Maps stored objects onto the decision's view: the spec with every default applied and durations in
 * milliseconds, approvals reduced to what exactness is judged on.
 */
import { realmRefOf } from '../../api/ptah-realm.ts';
import { gitSourceView, ociSourceView } from '../snapshot/artifact-steps.ts';
import { parseDuration } from '../../api/duration.ts';
import { SCHEMA_FINALIZER } from '../../api/meta.ts';
import { ptahSchemaSpec, type PtahSchema } from '../../api/ptah-schema.ts';
import type { PtahSchemaApproval } from '../../api/ptah-schema-approval.ts';
import { withDefaults } from '../../api/schema-dsl.ts';
import type { ApprovalView, SchemaView } from './model.ts';

export function schemaView(obj: PtahSchema): SchemaView {
  const spec = withDefaults(ptahSchemaSpec, obj.spec);
  const cm = spec.desired.configMap;
  const oci = ociSourceView(spec.desired);
  const git = gitSourceView(spec.desired);
  return {
    namespace: obj.metadata.namespace ?? '',
    name: obj.metadata.name,
    uid: obj.metadata.uid ?? '',
    generation: obj.metadata.generation ?? 0,
    deleting: obj.metadata.deletionTimestamp !== undefined,
    hasFinalizer: (obj.metadata.finalizers ?? []).includes(SCHEMA_FINALIZER),
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
        allowDestructive: spec.policy.allowDestructive,
        protectedTables: spec.policy.protectedTables ?? [],
        exclude: spec.policy.exclude ?? [],
      },
      intervalMs: parseDuration(spec.interval),
      failureRetryIntervalMs: parseDuration(spec.execution.failureRetryInterval),
      activeDeadlineSeconds: spec.execution.activeDeadlineSeconds,
      suspend: spec.suspend,
    },
    status: obj.status ?? {},
  };
}

export function approvalView(obj: PtahSchemaApproval): ApprovalView {
  const conds = obj.status?.conditions ?? [];
  const isTrue = (type: string) => conds.some((c) => c.type === type && c.status === 'True');
  return {
    name: obj.metadata.name,
    uid: obj.metadata.uid ?? '',
    createdAt: obj.metadata.creationTimestamp ?? '',
    schemaRef: obj.spec.schemaRef,
    planRef: obj.spec.planRef,
    planFingerprint: obj.spec.planFingerprint,
    ...(obj.spec.approver?.username ? { approver: obj.spec.approver.username } : {}),
    ...(obj.spec.approvedAt ? { approvedAt: obj.spec.approvedAt } : {}),
    ...(obj.spec.mutationRequestUID ? { mutationRequestUID: obj.spec.mutationRequestUID } : {}),
    consumed: isTrue('Consumed'),
    stale: isTrue('Stale') || obj.metadata.deletionTimestamp !== undefined,
  };
}

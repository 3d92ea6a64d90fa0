/**
 * The schema-plan and migration-plan policies: a plan is created by the manager of this release and by
 * nobody else. It names its resource by label, reference and binding alike, is owned by that resource and
 * nothing else, and its binding carries this release's manager image and controller-state version, both
 * literals here, so a plan stamped by another manager release (a leftover replica of the old one mid-upgrade,
 * or anyone writing a plan by hand) is refused before an approval could name it. Its spec is immutable by the
 * CRD's own rule; this judges what it is created as.
 */
import { API_GROUP, GROUP_VERSION, LABELS, MANAGED_BY } from '../../api/meta.ts';
import { celString as q, guardPolicy, type GuardPolicy, type ReleaseIdentity } from './cel.ts';

export const SCHEMA_PLAN_POLICY_NAME = 'ptah-schema-plan-shape';
export const MIGRATION_PLAN_POLICY_NAME = 'ptah-migration-plan-shape';

interface PlanKind {
  readonly policy: string;
  readonly kind: string;
  readonly resource: string;
  readonly ownerKind: string;
  readonly ref: string;
  readonly uidField: string;
  readonly namePattern: string;
  /** Labels beyond managed-by and the resource's. */
  readonly extraLabels: Readonly<Record<string, string>>;
}

function planPolicy(release: ReleaseIdentity, k: PlanKind): GuardPolicy {
  const labels = Object.keys(k.extraLabels).length + 2;
  const owner = k.ownerKind === 'PtahSchema' ? LABELS.schema : LABELS.migration;
  const extra = Object.entries(k.extraLabels)
    .map(([key, v]) => ` && object.metadata.labels[?${q(key)}] == optional.of(${q(v)})`)
    .join('');
  const name = `${k.kind} ' + object.metadata.name + '`;
  return guardPolicy(k.policy, {
    matchConstraints: {
      resourceRules: [
        { apiGroups: [API_GROUP], apiVersions: ['*'], resources: [k.resource], operations: ['CREATE'] },
      ],
    },
    validations: [
      {
        expression: `object.spec.binding.managerImage == ${q(release.managerImage)} && object.spec.binding.controllerStateVersion == ${release.controllerStateVersion}`,
        messageExpression: `'${name} was stamped by manager image ' + object.spec.binding.managerImage + ' at controller-state version ' + string(object.spec.binding.controllerStateVersion) + '; this release runs ' + ${q(`${release.managerImage} at controller-state version ${release.controllerStateVersion}`)}`,
        reason: 'Forbidden',
      },
      {
        expression: `object.metadata.name.matches(${q(k.namePattern)}) && size(object.metadata.?labels.orValue({})) == ${labels} && object.metadata.labels[?${q(LABELS.managedBy)}] == optional.of(${q(MANAGED_BY)}) && object.metadata.labels[?${q(owner)}] == optional.of(object.spec.${k.ref}.name)${extra}`,
        messageExpression: `'${name} must be named like ${k.namePattern} and carry exactly the labels ${LABELS.managedBy}=${MANAGED_BY}, ${[...Object.entries(k.extraLabels).map(([a, b]) => `${a}=${b}`), owner].join(', ')}=<its ${k.ownerKind}>'`,
        reason: 'Forbidden',
      },
      {
        expression: `object.spec.binding.${k.uidField} == object.spec.${k.ref}.uid && size(object.metadata.?ownerReferences.orValue([])) == 1 && object.metadata.ownerReferences.all(r, r.apiVersion == ${q(GROUP_VERSION)} && r.kind == ${q(k.ownerKind)} && r.name == object.spec.${k.ref}.name && r.uid == object.spec.${k.ref}.uid && r.?controller == optional.of(true) && r.?blockOwnerDeletion == optional.of(true))`,
        messageExpression: `'${name} must be owned by exactly the ${k.ownerKind} its ${k.ref} names (name and UID, the controller reference, blocking deletion), and bind that UID'`,
        reason: 'Forbidden',
      },
    ],
  });
}

export function schemaPlanPolicy(release: ReleaseIdentity): GuardPolicy {
  const policy = planPolicy(release, {
    policy: SCHEMA_PLAN_POLICY_NAME,
    kind: 'PtahSchemaPlan',
    resource: 'ptahschemaplans',
    ownerKind: 'PtahSchema',
    ref: 'schemaRef',
    uidField: 'schemaUID',
    namePattern: '^ptah-plan-[0-9a-f]{24}$',
    extraLabels: {},
  });
  // A schema plan's chunks are named after it, in order.
  policy.policy.spec!.validations!.push({
    expression: `object.spec.chunks.all(c, c.name == object.metadata.name + '-' + (c.index < 10 ? '00' : '0') + string(c.index)) && object.spec.chunks.all(c, object.spec.chunks.exists_one(o, o.index == c.index))`,
    messageExpression: `'PtahSchemaPlan ' + object.metadata.name + ': its chunks are named <plan>-NNN after their index, each index once'`,
    reason: 'Invalid',
  });
  return policy;
}

export function migrationPlanPolicy(release: ReleaseIdentity): GuardPolicy {
  return planPolicy(release, {
    policy: MIGRATION_PLAN_POLICY_NAME,
    kind: 'PtahMigrationPlan',
    resource: 'ptahmigrationplans',
    ownerKind: 'PtahMigration',
    ref: 'migrationRef',
    uidField: 'migrationUID',
    namePattern: '^ptah-mplan-[0-9a-f]{24}$',
    extraLabels: { [LABELS.component]: 'migration-plan' },
  });
}

/**
 * vapproval: validating admission for PtahSchemaApproval CREATE. It reads the current PtahSchema and
 * PtahSchemaPlan from the API server and refuses an approval that does not name exactly the plan the
 * schema is waiting on: schema name and UID, plan name and UID, and fingerprint. The manager checks all of
 * this again before an Apply; admission makes a wrong approval fail where the person can see why.
 */
import { normalisePolicy, policyFingerprint } from '../api/fingerprint.ts';
import type { PtahSchema } from '../api/ptah-schema.ts';
import type { PtahSchemaPlan } from '../api/ptah-schema-plan.ts';
import type { PtahSchemaApproval } from '../api/ptah-schema-approval.ts';
import type { ApprovalSubjects } from './approval-subjects.ts';
import {
  createdDecision,
  exactPlanProblem,
  isRef,
  isRefusal,
  readSubjects,
  resourceProblem,
} from './decision-checks.ts';
import { DECISIONS } from './decisions.ts';
import { allowed, denied, type AdmissionDecision, type AdmissionRequest } from './review.ts';

const DECISION = DECISIONS.PtahSchemaApproval;

export function validateApproval(subjects: ApprovalSubjects) {
  return async (request: AdmissionRequest): Promise<AdmissionDecision> => {
    // The spec is immutable (CEL), so only a create carries a decision to check.
    if (request.operation !== 'CREATE') return allowed();
    const created = createdDecision<PtahSchemaApproval['spec']>(
      DECISION,
      request,
      (s) => isRef(s['schemaRef']) && isRef(s['planRef']) && typeof s['planFingerprint'] === 'string',
      'schemaRef and planRef (name and uid) and planFingerprint',
    );
    if (isRefusal(created)) return created;
    const { spec, namespace } = created;

    const read = await readSubjects('schema or plan', async () => ({
      schema: await subjects.getSchema(namespace, spec.schemaRef.name),
      plan: await subjects.getPlan(namespace, spec.planRef.name),
    }));
    if (isRefusal(read)) return read;
    const { schema, plan } = read;
    const wrongSchema = resourceProblem(
      DECISION,
      'PtahSchema',
      spec.schemaRef,
      schema,
      'approve its current plan by its current UID',
    );
    if (wrongSchema !== undefined || schema === undefined) return denied(wrongSchema ?? '');
    const wrongPlan = exactPlanProblem(DECISION, {
      resourceKind: 'PtahSchema',
      planKind: 'PtahSchemaPlan',
      resource: schema,
      current: schema.status?.plan,
      planRef: spec.planRef,
      planFingerprint: spec.planFingerprint,
      plan,
      planOwner: plan?.spec.schemaRef,
    });
    if (wrongPlan !== undefined || plan === undefined) return denied(wrongPlan ?? '');
    const unappliable = policyRefusal(schema, plan);
    if (unappliable !== undefined) return denied(unappliable);
    return allowed();
  };
}

/**
 * Why the resource's policy will never apply this plan, if it will not: an approval for it would be
 * admitted only to wait forever. The manager applies the same rules (decide.ts, applyAuthorisation).
 */
function policyRefusal(schema: PtahSchema, plan: PtahSchemaPlan): string | undefined {
  const name = schema.metadata.name;
  const policy = normalisePolicy(schema.spec.policy);
  if (policy.apply === 'Never')
    return `PtahSchema ${name} has spec.policy.apply Never: no plan is applied, approved or not; set apply to OnApproval to apply approved plans`;
  const destructive = schema.status?.plan?.destructive === true || plan.spec.binding?.destructive === true;
  if (destructive && !policy.allowDestructive)
    return `plan ${plan.metadata.name} is destructive and PtahSchema ${name} has spec.policy.allowDestructive false: it will not be applied, approved or not; set allowDestructive true to allow it`;
  if (schema.status?.phase === 'Blocked') {
    const ready = schema.status.conditions?.find((c) => c.type === 'Ready');
    return `PtahSchema ${name} is Blocked${ready?.reason ? ` (${ready.reason})` : ''}: its plan will not be applied; resolve the block first`;
  }
  if (
    plan.spec.binding?.policyFingerprint !== undefined &&
    plan.spec.binding.policyFingerprint !== policyFingerprint(schema.spec.policy)
  )
    return `spec.policy of PtahSchema ${name} changed since plan ${plan.metadata.name} was made: the plan will be replaced; approve the new one`;
  return undefined;
}

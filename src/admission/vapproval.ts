/**
 * vapproval: validating admission for PtahSchemaApproval CREATE. It reads the current PtahSchema and
 * PtahSchemaPlan from the API server and refuses an approval that does not name exactly the plan the
 * schema is waiting on: schema name and UID, plan name and UID, and fingerprint. The manager checks all of
 * this again before an Apply; admission makes a wrong approval fail where the person can see why.
 */
import { normalisePolicy, policyFingerprint } from '../api/fingerprint.ts';
import type { PtahSchema } from '../api/ptah-schema.ts';
import type { PtahSchemaPlan } from '../api/ptah-schema-plan.ts';
import type { Approver, PtahSchemaApproval } from '../api/ptah-schema-approval.ts';
import type { ApprovalSubjects } from './approval-subjects.ts';
import {
  allowed,
  denied,
  errored,
  type AdmissionDecision,
  type AdmissionRequest,
  type AdmissionUserInfo,
} from './review.ts';

export function validateApproval(subjects: ApprovalSubjects) {
  return async (request: AdmissionRequest): Promise<AdmissionDecision> => {
    // The spec is immutable (CEL), so only a create carries a decision to check.
    if (request.operation !== 'CREATE') return allowed();
    const approval = request.object as PtahSchemaApproval | undefined;
    const spec = approval?.spec;
    const namespace = request.namespace ?? approval?.metadata?.namespace;
    if (spec === undefined || namespace === undefined) return denied('the approval has no spec or namespace');
    // The API server validates the schema between the webhooks; this check must not depend on that order.
    if (!wellFormed(spec))
      return denied('the approval spec needs schemaRef and planRef (name and uid) and planFingerprint');
    if (
      spec.approver?.username === undefined ||
      spec.mutationRequestUID === undefined ||
      spec.approvedAt === undefined
    ) {
      // mapproval did not run: an unstamped approval carries no trustworthy identity.
      return denied('the approval is not stamped by admission; is the mapproval webhook registered?');
    }
    if (!stampedFrom(spec.approver, request.userInfo)) {
      // mapproval stamps exactly the requesting identity, so a mismatch means the client wrote it: a
      // mutating webhook that is missing or failed open must not let a typed approver through.
      return denied(
        'the approver recorded is not the user making this request; the approval must be stamped by the mapproval webhook',
      );
    }

    let schema;
    let plan;
    try {
      schema = await subjects.getSchema(namespace, spec.schemaRef.name);
      plan = await subjects.getPlan(namespace, spec.planRef.name);
    } catch (error) {
      return errored(
        500,
        `could not read the schema or plan: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    if (schema === undefined) return denied(`PtahSchema ${spec.schemaRef.name} does not exist`);
    if (schema.metadata.uid !== spec.schemaRef.uid) {
      return denied(
        `the approval names PtahSchema ${spec.schemaRef.name} with UID ${spec.schemaRef.uid}, but the PtahSchema of that name has UID ${schema.metadata.uid ?? '(none)'}: it is another object than the approval was written for; approve its current plan by its current UID`,
      );
    }
    const current = schema.status?.plan;
    if (current === undefined) return denied(`PtahSchema ${spec.schemaRef.name} is not waiting on any plan`);
    if (current.name !== spec.planRef.name || current.uid !== spec.planRef.uid) {
      return denied(
        `the approval names plan ${spec.planRef.name}, but the current plan of ${spec.schemaRef.name} is ${current.name}`,
      );
    }
    if (current.fingerprint !== spec.planFingerprint) {
      return denied('the approval names another fingerprint than the current plan');
    }
    if (plan === undefined) return denied(`PtahSchemaPlan ${spec.planRef.name} does not exist`);
    if (plan.metadata.uid !== spec.planRef.uid)
      return denied(
        `the approval names PtahSchemaPlan ${spec.planRef.name} with UID ${spec.planRef.uid}, but the plan of that name has another UID, ${plan.metadata.uid ?? '(none)'}`,
      );
    if (plan.spec.fingerprint !== spec.planFingerprint)
      return denied('the plan object carries another fingerprint');
    if (
      plan.spec.schemaRef.uid !== schema.metadata.uid ||
      plan.spec.schemaRef.name !== schema.metadata.name
    ) {
      return denied(`PtahSchemaPlan ${spec.planRef.name} belongs to another PtahSchema`);
    }
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

function wellFormed(spec: unknown): spec is PtahSchemaApproval['spec'] {
  const ref = (v: unknown) =>
    typeof v === 'object' &&
    v !== null &&
    typeof (v as { name?: unknown }).name === 'string' &&
    typeof (v as { uid?: unknown }).uid === 'string';
  if (typeof spec !== 'object' || spec === null) return false;
  const s = spec as Record<string, unknown>;
  const approver = s['approver'];
  return (
    ref(s['schemaRef']) &&
    ref(s['planRef']) &&
    typeof s['planFingerprint'] === 'string' &&
    (approver === undefined || (typeof approver === 'object' && approver !== null))
  );
}

/** The approver is exactly what mapproval builds from this request's identity: username, uid and groups. */
function stampedFrom(approver: Approver, user: AdmissionUserInfo): boolean {
  const groups = user.groups ?? [];
  const recorded: readonly unknown[] = Array.isArray(approver.groups) ? approver.groups : [];
  return (
    approver.username === user.username &&
    (approver.uid ?? '') === (user.uid ?? '') &&
    recorded.length === groups.length &&
    recorded.every((g, i) => g === groups[i])
  );
}

/**
 * vapproval: validating admission for PtahSchemaApproval CREATE. It reads the current PtahSchema and
 * PtahSchemaPlan from the API server and refuses an approval that does not name exactly the plan the
 * schema is waiting on: schema name and UID, plan name and UID, and fingerprint. The manager checks all of
 * this again before an Apply; admission makes a wrong approval fail where the person can see why.
 */
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
        `PtahSchema ${spec.schemaRef.name} has another UID: it was deleted and recreated since the plan was made`,
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
      return denied(`PtahSchemaPlan ${spec.planRef.name} has another UID`);
    if (plan.spec.fingerprint !== spec.planFingerprint)
      return denied('the plan object carries another fingerprint');
    if (
      plan.spec.schemaRef.uid !== schema.metadata.uid ||
      plan.spec.schemaRef.name !== schema.metadata.name
    ) {
      return denied(`PtahSchemaPlan ${spec.planRef.name} belongs to another PtahSchema`);
    }
    return allowed();
  };
}

/** The approver is exactly what mapproval builds from this request's identity: username, uid and groups. */
function stampedFrom(approver: Approver, user: AdmissionUserInfo): boolean {
  const groups = user.groups ?? [];
  const recorded = approver.groups ?? [];
  return (
    approver.username === user.username &&
    (approver.uid ?? '') === (user.uid ?? '') &&
    recorded.length === groups.length &&
    recorded.every((g, i) => g === groups[i])
  );
}

/**
 * mapproval: mutating admission for PtahSchemaApproval CREATE. Who approved, when, and in which request
 * are facts of the authenticated request, not of the object: whatever the client wrote in
 * spec.approver, spec.approvedAt and spec.mutationRequestUID is replaced (seed: plans and approvals).
 */
import type { PtahSchemaApproval } from '../api/ptah-schema-approval.ts';
import { computeJsonPatch } from './json-patch.ts';
import { allowed, denied, patched, type AdmissionDecision, type AdmissionRequest } from './review.ts';

/** The CRD caps groups at 64; an identity that does not fit is refused rather than cut. */
const MAX_GROUPS = 64;
const MAX_NAME = 512;

export interface StampOptions {
  /** The clock, for tests. */
  readonly now?: () => Date;
}

export function mutateApproval(options: StampOptions = {}) {
  const now = options.now ?? (() => new Date());
  return (request: AdmissionRequest): AdmissionDecision => {
    if (request.operation !== 'CREATE') return allowed();
    if (request.kind.kind !== 'PtahSchemaApproval')
      return denied(`mapproval stamps PtahSchemaApproval, not ${request.kind.kind}`);
    const before = request.object as PtahSchemaApproval | undefined;
    if (typeof before?.spec !== 'object' || before.spec === null) return denied('the approval has no spec');

    const { username, uid, groups } = request.userInfo;
    if (username === undefined || username === '')
      return denied('an approval needs an authenticated username');
    if (username.length > MAX_NAME || (uid ?? '').length > MAX_NAME)
      return denied('the authenticated identity is too long to record');
    if ((groups ?? []).length > MAX_GROUPS)
      return denied(
        `the approver belongs to more than ${MAX_GROUPS} groups; the approval cannot record them all`,
      );
    if ((groups ?? []).some((g) => g.length > MAX_NAME)) return denied('a group name is too long to record');

    const after: PtahSchemaApproval = {
      ...before,
      spec: {
        ...before.spec,
        // Built from nothing the client wrote: a forged uid or group does not survive an identity without one.
        approver: {
          username,
          ...(uid !== undefined && uid !== '' ? { uid } : {}),
          ...(groups !== undefined && groups.length > 0 ? { groups: [...groups] } : {}),
        },
        approvedAt: rfc3339Seconds(now()),
        mutationRequestUID: request.uid,
      },
    };
    return patched(computeJsonPatch(before, after));
  };
}

/** metav1.Time precision: whole seconds, UTC. */
function rfc3339Seconds(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * Stamping who decided, for every decision kind (mapproval, mmigrationapproval,
 * mmigrationrunacknowledgment), and the validating side's check that the stamp is exactly that. Who decided,
 * when, and in which request are facts of the authenticated request, not of the object: whatever the client
 * wrote in those fields is replaced (seed: plans and approvals; credentials and admission).
 */
import type { Approver } from '../api/ptah-schema-approval.ts';
import { DECISIONS, type Decision, type DecisionKind } from './decisions.ts';
import { computeJsonPatch } from './json-patch.ts';
import {
  allowed,
  denied,
  patched,
  type AdmissionDecision,
  type AdmissionRequest,
  type AdmissionUserInfo,
} from './review.ts';

/** The CRD caps groups at 64; an identity that does not fit is refused rather than cut. */
const MAX_GROUPS = 64;
const MAX_NAME = 512;

export interface StampOptions {
  /** The clock, for tests. */
  readonly now?: () => Date;
}

interface DecisionObject {
  readonly spec?: Record<string, unknown>;
}

/** A mutating handler: it answers at once, reading nothing. */
export type StampHandler = (request: AdmissionRequest) => AdmissionDecision;

/** The mutating handler of one decision kind: CREATE only, since the spec is immutable afterwards. */
export function stampDecision(kind: DecisionKind, options: StampOptions = {}): StampHandler {
  const d = DECISIONS[kind];
  const now = options.now ?? (() => new Date());
  return (request: AdmissionRequest): AdmissionDecision => {
    if (request.operation !== 'CREATE') return allowed();
    if (request.kind.kind !== d.kind)
      return denied(`${d.mutating} stamps ${d.kind}, not ${request.kind.kind}`);
    const before = request.object as DecisionObject | undefined;
    if (typeof before?.spec !== 'object' || before.spec === null || Array.isArray(before.spec))
      return denied(`the ${d.noun} has no spec`);

    const { username, uid, groups } = request.userInfo;
    if (username === undefined || username === '')
      return denied(`an ${d.noun} needs an authenticated username`);
    if (username.length > MAX_NAME || (uid ?? '').length > MAX_NAME)
      return denied('the authenticated identity is too long to record');
    if ((groups ?? []).length > MAX_GROUPS)
      return denied(
        `the ${d.person} belongs to more than ${MAX_GROUPS} groups; the ${d.noun} cannot record them all`,
      );
    if ((groups ?? []).some((g) => g.length > MAX_NAME)) return denied('a group name is too long to record');

    // Built from nothing the client wrote: a forged uid or group does not survive an identity without one.
    const identity: Approver = {
      username,
      ...(uid !== undefined && uid !== '' ? { uid } : {}),
      ...(groups !== undefined && groups.length > 0 ? { groups: [...groups] } : {}),
    };
    const after = {
      ...before,
      spec: {
        ...before.spec,
        [d.identityField]: identity,
        [d.timeField]: rfc3339Seconds(now()),
        mutationRequestUID: request.uid,
      },
    };
    return patched(computeJsonPatch(before, after));
  };
}

/**
 * Why the validating webhook must refuse this decision's stamp, or undefined when it is exactly what the
 * mutating webhook builds from this request. A decision without the stamp, or with another identity,
 * means the mutating webhook did not run (missing, or failed open): the author may have typed it.
 */
export function stampProblem(
  d: Decision,
  spec: Readonly<Record<string, unknown>>,
  user: AdmissionUserInfo,
): string | undefined {
  const identity = spec[d.identityField];
  if (
    typeof identity !== 'object' ||
    identity === null ||
    typeof (identity as { username?: unknown }).username !== 'string' ||
    spec['mutationRequestUID'] === undefined ||
    spec[d.timeField] === undefined
  ) {
    return `the ${d.noun} is not stamped by admission; is the ${d.mutating} webhook registered?`;
  }
  if (!stampedFrom(identity as Approver, user)) {
    return `the ${d.person} recorded is not the user making this request; the ${d.noun} must be stamped by the ${d.mutating} webhook`;
  }
  return undefined;
}

/** The identity is exactly what stampDecision builds from this request: username, uid and groups. */
function stampedFrom(identity: Approver, user: AdmissionUserInfo): boolean {
  const groups = user.groups ?? [];
  const recorded: readonly unknown[] = Array.isArray(identity.groups) ? identity.groups : [];
  return (
    identity.username === user.username &&
    (identity.uid ?? '') === (user.uid ?? '') &&
    recorded.length === groups.length &&
    recorded.every((g, i) => g === groups[i])
  );
}

/** metav1.Time precision: whole seconds, UTC. */
function rfc3339Seconds(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

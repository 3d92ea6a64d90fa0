/**
 * The checks every validating decision webhook makes, in one place: the request carries a spec of the
 * right shape, stamped from this request; the resource it names is the object of that name now (UID); the
 * plan it names is exactly the resource's current plan (name, UID, fingerprint, owner); and after
 * creation nothing it binds changes. vapproval, vmigrationapproval and vmigrationrunacknowledgment differ
 * only in what they read and what the resource's own state refuses.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Decision } from './decisions.ts';
import { stampProblem } from './decision-stamp.ts';
import { denied, errored, type AdmissionDecision, type AdmissionRequest } from './review.ts';

export interface Ref {
  readonly name: string;
  readonly uid: string;
}

interface Named {
  readonly metadata: { readonly name: string; readonly uid?: string };
}

export function isRef(v: unknown): v is Ref {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as { name?: unknown }).name === 'string' &&
    typeof (v as { uid?: unknown }).uid === 'string'
  );
}

/**
 * The spec and namespace of a created decision, once its shape and stamp hold; otherwise the refusal.
 * The API server validates the schema between the webhooks, and this check must not depend on that order:
 * `shape` says whether the fields the webhook reads are there, and `shapeHint` what they are.
 */
export function createdDecision<S>(
  d: Decision,
  request: AdmissionRequest,
  shape: (spec: Readonly<Record<string, unknown>>) => boolean,
  shapeHint: string,
): { readonly spec: S; readonly namespace: string } | AdmissionDecision {
  const object = request.object as { spec?: unknown; metadata?: { namespace?: string } } | undefined;
  const spec = object?.spec;
  const namespace = request.namespace ?? object?.metadata?.namespace;
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec) || namespace === undefined)
    return denied(`the ${d.noun} has no spec or namespace`);
  const fields = spec as Readonly<Record<string, unknown>>;
  const identity = fields[d.identityField];
  if (!shape(fields) || (identity !== undefined && (typeof identity !== 'object' || identity === null)))
    return denied(`the ${d.noun} spec needs ${shapeHint}`);
  const unstamped = stampProblem(d, fields, request.userInfo);
  if (unstamped !== undefined) return denied(unstamped);
  return { spec: spec as S, namespace };
}

export function isRefusal(v: unknown): v is AdmissionDecision {
  return typeof v === 'object' && v !== null && 'allowed' in v;
}

/** Reads what a decision is about, uncached; a read that fails is a 500, never an allow. */
export async function readSubjects<T>(what: string, read: () => Promise<T>): Promise<T | AdmissionDecision> {
  try {
    return await read();
  } catch (error) {
    return errored(
      500,
      `could not read the ${what}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/**
 * Why the resource a decision names is not the object of that name now, or undefined when it is. A name
 * can be reused; the UID says which object the person decided about. `fix` says what to do instead.
 */
export function resourceProblem(
  d: Decision,
  kind: string,
  ref: Ref,
  found: Named | undefined,
  fix: string,
): string | undefined {
  if (found === undefined) return `${kind} ${ref.name} does not exist`;
  if (found.metadata.uid !== ref.uid)
    return `the ${d.noun} names ${kind} ${ref.name} with UID ${ref.uid}, but the ${kind} of that name has UID ${found.metadata.uid ?? '(none)'}: it is another object than the ${d.noun} was written for; ${fix}`;
  return undefined;
}

export interface ExactPlan {
  readonly resourceKind: string;
  readonly planKind: string;
  readonly resource: Named;
  /** status.plan of the resource: the plan it waits on, if any. */
  readonly current: { readonly name: string; readonly uid: string; readonly fingerprint: string } | undefined;
  readonly planRef: Ref;
  readonly planFingerprint: string;
  readonly plan: (Named & { readonly spec: { readonly fingerprint: string } }) | undefined;
  /** The resource the plan object says it belongs to. */
  readonly planOwner: Ref | undefined;
}

/** Why the plan a decision names is not exactly the plan its resource waits on now, or undefined. */
export function exactPlanProblem(d: Decision, p: ExactPlan): string | undefined {
  const name = p.resource.metadata.name;
  if (p.current === undefined) return `${p.resourceKind} ${name} is not waiting on any plan`;
  if (p.current.name !== p.planRef.name || p.current.uid !== p.planRef.uid)
    return `the ${d.noun} names plan ${p.planRef.name}, but the current plan of ${name} is ${p.current.name}`;
  if (p.current.fingerprint !== p.planFingerprint)
    return `the ${d.noun} names another fingerprint than the current plan`;
  if (p.plan === undefined) return `${p.planKind} ${p.planRef.name} does not exist`;
  if (p.plan.metadata.uid !== p.planRef.uid)
    return `the ${d.noun} names ${p.planKind} ${p.planRef.name} with UID ${p.planRef.uid}, but the plan of that name has another UID, ${p.plan.metadata.uid ?? '(none)'}`;
  if (p.plan.spec.fingerprint !== p.planFingerprint) return 'the plan object carries another fingerprint';
  if (p.planOwner?.uid !== p.resource.metadata.uid || p.planOwner?.name !== name)
    return `${p.planKind} ${p.planRef.name} belongs to another ${p.resourceKind}`;
  return undefined;
}

/**
 * An UPDATE of a decision: the spec (what it names and who decided) is never edited. Metadata and, through
 * its subresource, status may change; the spec fields that differ are named in the refusal.
 */
export function boundFieldsUnchanged(d: Decision, request: AdmissionRequest): AdmissionDecision | undefined {
  const before = (request.oldObject as { spec?: Record<string, unknown> } | undefined)?.spec ?? {};
  const after = (request.object as { spec?: Record<string, unknown> } | undefined)?.spec ?? {};
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  const changed = keys.filter((k) => !isDeepStrictEqual(before[k], after[k]));
  if (changed.length === 0) return undefined;
  const name =
    (request.object as { metadata?: { name?: string } } | undefined)?.metadata?.name ?? request.name;
  return denied(
    `${d.kind} ${name ?? ''} binds what it names and who decided, and is never edited (changed: ${changed
      .map((k) => `spec.${k}`)
      .join(', ')}); create another ${d.noun} instead`,
  );
}

/**
 * AdmissionReview v1, and the only four ways a handler may answer (controller-runtime's habit): a
 * decision is opaque, so a handler cannot forget the UID or hand-craft a half-valid response; the server
 * adds the UID when it writes the review.
 */

export interface GroupVersionKind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
}

export interface GroupVersionResource {
  readonly group: string;
  readonly version: string;
  readonly resource: string;
}

export interface AdmissionUserInfo {
  readonly username?: string;
  readonly uid?: string;
  readonly groups?: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

export interface AdmissionRequest {
  readonly uid: string;
  readonly kind: GroupVersionKind;
  readonly resource: GroupVersionResource;
  readonly subResource?: string;
  readonly name?: string;
  readonly namespace?: string;
  readonly operation: AdmissionOperation;
  readonly userInfo: AdmissionUserInfo;
  readonly object?: unknown;
  readonly oldObject?: unknown;
  readonly dryRun?: boolean;
}

export type JsonPatchOperation =
  | { readonly op: 'add'; readonly path: string; readonly value: unknown }
  | { readonly op: 'replace'; readonly path: string; readonly value: unknown }
  | { readonly op: 'remove'; readonly path: string };

export interface AdmissionResponse {
  readonly uid: string;
  readonly allowed: boolean;
  readonly status?: { readonly code: number; readonly message: string; readonly reason?: string };
  readonly patch?: string;
  readonly patchType?: 'JSONPatch';
  readonly warnings?: readonly string[];
}

export interface AdmissionReview {
  readonly apiVersion: 'admission.k8s.io/v1';
  readonly kind: 'AdmissionReview';
  readonly request?: AdmissionRequest;
  readonly response?: AdmissionResponse;
}

declare const decisionBrand: unique symbol;
/** What a handler returns; build it only with the functions below. */
export type AdmissionDecision = Omit<AdmissionResponse, 'uid'> & { readonly [decisionBrand]: true };

export type AdmissionHandler = (request: AdmissionRequest) => AdmissionDecision | Promise<AdmissionDecision>;

function decision(d: Omit<AdmissionResponse, 'uid'>): AdmissionDecision {
  return d as AdmissionDecision;
}

export function allowed(warnings?: readonly string[]): AdmissionDecision {
  return decision({ allowed: true, ...(warnings !== undefined && warnings.length > 0 ? { warnings } : {}) });
}

/** A refusal the requester should read: 403, with the reason as the message. */
export function denied(reason: string): AdmissionDecision {
  return decision({ allowed: false, status: { code: 403, reason: 'Forbidden', message: reason } });
}

/** Allowed with changes. An empty patch is a plain `allowed()`. */
export function patched(
  patch: readonly JsonPatchOperation[],
  warnings?: readonly string[],
): AdmissionDecision {
  if (patch.length === 0) return allowed(warnings);
  return decision({
    allowed: true,
    patchType: 'JSONPatch',
    patch: Buffer.from(JSON.stringify(patch), 'utf8').toString('base64'),
    ...(warnings !== undefined && warnings.length > 0 ? { warnings } : {}),
  });
}

/** The webhook could not decide (bad request 400, could not read the API 500…): never an allow. */
export function errored(code: number, err: unknown): AdmissionDecision {
  const message = err instanceof Error ? err.message : String(err);
  return decision({ allowed: false, status: { code, message: message.slice(0, 1024) } });
}

/** The response the server writes: the decision plus the request's UID. */
export function respond(uid: string, d: AdmissionDecision): AdmissionReview {
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, ...d } };
}

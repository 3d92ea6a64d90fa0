/**
 * What every ValidatingAdmissionPolicy of the release shares: how a literal is written into CEL, how a
 * policy and its binding are paired, and who the manager is.
 */
import type * as k8s from '@kubernetes/client-node';

/**
 * What a release fixes when it is installed, and the policies carry as literals: the manager's
 * ServiceAccount (the only identity exempt from the guards), and, for the Job and plan policies, the image and
 * controller-state version that stamp what the manager builds.
 */
export interface ReleaseIdentity {
  /** `system:serviceaccount:<namespace>:<name>` of the ServiceAccount the manager runs as. */
  readonly managerUsername: string;
  /** `repository[:tag]@sha256:<hex>`: what PTAH_MANAGER_IMAGE says and every Job and plan records. */
  readonly managerImage: string;
  readonly controllerStateVersion: number;
}

export function managerServiceAccountUsername(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/** A CEL string literal. JSON's escapes are CEL's for every character a name, key or image can hold. */
export function celString(s: string): string {
  return JSON.stringify(s);
}

/** A CEL list of string literals. */
export function celStrings(xs: readonly string[]): string {
  return `[${xs.map(celString).join(', ')}]`;
}

export interface GuardPolicy {
  readonly policy: k8s.V1ValidatingAdmissionPolicy;
  readonly binding: k8s.V1ValidatingAdmissionPolicyBinding;
}

/** A policy bound cluster-wide under its own name, denying what it refuses; it fails closed. */
export function guardPolicy(
  name: string,
  spec: Omit<k8s.V1ValidatingAdmissionPolicySpec, 'failurePolicy'>,
): GuardPolicy {
  return {
    policy: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name },
      spec: { failurePolicy: 'Fail', ...spec },
    },
    binding: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name },
      spec: { policyName: name, validationActions: ['Deny'] },
    },
  };
}

/** `request.userInfo.username == <the manager>`. */
export function byManager(release: Pick<ReleaseIdentity, 'managerUsername'>): string {
  return `request.userInfo.username == ${celString(release.managerUsername)}`;
}

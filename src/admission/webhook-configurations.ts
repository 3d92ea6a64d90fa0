/**
 * The registrations that make the API server call the approval webhooks: a MutatingWebhookConfiguration
 * that stamps the approver (mapproval) and a ValidatingWebhookConfiguration that checks the approval
 * (vapproval), both on PtahSchemaApproval CREATE only. Built in one place so every installer registers
 * the same rules, the same failure policy and the same paths the server serves.
 */
import type * as k8s from '@kubernetes/client-node';
import { API_GROUP, API_VERSION } from '../api/meta.ts';
import { WEBHOOK_PATHS } from './webhooks.ts';

export interface ApprovalWebhookOptions {
  /** Where the manager's admission server listens, without a trailing slash, e.g. `https://127.0.0.1:9443`. */
  readonly baseUrl: string;
  /** Base64 PEM of the CA that signed the server's certificate. */
  readonly caBundle: string;
  /** Names of the two configuration objects; a test may register its own beside the operator's. */
  readonly names?: { readonly mutating: string; readonly validating: string };
  readonly timeoutSeconds?: number;
}

export interface ApprovalWebhookConfigurations {
  readonly mutating: k8s.V1MutatingWebhookConfiguration;
  readonly validating: k8s.V1ValidatingWebhookConfiguration;
}

export const DEFAULT_APPROVAL_WEBHOOK_NAMES = { mutating: 'ptah-mapproval', validating: 'ptah-vapproval' };

export function approvalWebhookConfigurations(
  options: ApprovalWebhookOptions,
): ApprovalWebhookConfigurations {
  const names = options.names ?? DEFAULT_APPROVAL_WEBHOOK_NAMES;
  const hook = (name: keyof typeof WEBHOOK_PATHS) => ({
    name: `${name}.${API_GROUP}`,
    clientConfig: { url: `${options.baseUrl}${WEBHOOK_PATHS[name]}`, caBundle: options.caBundle },
    rules: [
      {
        apiGroups: [API_GROUP],
        apiVersions: [API_VERSION],
        resources: ['ptahschemaapprovals'],
        operations: ['CREATE'],
        scope: 'Namespaced',
      },
    ],
    // An approval admitted without the stamp or the check would be trusted: no webhook, no approval.
    failurePolicy: 'Fail',
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    timeoutSeconds: options.timeoutSeconds ?? 10,
  });
  return {
    mutating: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: names.mutating },
      // The stamp is the only mutation; nothing later can change what it stamped.
      webhooks: [{ ...hook('mapproval'), reinvocationPolicy: 'Never' }],
    },
    validating: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: names.validating },
      webhooks: [hook('vapproval')],
    },
  };
}

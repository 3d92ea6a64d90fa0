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

type RegisteredWebhook = k8s.V1MutatingWebhook | k8s.V1ValidatingWebhook;

/**
 * Why approvals cannot be trusted under these registrations, or undefined when they can: some
 * MutatingWebhookConfiguration must send every PtahSchemaApproval CREATE to our mapproval path and some
 * ValidatingWebhookConfiguration to our vapproval path, failing closed (failurePolicy Fail) and with no
 * selector or match condition that could let an approval past them. Without both, an approval's approver
 * may have been typed by its author, so the manager accepts none.
 */
export function approvalWebhooksProblem(registered: {
  readonly mutating: readonly k8s.V1MutatingWebhookConfiguration[];
  readonly validating: readonly k8s.V1ValidatingWebhookConfiguration[];
}): string | undefined {
  return approvalWebhookGuard(registered).problem;
}

/**
 * The check above, and since when the guard has stood: the later creation time of the two configurations
 * that guard approvals. An approval created before then may have passed no webhook at all, with every
 * stamped field typed by its author, so it is never accepted.
 */
export function approvalWebhookGuard(registered: {
  readonly mutating: readonly k8s.V1MutatingWebhookConfiguration[];
  readonly validating: readonly k8s.V1ValidatingWebhookConfiguration[];
}): { readonly problem?: string; readonly since?: Date } {
  const m = registered.mutating.filter((c) =>
    (c.webhooks ?? []).some((w) => guards(w, WEBHOOK_PATHS.mapproval)),
  );
  const v = registered.validating.filter((c) =>
    (c.webhooks ?? []).some((w) => guards(w, WEBHOOK_PATHS.vapproval)),
  );
  const problem = guardProblem(m.length > 0, v.length > 0);
  if (problem !== undefined) return { problem };
  // The earliest guarding configuration of each kind; the guard stands since the later of the two.
  const earliest = (cs: readonly { metadata?: k8s.V1ObjectMeta }[]) =>
    Math.min(...cs.map((c) => new Date(c.metadata?.creationTimestamp ?? 0).getTime()));
  return { since: new Date(Math.max(earliest(m), earliest(v))) };
}

function guardProblem(mutatingOk: boolean, validatingOk: boolean): string | undefined {
  const missing: string[] = [];
  if (!mutatingOk)
    missing.push(
      `no MutatingWebhookConfiguration sends PtahSchemaApproval CREATE to ${WEBHOOK_PATHS.mapproval}`,
    );
  if (!validatingOk)
    missing.push(
      `no ValidatingWebhookConfiguration sends PtahSchemaApproval CREATE to ${WEBHOOK_PATHS.vapproval}`,
    );
  if (missing.length === 0) return undefined;
  return `approvals are not accepted: ${missing.join('; ')} with failurePolicy Fail and no selector; register them (approvalWebhookConfigurations) and the approval is read again`;
}

function guards(webhook: RegisteredWebhook, path: string): boolean {
  if ((webhook.failurePolicy ?? 'Fail') !== 'Fail') return false;
  if ((webhook.matchConditions ?? []).length > 0) return false;
  if (!emptySelector(webhook.namespaceSelector) || !emptySelector(webhook.objectSelector)) return false;
  if (webhookPath(webhook.clientConfig) !== path) return false;
  const any = (xs: readonly string[] | undefined, x: string) => (xs ?? []).some((v) => v === x || v === '*');
  return (webhook.rules ?? []).some(
    (r) =>
      any(r.apiGroups, API_GROUP) &&
      any(r.apiVersions, API_VERSION) &&
      any(r.resources, 'ptahschemaapprovals') &&
      any(r.operations, 'CREATE') &&
      (r.scope === undefined || r.scope === '*' || r.scope === 'Namespaced'),
  );
}

function webhookPath(config: k8s.AdmissionregistrationV1WebhookClientConfig): string | undefined {
  if (config.service !== undefined) return config.service.path;
  if (config.url === undefined) return undefined;
  try {
    return new URL(config.url).pathname;
  } catch {
    return undefined;
  }
}

function emptySelector(selector: k8s.V1LabelSelector | undefined): boolean {
  return (
    selector === undefined ||
    (Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0)
  );
}

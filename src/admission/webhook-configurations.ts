/**
 * The registrations that make the API server call the decision webhooks: one MutatingWebhookConfiguration
 * whose webhooks stamp who decided (mapproval, mmigrationapproval, mmigrationrunacknowledgment) and one
 * ValidatingWebhookConfiguration whose webhooks check what the decision names (vapproval,
 * vmigrationapproval, vmigrationrunacknowledgment), each on its own kind, all failing closed. Built in one
 * place so every installer registers the same rules, the same failure policy and the same paths the server
 * serves.
 */
import type * as k8s from '@kubernetes/client-node';
import { API_GROUP, API_VERSION } from '../api/meta.ts';
import { DECISION_KINDS, DECISIONS, type DecisionKind, type WebhookName } from './decisions.ts';
import { controllerWriteMatch } from './vcontrollerwrite.ts';
import { podIntentMatch } from './vpodintent.ts';
import { WEBHOOK_PATHS, type ControllerWebhookName } from './webhooks.ts';

/** The plan kinds vcontrollerwrite judges, every object of them (CEL list). */
const PLAN_KINDS = "['PtahSchemaPlan', 'PtahMigrationPlan', 'PtahSchemaPlanChunk']";

export interface ApprovalWebhookOptions {
  /** Where the manager's admission server listens, without a trailing slash, e.g. `https://127.0.0.1:9443`. */
  readonly baseUrl: string;
  /** Base64 PEM of the CA that signed the server's certificate. */
  readonly caBundle: string;
  /** Names of the two configuration objects; a test may register its own beside the operator's. */
  readonly names?: { readonly mutating: string; readonly validating: string; readonly controller?: string };
  readonly timeoutSeconds?: number;
  readonly controllerWriteTimeoutSeconds?: number;
}

export interface ApprovalWebhookConfigurations {
  readonly mutating: k8s.V1MutatingWebhookConfiguration;
  readonly validating: k8s.V1ValidatingWebhookConfiguration;
  /** vcontrollerwrite and vpodintent: the objects only the manager and the Job controller write. */
  readonly controller: k8s.V1ValidatingWebhookConfiguration;
}

export const DEFAULT_APPROVAL_WEBHOOK_NAMES = {
  mutating: 'ptah-mapproval',
  validating: 'ptah-vapproval',
  controller: 'ptah-vcontrollerwrite',
};

/**
 * The controller-write webhook reads the owning resource, its plan and source before it answers; it gets
 * the longer timeout (the API server allows at most 30 seconds).
 */
export const CONTROLLER_WRITE_TIMEOUT_SECONDS = 15;

export function approvalWebhookConfigurations(
  options: ApprovalWebhookOptions,
): ApprovalWebhookConfigurations {
  const names = options.names ?? DEFAULT_APPROVAL_WEBHOOK_NAMES;
  const hook = (name: WebhookName, resource: string, operations: readonly string[]) => ({
    name: `${name}.${API_GROUP}`,
    clientConfig: { url: `${options.baseUrl}${WEBHOOK_PATHS[name]}`, caBundle: options.caBundle },
    rules: [
      {
        apiGroups: [API_GROUP],
        apiVersions: [API_VERSION],
        resources: [resource],
        operations: [...operations],
        scope: 'Namespaced',
      },
    ],
    // A decision admitted without the stamp or the check would be trusted: no webhook, no decision.
    failurePolicy: 'Fail',
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    timeoutSeconds: options.timeoutSeconds ?? 10,
  });
  const decisions = DECISION_KINDS.map((k) => DECISIONS[k]);
  return {
    mutating: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: names.mutating },
      // The stamp is the only mutation; nothing later can change what it stamped.
      webhooks: decisions.map((d) => ({
        ...hook(d.mutating, d.resource, ['CREATE']),
        reinvocationPolicy: 'Never',
      })),
    },
    validating: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: names.validating },
      webhooks: decisions.map((d) => hook(d.validating, d.resource, d.validatingOperations)),
    },
    controller: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: names.controller ?? DEFAULT_APPROVAL_WEBHOOK_NAMES.controller },
      webhooks: [
        controllerHook(
          options,
          'vcontrollerwrite',
          [
            { apiGroups: ['batch'], apiVersions: ['v1'], resources: ['jobs'] },
            { apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] },
            {
              apiGroups: [API_GROUP],
              apiVersions: [API_VERSION],
              // The main resources only: a plan's status (its published chunks) is the manager's, and the
              // status guard holds it to the manager alone.
              resources: ['ptahschemaplans', 'ptahmigrationplans', 'ptahschemaplanchunks'],
            },
          ],
          [
            {
              name: 'operation-jobs-snapshots-and-plans',
              // Every plan and plan chunk: only the manager makes one.
              expression: `request.kind.kind in ${PLAN_KINDS} || (request.kind.kind == 'Job' ? (${controllerWriteMatch('Job')}) : (${controllerWriteMatch('ConfigMap')}))`,
            },
          ],
        ),
        controllerHook(
          options,
          'vpodintent',
          [
            {
              apiGroups: [''],
              apiVersions: ['v1'],
              resources: ['pods', 'pods/ephemeralcontainers', 'pods/resize'],
            },
          ],
          [{ name: 'operation-pods', expression: podIntentMatch() }],
        ),
      ],
    },
  };
}

/**
 * A webhook over the objects the manager and the Job controller write (of other groups, and plans and their
 * chunks):
 * the match condition selects the manager's objects (by name, labels or owner, in the old or the new
 * object, so dropping a mark is judged too); every namespace.
 */
function controllerHook(
  options: ApprovalWebhookOptions,
  name: ControllerWebhookName,
  rules: readonly { apiGroups: string[]; apiVersions: string[]; resources: string[] }[],
  matchConditions: readonly k8s.V1MatchCondition[],
): k8s.V1ValidatingWebhook {
  return {
    name: `${name}.${API_GROUP}`,
    clientConfig: { url: `${options.baseUrl}${WEBHOOK_PATHS[name]}`, caBundle: options.caBundle },
    rules: rules.map((r) => ({ ...r, operations: ['CREATE', 'UPDATE'], scope: 'Namespaced' })),
    matchConditions: [...matchConditions],
    // An object admitted unchecked would run or be mounted as the manager's: no webhook, no write.
    failurePolicy: 'Fail',
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    timeoutSeconds:
      name === 'vcontrollerwrite'
        ? (options.controllerWriteTimeoutSeconds ?? CONTROLLER_WRITE_TIMEOUT_SECONDS)
        : (options.timeoutSeconds ?? 10),
  };
}

type RegisteredWebhook = k8s.V1MutatingWebhook | k8s.V1ValidatingWebhook;

/**
 * Why decisions of `kind` (schema approvals unless told) cannot be trusted under these registrations, or
 * undefined when they can: some MutatingWebhookConfiguration must send every CREATE of that kind to our
 * stamping path (mapproval, mmigrationapproval, mmigrationrunacknowledgment) and some
 * ValidatingWebhookConfiguration to our checking path, failing closed (failurePolicy Fail) and with no
 * selector or match condition that could let one past them. Without both, the identity a decision records
 * may have been typed by its author, so the manager accepts none of that kind.
 */
export function approvalWebhooksProblem(
  registered: {
    readonly mutating: readonly k8s.V1MutatingWebhookConfiguration[];
    readonly validating: readonly k8s.V1ValidatingWebhookConfiguration[];
  },
  kind: DecisionKind = 'PtahSchemaApproval',
): string | undefined {
  return approvalWebhookGuard(registered, kind).problem;
}

/**
 * The check above, and since when the guard has stood: the later creation time of the two configurations
 * that guard approvals. An approval created before then may have passed no webhook at all, with every
 * stamped field typed by its author, so it is never accepted.
 */
export function approvalWebhookGuard(
  registered: {
    readonly mutating: readonly k8s.V1MutatingWebhookConfiguration[];
    readonly validating: readonly k8s.V1ValidatingWebhookConfiguration[];
  },
  kind: DecisionKind = 'PtahSchemaApproval',
): { readonly problem?: string; readonly since?: Date } {
  const d = DECISIONS[kind];
  const m = registered.mutating.filter((c) =>
    (c.webhooks ?? []).some((w) => guards(w, WEBHOOK_PATHS[d.mutating], d.resource)),
  );
  const v = registered.validating.filter((c) =>
    (c.webhooks ?? []).some((w) => guards(w, WEBHOOK_PATHS[d.validating], d.resource)),
  );
  const problem = guardProblem(kind, m.length > 0, v.length > 0);
  if (problem !== undefined) return { problem };
  // The earliest guarding configuration of each kind; the guard stands since the later of the two.
  const earliest = (cs: readonly { metadata?: k8s.V1ObjectMeta }[]) =>
    Math.min(...cs.map((c) => new Date(c.metadata?.creationTimestamp ?? 0).getTime()));
  return { since: new Date(Math.max(earliest(m), earliest(v))) };
}

function guardProblem(kind: DecisionKind, mutatingOk: boolean, validatingOk: boolean): string | undefined {
  const d = DECISIONS[kind];
  const missing: string[] = [];
  if (!mutatingOk)
    missing.push(`no MutatingWebhookConfiguration sends ${kind} CREATE to ${WEBHOOK_PATHS[d.mutating]}`);
  if (!validatingOk)
    missing.push(`no ValidatingWebhookConfiguration sends ${kind} CREATE to ${WEBHOOK_PATHS[d.validating]}`);
  if (missing.length === 0) return undefined;
  return `${d.plural} are not accepted: ${missing.join('; ')} with failurePolicy Fail and no selector; register them (approvalWebhookConfigurations) and the ${d.noun} is read again`;
}

function guards(webhook: RegisteredWebhook, path: string, resource: string): boolean {
  if ((webhook.failurePolicy ?? 'Fail') !== 'Fail') return false;
  if ((webhook.matchConditions ?? []).length > 0) return false;
  if (!emptySelector(webhook.namespaceSelector) || !emptySelector(webhook.objectSelector)) return false;
  if (webhookPath(webhook.clientConfig) !== path) return false;
  const any = (xs: readonly string[] | undefined, x: string) => (xs ?? []).some((v) => v === x || v === '*');
  return (webhook.rules ?? []).some(
    (r) =>
      any(r.apiGroups, API_GROUP) &&
      any(r.apiVersions, API_VERSION) &&
      any(r.resources, resource) &&
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

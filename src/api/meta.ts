/**
 * Names, constants and shared schema pieces used by every kind in operator.ptah.run/v1alpha1.
 */
import { SHA256_DIGEST_PATTERN } from './digest.ts';
import { array, enumOf, integer, object, optional, string } from './schema-dsl.ts';

export const API_GROUP = 'operator.ptah.run';
export const API_VERSION = 'v1alpha1';
export const GROUP_VERSION = `${API_GROUP}/${API_VERSION}`;

/** Label and annotation keys the operator writes. */
export const LABELS = {
  managedBy: 'app.kubernetes.io/managed-by',
  component: 'app.kubernetes.io/component',
  schema: `${API_GROUP}/schema`,
  migration: `${API_GROUP}/migration`,
  plan: `${API_GROUP}/plan`,
  operation: `${API_GROUP}/operation`,
  operationId: `${API_GROUP}/operation-id`,
} as const;
export const MANAGED_BY = 'ptah-operator';

/**
 * The version of what the manager keeps in status and on the objects it stamps; a release that reads them
 * differently raises it. Jobs and plans record it, and the release's admission policies refuse one stamped
 * with another.
 */
export const CONTROLLER_STATE_VERSION = 1;

/** The label an object the operator makes for a resource carries, naming that resource by its kind. */
export function resourceLabel(kind: string): string {
  return kind === 'PtahMigration' ? LABELS.migration : LABELS.schema;
}
export const READ_REQUESTED_ANNOTATION = `${API_GROUP}/read-requested-at`;

export const DNS_SUBDOMAIN_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
export const CONFIG_MAP_KEY_PATTERN = '^[-._a-zA-Z0-9]+$';

export const digest = (description: string) =>
  string({ description, pattern: SHA256_DIGEST_PATTERN, maxLength: 71 });
export const objectName = (description: string) =>
  string({ description, pattern: DNS_SUBDOMAIN_PATTERN, minLength: 1, maxLength: 253 });
export const uid = (description: string) => string({ description, minLength: 1, maxLength: 128 });
export const timestamp = (description: string) => string({ description, format: 'date-time', maxLength: 64 });

/** A reference that survives only as long as the object does: a recreated object has another UID. */
export const objectRef = (description: string) =>
  object({ name: objectName('Name of the object.'), uid: uid('UID of the object.') }, { description });

/** status.observedGeneration of every kind. */
export const observedGeneration = optional(
  integer({
    description: 'The metadata.generation the manager last acted on; older than the resource means not yet.',
    format: 'int64',
    minimum: 0,
  }),
);

/** metav1.Condition, as Kubernetes declares it. */
export const condition = object({
  type: string({
    description: 'Condition type, CamelCase.',
    pattern:
      '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
    maxLength: 316,
  }),
  status: enumOf(['True', 'False', 'Unknown'], {
    description: 'Whether the condition holds: True, False, or Unknown when it could not be judged.',
  }),
  observedGeneration: optional(
    integer({
      description: 'The metadata.generation the condition judged; older than the resource means stale.',
      format: 'int64',
      minimum: 0,
    }),
  ),
  lastTransitionTime: string({
    description: 'When the status last changed (not when the condition was last written).',
    format: 'date-time',
  }),
  reason: string({
    description: 'Stable machine-readable reason; consumers match (type, status, reason).',
    pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
    minLength: 1,
    maxLength: 1024,
  }),
  message: string({ description: 'Human-readable; never an API.', maxLength: 32768 }),
});

export const conditions = array(condition, {
  description: 'Current observations; match (type, status, reason) and check observedGeneration.',
  listType: 'map',
  mapKeys: ['type'],
  maxItems: 16,
});

export interface ObjectMeta {
  readonly name: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
  readonly generation?: number;
  readonly creationTimestamp?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  readonly ownerReferences?: readonly OwnerReference[];
  readonly deletionTimestamp?: string;
  readonly finalizers?: readonly string[];
}

export interface OwnerReference {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
  readonly controller?: boolean;
  readonly blockOwnerDeletion?: boolean;
}

/** The one owner reference the operator writes: a controller reference that blocks owner deletion. */
export function controllerOwnerReference(owner: {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly uid?: string };
}): OwnerReference {
  if (owner.metadata.uid === undefined || owner.metadata.uid === '') {
    throw new Error(`${owner.kind} ${owner.metadata.name} has no UID; an owner reference needs one`);
  }
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name,
    uid: owner.metadata.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/**
 * Held on a PtahSchema while anything it started may still run: deletion waits for a dispatched Apply to end
 * (its Lease held, its outcome journaled) before garbage collection may take the Job.
 */
export const SCHEMA_FINALIZER = `${API_GROUP}/apply-guard`;

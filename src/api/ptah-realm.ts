/**
 * PtahRealm: an administrator's grant of one database realm to an explicit list of namespaces. Cluster-scoped
 * and created only by an admin, so a namespace cannot grant itself a database another namespace uses. The
 * manager reads realms and never writes them; a realm has no status. A resource names one by
 * `spec.target.realmRef.name` instead of a namespace-scoped `coordinationKey`.
 */
import { API_GROUP, DNS_SUBDOMAIN_PATTERN, type ObjectMeta } from './meta.ts';
import { array, enumOf, object, string, type Infer } from './schema-dsl.ts';

export const REALM_SHARING = ['Exclusive', 'Shared'] as const;
export type RealmSharing = (typeof REALM_SHARING)[number];

const namespaceName = string({
  description: 'A namespace granted the realm.',
  pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
  minLength: 1,
  maxLength: 63,
});

export const ptahRealmSpec = object({
  engine: string({
    description:
      "The engine of the realm's database: postgres or mysql (aliases postgresql, pgx, mariadb). A resource naming the realm with another engine is not admitted.",
    pattern: '^[A-Za-z][A-Za-z0-9._-]*$',
    minLength: 1,
    maxLength: 63,
    validations: [{ rule: 'self == oldSelf', message: 'spec.engine is immutable; create another PtahRealm' }],
  }),
  namespaces: array(namespaceName, {
    description:
      'The namespaces whose resources may name this realm, by exact name. There is no selector: a grant is an explicit list an admin wrote.',
    minItems: 1,
    maxItems: 256,
    listType: 'set',
  }),
  sharing: enumOf(REALM_SHARING, {
    description:
      'Exclusive: one resource at a time may claim the realm. Shared: several may, when every claimant sets spec.target.sharedRealm.',
  }),
});
export type PtahRealmSpec = Infer<typeof ptahRealmSpec>;

/** Names a realm can have: the API server's own rule for a cluster-scoped object's name. */
export const REALM_NAME_PATTERN = DNS_SUBDOMAIN_PATTERN;

export interface PtahRealm {
  readonly apiVersion: `${typeof API_GROUP}/v1alpha1`;
  readonly kind: 'PtahRealm';
  readonly metadata: ObjectMeta;
  readonly spec: PtahRealmSpec;
}

/** How a resource names its realm: a key of its own namespace, or a PtahRealm granted to it. */
export type RealmRef =
  | { readonly kind: 'CoordinationKey'; readonly coordinationKey: string }
  | { readonly kind: 'PtahRealm'; readonly name: string };

/**
 * The realm spec.target names. Admission holds exactly one of the two fields; an object that somehow has
 * neither names the empty key, which no other resource can name, so it claims a realm of its own.
 */
export function realmRefOf(target: {
  readonly coordinationKey?: string | undefined;
  readonly realmRef?: { readonly name: string } | undefined;
}): RealmRef {
  return target.realmRef !== undefined
    ? { kind: 'PtahRealm', name: target.realmRef.name }
    : { kind: 'CoordinationKey', coordinationKey: target.coordinationKey ?? '' };
}

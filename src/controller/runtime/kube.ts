/**
 * The Kubernetes calls both reconcilers make, over the generated client. Every read the reconciler
 * decides from goes to the API server (no cache): the caches only wake the queue. Errors keep their HTTP
 * code so callers can tell "not found" and "somebody moved first" from a failure.
 */
import type {
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  V1ConfigMap,
  V1Job,
  V1Pod,
} from '@kubernetes/client-node';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION } from '../../api/meta.ts';

export function httpCode(error: unknown): number | undefined {
  const e = error as { code?: unknown; statusCode?: unknown } | null;
  if (e && typeof e.code === 'number') return e.code;
  if (e && typeof e.statusCode === 'number') return e.statusCode;
  return undefined;
}

export const isNotFound = (e: unknown) => httpCode(e) === 404;
export const isConflict = (e: unknown) => httpCode(e) === 409;

export async function orUndefined<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

export type Plural =
  | 'ptahschemas'
  | 'ptahschemaplans'
  | 'ptahschemaplanchunks'
  | 'ptahschemaapprovals'
  | 'ptahmigrations'
  | 'ptahmigrationplans'
  | 'ptahmigrationapprovals'
  | 'ptahmigrationrunacknowledgments';

/** Typed access to the operator's own kinds. */
export class PtahObjects {
  constructor(private readonly api: CustomObjectsApi) {}

  async get<T>(plural: Plural, namespace: string, name: string): Promise<T | undefined> {
    return (await orUndefined(
      this.api.getNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, plural, namespace, name }),
    )) as T | undefined;
  }

  /** A PtahRealm (cluster-scoped), or undefined when there is none of that name. */
  async getRealm<T>(name: string): Promise<T | undefined> {
    return (await orUndefined(
      this.api.getClusterCustomObject({ group: API_GROUP, version: API_VERSION, plural: 'ptahrealms', name }),
    )) as T | undefined;
  }

  async list<T>(plural: Plural, namespace: string, labelSelector?: string): Promise<T[]> {
    const out = (await this.api.listNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      plural,
      namespace,
      ...(labelSelector ? { labelSelector } : {}),
    })) as { items?: T[] };
    return out.items ?? [];
  }

  /** Every object of a kind in every namespace the manager may read. */
  async listAll<T>(plural: Plural): Promise<T[]> {
    const out = (await this.api.listClusterCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      plural,
    })) as {
      items?: T[];
    };
    return out.items ?? [];
  }

  async create<T>(plural: Plural, namespace: string, body: object): Promise<T> {
    return (await this.api.createNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      plural,
      namespace,
      body,
    })) as T;
  }

  /**
   * Merge-patches metadata only (the deletion guard; on a PtahMigration its unresolved-run annotation, `null`
   * removing it), with the resourceVersion read: a stale writer gets a conflict rather than undoing somebody
   * else's change. Returns the object as written, whose resourceVersion a status write that follows needs.
   */
  async patchMetadata<T = unknown>(
    plural: Plural,
    namespace: string,
    name: string,
    metadata: {
      readonly resourceVersion?: string | undefined;
      readonly finalizers?: readonly string[];
      readonly annotations?: Readonly<Record<string, string | null>>;
    },
  ): Promise<T> {
    return (await this.api.patchNamespacedCustomObject(
      { group: API_GROUP, version: API_VERSION, plural, namespace, name, body: { metadata } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )) as T;
  }

  /**
   * Deletes one object, only if it is still the one with this UID (a newer object under the name stays);
   * dependents (a plan's chunks) are collected in the background.
   */
  async delete(plural: Plural, namespace: string, name: string, uid: string): Promise<void> {
    await this.api.deleteNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      plural,
      namespace,
      name,
      propagationPolicy: 'Background',
      body: { preconditions: { uid } },
    });
  }

  /** Replaces status with the resourceVersion the object carries: a stale writer gets a conflict. */
  async replaceStatus<T>(plural: Plural, namespace: string, name: string, body: object): Promise<T> {
    return (await this.api.replaceNamespacedCustomObjectStatus({
      group: API_GROUP,
      version: API_VERSION,
      plural,
      namespace,
      name,
      body,
    })) as T;
  }
}

export interface CoreClients {
  readonly core: CoreV1Api;
  readonly batch: BatchV1Api;
}

/** What reading one ConfigMap needs: the API server's client, or a reader that serves it from a cache first. */
export type ConfigMapReader = Pick<CoreV1Api, 'readNamespacedConfigMap'>;

export async function readConfigMap(
  core: ConfigMapReader,
  namespace: string,
  name: string,
): Promise<V1ConfigMap | undefined> {
  return orUndefined(core.readNamespacedConfigMap({ namespace, name }));
}

export async function readJob(
  batch: BatchV1Api,
  namespace: string,
  name: string,
): Promise<V1Job | undefined> {
  return orUndefined(batch.readNamespacedJob({ namespace, name }));
}

/**
 * The Pods a Job controls. The `job-name` label only narrows the list: anyone who may create Pods can set
 * it, so a Pod counts only when its controller ownerReference is this very Job (by UID, which a recreated
 * Job of the same name does not share).
 */
export async function jobPods(
  core: CoreV1Api,
  namespace: string,
  job: { readonly name: string; readonly uid: string },
): Promise<V1Pod[]> {
  const list = await core.listNamespacedPod({ namespace, labelSelector: `job-name=${job.name}` });
  return controlledBy(list.items, job.uid);
}

/** The Pods whose controller ownerReference is the Job with this UID; none for an unknown UID. */
export function controlledBy(pods: readonly V1Pod[], jobUid: string): V1Pod[] {
  if (jobUid === '') return [];
  return pods.filter((pod) => {
    const controller = pod.metadata?.ownerReferences?.find((r) => r.controller === true);
    return controller?.kind === 'Job' && controller.uid === jobUid;
  });
}

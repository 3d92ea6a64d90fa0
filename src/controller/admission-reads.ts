/**
 * The reads of the vcontrollerwrite and vpodintent rebuilds, answered from the manager's watches
 * (src/controller/watches.ts) before the API server, so a review makes no round trip in the common case:
 *   - a PtahSchema or PtahMigration (its spec and status: the claim) from its cache;
 *   - a running operation Job, with its Pod template, from the cache of the manager's Jobs;
 *   - a person's ConfigMap (a source, a verification policy): its watch holds metadata only, so the data of
 *     the few read here is kept beside it and served while the watched resourceVersion is the one kept;
 *   - a plan (an Apply Job's, or the owner of a plan chunk or projection) from its cache: plans are watched
 *     whole;
 *   - no plan chunk: a chunk is judged by its bytes against its plan's record, and a projection against
 *     the same record, so no review reads one (no watch holds them: up to 8 MiB a plan).
 * A watch that has not listed, or a cache without the object, sends the read to the API server. The
 * webhooks decide again from the API server whatever these reads do not admit (src/admission/reads.ts).
 */
import type { V1ConfigMap, V1Job } from '@kubernetes/client-node';
import type { JobReaders } from './jobs/job-readers.ts';
import type { ConfigMapReader, Plural, PtahObjects } from './runtime/kube.ts';
import type { CacheLookup, CachedKind } from './watches.ts';

/** The resources whose whole spec and status the watches hold. */
const CACHED_RESOURCES: Partial<Record<Plural, CachedKind>> = {
  ptahschemas: 'ptahschemas',
  ptahmigrations: 'ptahmigrations',
  ptahschemaplans: 'ptahschemaplans',
  ptahmigrationplans: 'ptahmigrationplans',
};

export function cachedJobReaders(
  caches: CacheLookup,
  live: JobReaders,
  data: ConfigMapData = new ConfigMapData(),
): JobReaders {
  const ptah: Pick<PtahObjects, 'get'> = {
    get: async <T>(plural: Plural, namespace: string, name: string) => {
      const kind = CACHED_RESOURCES[plural];
      const hit = kind !== undefined ? caches.find(kind, namespace, name)?.object : undefined;
      return hit !== undefined ? (hit as T) : live.ptah.get<T>(plural, namespace, name);
    },
  };
  const core: ConfigMapReader = {
    readNamespacedConfigMap: async (param, options) => {
      const watched = caches.find('configmaps', param.namespace, param.name)?.object?.metadata;
      const kept = watched !== undefined ? data.get(watched.uid, watched.resourceVersion) : undefined;
      if (kept !== undefined) return kept;
      const read = await live.core.readNamespacedConfigMap(param, options);
      data.keep(read);
      return read;
    },
  };
  return { ptah, core };
}

/** A Job from the cache of the manager's Jobs while it holds its template; otherwise from the API server. */
export async function cachedJob(
  caches: CacheLookup,
  live: (namespace: string, name: string) => Promise<V1Job | undefined>,
  namespace: string,
  name: string,
): Promise<V1Job | undefined> {
  const hit = caches.find('jobs', namespace, name)?.object as V1Job | undefined;
  return hit?.spec?.template !== undefined ? hit : live(namespace, name);
}

/**
 * The data of the ConfigMaps the webhooks read, one version per ConfigMap UID (a version's bytes never
 * change), least recently used dropped first once `maxBytes` of data are held: sources and policies are a
 * handful per resource, and the manager's memory must not grow with what people store in ConfigMaps.
 */
export class ConfigMapData {
  private readonly kept = new Map<
    string,
    { readonly resourceVersion: string; readonly object: V1ConfigMap; readonly bytes: number }
  >();
  private bytes = 0;

  constructor(private readonly maxBytes = 4 * 1024 * 1024) {}

  get(uid: string | undefined, resourceVersion: string | undefined): V1ConfigMap | undefined {
    if (uid === undefined) return undefined;
    const entry = this.kept.get(uid);
    if (entry === undefined || entry.resourceVersion !== resourceVersion) return undefined;
    this.kept.delete(uid);
    this.kept.set(uid, entry);
    return entry.object;
  }

  keep(object: V1ConfigMap): void {
    const { uid, resourceVersion } = object.metadata ?? {};
    if (uid === undefined || resourceVersion === undefined) return;
    this.drop(uid);
    const bytes = size(object);
    if (bytes > this.maxBytes) return;
    this.kept.set(uid, { resourceVersion, object, bytes });
    this.bytes += bytes;
    for (const oldest of this.kept.keys()) {
      if (this.bytes <= this.maxBytes) break;
      this.drop(oldest);
    }
  }

  /** The bytes of data held now. */
  get heldBytes(): number {
    return this.bytes;
  }

  private drop(uid: string): void {
    const entry = this.kept.get(uid);
    if (entry === undefined) return;
    this.kept.delete(uid);
    this.bytes -= entry.bytes;
  }
}

function size(cm: V1ConfigMap): number {
  let n = 0;
  for (const v of Object.values(cm.data ?? {})) n += v.length;
  for (const v of Object.values(cm.binaryData ?? {})) n += v.length;
  return n;
}

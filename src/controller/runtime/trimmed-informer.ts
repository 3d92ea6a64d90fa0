/**
 * Informers whose caches hold only what the manager reads from them. The caches route events to keys, feed
 * the metrics and answer the controller-write and Pod-intent webhooks first; the reconciler reads every
 * object it decides from the API server. So each watch names
 * a trim applied to every object before it enters the cache (list items and watch events alike), and a
 * watch of objects the manager does not own at all (a person's ConfigMaps) asks the API server for their
 * metadata only, so their data never crosses the connection.
 */
import * as k8s from '@kubernetes/client-node';

/** The Accept types of the API server's metadata-only representation (PartialObjectMetadata). */
export const METADATA_ONLY_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
export const METADATA_ONLY = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';

/** A copy of what a cache keeps of an object; it must keep metadata.namespace, name and resourceVersion. */
export type Trim<T extends k8s.KubernetesObject> = (object: T) => T;

/** Written by `kubectl apply`: a whole copy of the object, a ConfigMap's data included. */
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** The identity, labels, owners and deletion state of an object, without managedFields and copies of it. */
export function trimMetadata(metadata: k8s.V1ObjectMeta | undefined): k8s.V1ObjectMeta {
  const m = metadata ?? {};
  const annotations = m.annotations ? { ...m.annotations } : undefined;
  if (annotations) delete annotations[LAST_APPLIED];
  return {
    ...(m.namespace !== undefined ? { namespace: m.namespace } : {}),
    ...(m.name !== undefined ? { name: m.name } : {}),
    ...(m.uid !== undefined ? { uid: m.uid } : {}),
    ...(m.resourceVersion !== undefined ? { resourceVersion: m.resourceVersion } : {}),
    ...(m.generation !== undefined ? { generation: m.generation } : {}),
    ...(m.creationTimestamp !== undefined ? { creationTimestamp: m.creationTimestamp } : {}),
    ...(m.deletionTimestamp !== undefined ? { deletionTimestamp: m.deletionTimestamp } : {}),
    ...(m.labels !== undefined ? { labels: m.labels } : {}),
    ...(annotations !== undefined && Object.keys(annotations).length > 0 ? { annotations } : {}),
    ...(m.ownerReferences !== undefined ? { ownerReferences: m.ownerReferences } : {}),
    ...(m.finalizers !== undefined ? { finalizers: m.finalizers } : {}),
  };
}

/** The whole object but its bookkeeping metadata: for caches whose readers look at spec and status. */
export function withoutBookkeeping<T extends k8s.KubernetesObject>(object: T): T {
  return { ...object, metadata: trimMetadata(object.metadata) };
}

/** Metadata alone: for caches that only route an event by name and labels. */
export function metadataOf<T extends k8s.KubernetesObject>(object: T): T {
  return {
    ...(object.apiVersion !== undefined ? { apiVersion: object.apiVersion } : {}),
    ...(object.kind !== undefined ? { kind: object.kind } : {}),
    metadata: trimMetadata(object.metadata),
  } as T;
}

/**
 * A Job's metadata and status, and while it may still make Pods its Pod template, which vpodintent holds
 * each new Pod to: a finished Job makes none, so only the running Jobs' templates (a few KiB each, one per
 * operation in flight) are held.
 */
export function trimJob(job: k8s.V1Job): k8s.V1Job {
  const finished = (job.status?.conditions ?? []).some(
    (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
  );
  const template = job.spec?.template;
  return {
    ...metadataOf(job),
    ...(!finished && template !== undefined ? { spec: { template } as k8s.V1JobSpec } : {}),
    ...(job.status !== undefined ? { status: job.status } : {}),
  };
}

/**
 * How long a watch may stay silent before it is taken for dead and opened again. client-node's default,
 * 30 s, reopened every quiet watch twice a minute: 22 of the 51 requests an idle manager of 10 resources
 * sent in a minute. With bookmarks asked for, a live watch is not silent for that long.
 */
export const WATCH_SILENCE_MS = 90_000;

/** The server ends each watch after 5 to 10 minutes (client-go's spread), so the reopenings do not align. */
const watchTimeoutSeconds = () => 300 + Math.floor(Math.random() * 300);

/** A Watch that trims every object it delivers, and may ask for metadata only. */
class TrimmingWatch<T extends k8s.KubernetesObject> extends k8s.Watch {
  constructor(
    config: k8s.KubeConfig,
    private readonly trim: Trim<T>,
  ) {
    super(config);
    // client-node declares the timeout private and takes no option for it; the field is read per watch.
    (this as unknown as { requestTimeoutMs: number }).requestTimeoutMs = WATCH_SILENCE_MS;
  }

  override watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    return super.watch(
      path,
      { allowWatchBookmarks: true, timeoutSeconds: watchTimeoutSeconds(), ...queryParams },
      (phase, object, raw) =>
        // An ERROR event carries a Status and a BOOKMARK only a resourceVersion, not an object of the kind.
        callback(phase, phase === 'ERROR' || phase === 'BOOKMARK' ? object : this.trim(object as T), raw),
      done,
    );
  }
}

/**
 * The KubeConfig as the Watch uses it (the current cluster, and authentication applied to a request), with
 * the metadata-only Accept type on every watch request.
 */
function acceptingMetadataOnly(config: k8s.KubeConfig): k8s.KubeConfig {
  const view: Pick<k8s.KubeConfig, 'getCurrentCluster' | 'applySecurityAuthentication'> = {
    getCurrentCluster: () => config.getCurrentCluster(),
    applySecurityAuthentication: async (context) => {
      await config.applySecurityAuthentication(context);
      context.setHeaderParam('Accept', METADATA_ONLY);
    },
  };
  return view as k8s.KubeConfig;
}

export interface TrimmedInformerOptions<T extends k8s.KubernetesObject> {
  readonly path: string;
  /** One list call; for a metadata-only informer it must send METADATA_ONLY_LIST as its Accept type. */
  readonly list: () => Promise<k8s.KubernetesListObject<T>>;
  readonly trim: Trim<T>;
  readonly labelSelector?: string;
  /** Watch requests ask for PartialObjectMetadata (the list must too). */
  readonly metadataOnly?: boolean;
}

/** An informer (client-node's ListWatch, not started) whose cache holds trimmed objects only. */
export function trimmedInformer<T extends k8s.KubernetesObject>(
  config: k8s.KubeConfig,
  options: TrimmedInformerOptions<T>,
): k8s.Informer<T> & k8s.ObjectCache<T> {
  const watch = new TrimmingWatch<T>(
    options.metadataOnly === true ? acceptingMetadataOnly(config) : config,
    options.trim,
  );
  const list = async (): Promise<k8s.KubernetesListObject<T>> => {
    const listed = await options.list();
    return { ...listed, items: listed.items.map(options.trim) };
  };
  return new k8s.ListWatch<T>(options.path, watch, list, false, options.labelSelector);
}

/**
 * The manager's watches, one set per process: they wake the work queue, feed the metrics, and answer the
 * vcontrollerwrite and vpodintent webhooks' reads first (src/controller/admission-reads.ts), so a review does
 * not wait on the API server. Every replica keeps them warm, leader or not, because every replica serves the
 * webhooks and a new leader starts from a full picture.
 *
 * A cache proves something only once its watch has listed: `find` says "not synced" before that and from a
 * watch failure until the relist after it, and a reader then goes to the API server.
 */
import * as k8s from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { API_GROUP, API_VERSION, LABELS, MANAGED_BY } from '../api/meta.ts';
import { keyString } from './runtime/reconcile.ts';
import {
  METADATA_ONLY_LIST,
  metadataOf,
  trimJob,
  trimmedInformer,
  withoutBookkeeping,
  type Trim,
} from './runtime/trimmed-informer.ts';

type Watched = k8s.KubernetesObject;
/** Only what routing an event needs; the reconciler reads the full objects itself. */
export type WatchedSchema = Watched & {
  spec?: {
    target?: { coordinationKey?: string; realmRef?: { name?: string } };
    desired?: { configMap?: { name?: string } };
    verificationPolicyFrom?: { name?: string };
    sourcePolicyFrom?: { name?: string };
  };
};
type WatchedApproval = Watched & { spec?: { schemaRef?: { name?: string } } };
type WatchedMigrationDecision = Watched & { spec?: { migrationRef?: { name?: string } } };
type Cache<T extends Watched> = k8s.Informer<T> & k8s.ObjectCache<T>;

export const MIGRATION_KEY_PREFIX = 'migration:';
export function migrationKey(namespace: string, name: string): string {
  return `${MIGRATION_KEY_PREFIX}${keyString({ namespace, name })}`;
}

/** The caches another reader may consult, and what each holds (see startWatches below). */
export type CachedKind =
  'ptahschemas' | 'ptahmigrations' | 'ptahschemaplans' | 'ptahmigrationplans' | 'jobs' | 'configmaps';

export interface CacheLookup {
  /**
   * The object as its cache holds it (`object` undefined: the cache has no such object), or undefined when
   * the watch has not listed since it last started, so its cache proves nothing.
   */
  find(
    kind: CachedKind,
    namespace: string,
    name: string,
  ): { readonly object: Watched | undefined } | undefined;
}

/** A lookup that knows nothing: every read goes to the API server. */
export const NO_CACHE: CacheLookup = { find: () => undefined };

export class ManagerWatches implements CacheLookup {
  readonly schemas: Cache<WatchedSchema>;
  readonly migrations: Cache<WatchedSchema>;
  readonly jobs: Cache<k8s.V1Job>;
  private readonly approvals: Cache<WatchedApproval>;
  private readonly plans: Cache<Watched>;
  private readonly migrationDecisions: readonly Cache<WatchedMigrationDecision>[];
  private readonly migrationPlans: Cache<Watched>;
  private readonly configMaps: Cache<k8s.V1ConfigMap>;
  /** PtahRealms: a grant changed wakes every resource naming the realm. */
  private readonly realms: Cache<Watched>;
  private readonly all: Readonly<Record<string, Cache<Watched>>>;
  private readonly byKind: Readonly<Record<CachedKind, Cache<Watched>>>;
  private readonly listed = new Set<string>();
  private started = false;

  constructor(
    kubeConfig: k8s.KubeConfig,
    private readonly log: Logger,
  ) {
    const custom = kubeConfig.makeApiClient(k8s.CustomObjectsApi);
    const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
    const batch = kubeConfig.makeApiClient(k8s.BatchV1Api);
    const group = `/apis/${API_GROUP}/${API_VERSION}`;

    // Each cache keeps only what routing, the metrics and the webhooks read (runtime/trimmed-informer.ts).
    const informer = <T extends Watched>(plural: string, trim: Trim<T>): Cache<T> =>
      trimmedInformer<T>(kubeConfig, {
        path: `${group}/${plural}`,
        list: () =>
          custom.listClusterCustomObject({ group: API_GROUP, version: API_VERSION, plural }) as Promise<
            k8s.KubernetesListObject<T>
          >,
        trim,
      });
    // The reconciler's realm and target checks, the metrics and the webhooks' rebuilds read a resource's
    // spec and status here.
    this.schemas = informer<WatchedSchema>('ptahschemas', withoutBookkeeping);
    this.migrations = informer<WatchedSchema>('ptahmigrations', withoutBookkeeping);
    const jobSelector = `${LABELS.managedBy}=${MANAGED_BY}`;
    // The manager's own Jobs only; a running one keeps its Pod template, which vpodintent holds Pods to.
    this.jobs = trimmedInformer<k8s.V1Job>(kubeConfig, {
      path: '/apis/batch/v1/jobs',
      list: () => batch.listJobForAllNamespaces({ labelSelector: jobSelector }),
      trim: trimJob,
      labelSelector: jobSelector,
    });
    // A person's ConfigMaps, by metadata only: an edit to a source is noticed at once (its resourceVersion
    // moves) and a reader fetches the data of the one it needs; no data, and no copy of it in a
    // last-applied annotation, is held here. Our own snapshots and plan chunks (up to 8 MiB a plan) are not
    // watched at all: only a person's ConfigMap can be a source.
    const notOurs = `${LABELS.managedBy}!=${MANAGED_BY}`;
    this.configMaps = trimmedInformer<k8s.V1ConfigMap>(kubeConfig, {
      path: '/api/v1/configmaps',
      list: () =>
        core.listConfigMapForAllNamespaces(
          { labelSelector: notOurs },
          k8s.setHeaderOptions('Accept', METADATA_ONLY_LIST),
        ),
      trim: metadataOf,
      labelSelector: notOurs,
      metadataOnly: true,
    });
    this.approvals = informer<WatchedApproval>('ptahschemaapprovals', withoutBookkeeping);
    // A plan deleted (or replaced) under a waiting resource is noticed at once, not at the next interval;
    // its labels name the resource. Plans are kept whole (a few KB each, written once): the webhooks read
    // the plan an Apply Job, a chunk or a projection names from here before the API server.
    this.plans = informer<Watched>('ptahschemaplans', withoutBookkeeping);
    const [approvals, acknowledgments] = (
      ['ptahmigrationapprovals', 'ptahmigrationrunacknowledgments'] as const
    ).map((plural) => informer<WatchedMigrationDecision>(plural, withoutBookkeeping)) as [
      Cache<WatchedMigrationDecision>,
      Cache<WatchedMigrationDecision>,
    ];
    this.migrationDecisions = [approvals, acknowledgments];
    this.migrationPlans = informer<Watched>('ptahmigrationplans', withoutBookkeeping);
    this.realms = informer<Watched>('ptahrealms', metadataOf);
    const as = <T extends Watched>(c: Cache<T>) => c as unknown as Cache<Watched>;
    this.byKind = {
      ptahschemas: as(this.schemas),
      ptahmigrations: as(this.migrations),
      jobs: as(this.jobs),
      configmaps: as(this.configMaps),
      ptahschemaplans: this.plans,
      ptahmigrationplans: this.migrationPlans,
    };
    this.all = {
      ...this.byKind,
      ptahschemaapprovals: as(this.approvals),
      ptahmigrationapprovals: as(approvals),
      ptahmigrationrunacknowledgments: as(acknowledgments),
      ptahrealms: this.realms,
    };
  }

  /** Whether the watch of these resources has listed since it last started. */
  synced(watch: string): boolean {
    return this.listed.has(watch);
  }

  find(
    kind: CachedKind,
    namespace: string,
    name: string,
  ): { readonly object: Watched | undefined } | undefined {
    if (!this.listed.has(kind)) return undefined;
    return { object: this.byKind[kind].get(name, namespace) };
  }

  /**
   * Starts every watch once; `wake` is handed the key of each resource an event concerns (a PtahMigration's
   * key carries MIGRATION_KEY_PREFIX).
   */
  start(signal: AbortSignal, wake: (key: string) => void): void {
    if (this.started) throw new Error('the manager watches are started once');
    this.started = true;
    this.route(wake);
    for (const [name, informer] of Object.entries(this.all)) {
      let delay = 1_000;
      // A watch that fails stops; it is started again (a fresh list, then a watch) after a backoff, so a
      // cache survives API server restarts and expired resource versions. Until that list, its cache may
      // miss what happened meanwhile, so it proves nothing to a reader.
      informer.on('error', (error) => {
        this.listed.delete(name);
        if (signal.aborted) return;
        this.log.warn(
          { watch: name, retryInMs: delay, error: errorSummary(error) },
          'watch failed; relisting',
        );
        const wait = delay;
        delay = Math.min(delay * 2, 30_000);
        setTimeout(() => {
          if (!signal.aborted) this.begin(name, informer);
        }, wait).unref();
      });
      informer.on('connect', () => {
        delay = 1_000;
      });
      this.begin(name, informer);
    }
  }

  async stop(): Promise<void> {
    this.listed.clear();
    await Promise.all(Object.values(this.all).map((i) => i.stop().catch(() => undefined)));
  }

  private begin(name: string, informer: Cache<Watched>): void {
    informer
      .start()
      .then(() => this.listed.add(name))
      .catch((error: unknown) =>
        this.log.warn({ watch: name, error: errorSummary(error) }, 'watch did not start; relisting'),
      );
  }

  /** Which resource each event concerns. The caches decide nothing: the reconciler re-reads what it decides from. */
  private route(wake: (key: string) => void): void {
    const { schemas, migrations } = this;
    const byLabel = (label: string, key: (ns: string, name: string) => string) => (o: Watched) => {
      const ns = o.metadata?.namespace;
      const name = o.metadata?.labels?.[label];
      if (ns && name) wake(key(ns, name));
    };
    const schemaKey = (namespace: string, name: string) => keyString({ namespace, name });
    const wakeAny = (family: 'schema' | 'migration', r: WatchedSchema) =>
      wake(
        family === 'schema' ? keyOf(r) : migrationKey(r.metadata?.namespace ?? '', r.metadata?.name ?? ''),
      );
    // The realm census spans both families: when one claimant appears, goes, or changes its spec, the others
    // are looked at again (not on a status write, which would wake a Blocked co-claimant on every pass).
    const seenGeneration = new Map<string, number | undefined>();
    const wakeCoClaimants = (verb: 'add' | 'update' | 'delete', r: WatchedSchema) => {
      const uid = r.metadata?.uid ?? '';
      if (verb === 'update' && seenGeneration.get(uid) === r.metadata?.generation) return;
      if (verb === 'delete') seenGeneration.delete(uid);
      else seenGeneration.set(uid, r.metadata?.generation);
      const realm = r.spec?.target?.realmRef?.name;
      const key = r.spec?.target?.coordinationKey;
      const namespace = realm === undefined ? r.metadata?.namespace : undefined;
      const same = (o: WatchedSchema) =>
        o.metadata?.uid !== uid &&
        (realm !== undefined
          ? o.spec?.target?.realmRef?.name === realm
          : key !== undefined && o.spec?.target?.coordinationKey === key);
      for (const o of schemas.list(namespace)) if (same(o)) wakeAny('schema', o);
      for (const o of migrations.list(namespace)) if (same(o)) wakeAny('migration', o);
    };
    for (const verb of ['add', 'update', 'delete'] as const) {
      schemas.on(verb, (s) => {
        wake(keyOf(s));
        wakeCoClaimants(verb, s);
      });
      this.realms.on(verb, (realm) => {
        const name = realm.metadata?.name;
        if (name === undefined) return;
        for (const o of schemas.list()) if (o.spec?.target?.realmRef?.name === name) wakeAny('schema', o);
        for (const o of migrations.list())
          if (o.spec?.target?.realmRef?.name === name) wakeAny('migration', o);
      });
      this.approvals.on(verb, (a) => {
        const ns = a.metadata?.namespace;
        const name = a.spec?.schemaRef?.name;
        if (ns && name) wake(schemaKey(ns, name));
      });
      this.plans.on(verb, byLabel(LABELS.schema, schemaKey));
      this.jobs.on(verb, (j) => {
        byLabel(LABELS.schema, schemaKey)(j);
        byLabel(LABELS.migration, migrationKey)(j);
      });
      migrations.on(verb, (m) => {
        wakeAny('migration', m);
        wakeCoClaimants(verb, m);
      });
      for (const decisions of this.migrationDecisions) {
        decisions.on(verb, (a) => {
          const ns = a.metadata?.namespace;
          const name = a.spec?.migrationRef?.name;
          if (ns && name) wake(migrationKey(ns, name));
        });
      }
      this.migrationPlans.on(verb, byLabel(LABELS.migration, migrationKey));
      this.configMaps.on(verb, (cm) => {
        // Our own snapshots and chunks are written by us; a source edit is what matters, read at once.
        if (cm.metadata?.labels?.[LABELS.managedBy] === MANAGED_BY) return;
        const ns = cm.metadata?.namespace;
        // A verification or source policy replaced in the cluster is read at once too: it retires the plans
        // made under it.
        const name = cm.metadata?.name;
        if (name === undefined) return;
        const names = (r: WatchedSchema) => [
          r.spec?.desired?.configMap?.name,
          r.spec?.verificationPolicyFrom?.name,
          r.spec?.sourcePolicyFrom?.name,
        ];
        for (const s of schemas.list(ns)) {
          if (names(s).includes(name)) wake(keyOf(s));
        }
        for (const m of migrations.list(ns)) {
          if (names(m).includes(name))
            wake(migrationKey(m.metadata?.namespace ?? '', m.metadata?.name ?? ''));
        }
      });
    }
  }
}

function keyOf(o: k8s.KubernetesObject): string {
  return keyString({ namespace: o.metadata?.namespace ?? '', name: o.metadata?.name ?? '' });
}

/** An error as a log field: its kind and HTTP code, never a response body (which might echo a request). */
export function errorSummary(error: unknown): { name: string; code?: number; message: string } {
  const e = error as { name?: string; code?: unknown; message?: string };
  return {
    name: e?.name ?? 'Error',
    ...(typeof e?.code === 'number' ? { code: e.code } : {}),
    message: String(e?.message ?? error)
      .split('\n')[0]!
      .slice(0, 200),
  };
}

/**
 * The manager process: watches that wake a rate-limited work queue, leader election on a Lease, and both
 * families' reconcilers (PtahSchema, PtahMigration) behind the one queue; a migration's key carries the
 * `migration:` prefix, so the two families never share a key. Start order and why:
 *   1. watches — every replica keeps them warm, so a new leader starts from a full picture;
 *   2. leader election — only the Lease holder reconciles; losing the Lease ends `start` so the process
 *      exits instead of acting without authority;
 *   3. workers — one key at a time per resource; a thrown error backs the key off, a requeue waits.
 *
 * The caches decide nothing: they only map an event to the resource it concerns. The reconciler re-reads
 * what it decides from. The manager holds no Secret permission and never opens a database connection.
 */
import * as k8s from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { API_GROUP, API_VERSION, LABELS, MANAGED_BY } from '../api/meta.ts';
import type { PtahSchema } from '../api/ptah-schema.ts';
import type { ManagerIdentity } from './jobs/operation-job.ts';
import { withCrashPoints } from './fault-injection.ts';
import { instrument, type InstrumentedCaches, type OperatorMetrics } from './metrics/operator-metrics.ts';
import { RealmLeases } from './realm/realm-lease.ts';
import { LeaderElector } from './runtime/leader-election.ts';
import { keyString, parseKey } from './runtime/reconcile.ts';
import { runWorkers, WorkQueue } from './runtime/work-queue.ts';
import { PtahObjects } from './runtime/kube.ts';
import { SchemaReconciler, type SchemaCache } from './schema/reconciler.ts';
import { MigrationReconciler } from './migration/reconciler.ts';
import { approvalWebhookGate, type ApprovalGate } from './runtime/approval-webhook-gate.ts';
import {
  METADATA_ONLY_LIST,
  metadataOf,
  trimJob,
  trimmedInformer,
  withoutBookkeeping,
  type Trim,
} from './runtime/trimmed-informer.ts';

export interface ManagerOptions {
  readonly kubeConfig: k8s.KubeConfig;
  /** Where the leader-election Lease and the database-realm Leases live. */
  readonly coordinationNamespace: string;
  /** This replica's identity in leader election. */
  readonly identity: string;
  readonly manager: ManagerIdentity;
  readonly log: Logger;
  readonly workers?: number;
  readonly leaderLeaseName?: string;
  readonly leaderLeaseSeconds?: number;
  /** The leader Lease is an object of the Helm release: never created nor deleted by the manager. */
  readonly leaderLeaseFromRelease?: boolean;
  /** Whether approvals may be accepted now; by default, whether the approval webhooks are registered. */
  readonly approvalGate?: ApprovalGate;
  /** Counts what this process does and reads the caches at each scrape; absent, nothing is counted. */
  readonly metrics?: OperatorMetrics;
}

type Watched = k8s.KubernetesObject;
/** Only what routing an event needs; the reconciler reads the full objects itself. */
type WatchedSchema = Watched & {
  spec?: {
    desired?: { configMap?: { name?: string } };
    verificationPolicyFrom?: { name?: string };
    sourcePolicyFrom?: { name?: string };
  };
};
type WatchedApproval = Watched & { spec?: { schemaRef?: { name?: string } } };
type WatchedMigrationDecision = Watched & { spec?: { migrationRef?: { name?: string } } };

const MIGRATION_KEY_PREFIX = 'migration:';
function migrationKey(namespace: string, name: string): string {
  return `${MIGRATION_KEY_PREFIX}${keyString({ namespace, name })}`;
}

export class Manager {
  private readonly informers: k8s.Informer<Watched>[] = [];
  private schemas: (k8s.Informer<WatchedSchema> & k8s.ObjectCache<WatchedSchema>) | undefined;
  private migrations: (k8s.Informer<WatchedSchema> & k8s.ObjectCache<WatchedSchema>) | undefined;
  private jobs: (k8s.Informer<k8s.V1Job> & k8s.ObjectCache<k8s.V1Job>) | undefined;
  /** The schema watch has listed once: from then on its cache is the cluster's picture. */
  private schemasListed = false;

  constructor(private readonly options: ManagerOptions) {}

  async start(signal: AbortSignal): Promise<void> {
    const { kubeConfig, log } = this.options;
    const queue = new WorkQueue({ baseMs: 500, maxMs: 60_000 }, (ms) => this.options.metrics?.waited(ms));
    this.startWatches(queue, signal);
    const { metrics } = this.options;
    if (metrics && this.schemas && this.jobs) {
      instrument(metrics, {
        schemas: this.schemas,
        ...(this.migrations ? { migrations: this.migrations as InstrumentedCaches['migrations'] } : {}),
        jobs: this.jobs,
        queueDepth: () => queue.length,
      });
    }

    const deps = {
      core: kubeConfig.makeApiClient(k8s.CoreV1Api),
      batch: withCrashPoints(kubeConfig.makeApiClient(k8s.BatchV1Api), process.env),
      ptah: new PtahObjects(kubeConfig.makeApiClient(k8s.CustomObjectsApi)),
      leases: new RealmLeases(
        kubeConfig.makeApiClient(k8s.CoordinationV1Api),
        this.options.coordinationNamespace,
      ),
      manager: this.options.manager,
      log,
      approvalGate:
        this.options.approvalGate ??
        approvalWebhookGate(kubeConfig.makeApiClient(k8s.AdmissionregistrationV1Api)),
    };
    const reconciler = new SchemaReconciler({
      ...deps,
      // The informer holds the whole objects (WatchedSchema only narrows what routing reads).
      schemaCache: {
        list: (namespace) =>
          this.schemasListed && this.schemas !== undefined
            ? (this.schemas.list(namespace) as unknown as PtahSchema[])
            : undefined,
      } satisfies SchemaCache,
    });
    // A migration's approvals and acknowledgments are read only while their own webhooks stamp them.
    const migrationReconciler = new MigrationReconciler({
      ...deps,
      approvalGate:
        this.options.approvalGate ??
        approvalWebhookGate(kubeConfig.makeApiClient(k8s.AdmissionregistrationV1Api), {
          kinds: ['PtahMigrationApproval', 'PtahMigrationRunAcknowledgment'],
        }),
    });

    const elector = new LeaderElector({
      api: kubeConfig.makeApiClient(k8s.CoordinationV1Api),
      namespace: this.options.coordinationNamespace,
      name: this.options.leaderLeaseName ?? 'ptah-operator-leader',
      identity: this.options.identity,
      leaseDurationSeconds: this.options.leaderLeaseSeconds ?? 15,
      leaseFromRelease: this.options.leaderLeaseFromRelease === true,
      log: (msg, fields) =>
        log.info(
          'error' in fields
            ? { ...fields, error: String(fields['error']).split('\n')[0]!.slice(0, 200) }
            : fields,
          msg,
        ),
    });

    try {
      await elector.run(signal, async (leadership) => {
        // Everything known so far is looked at once; events keep it current afterwards.
        metrics?.setLeader(true);
        for (const s of this.schemas?.list() ?? []) queue.add(keyOf(s));
        for (const m of this.migrations?.list() ?? [])
          queue.add(migrationKey(m.metadata?.namespace ?? '', m.metadata?.name ?? ''));
        await runWorkers(queue, leadership, {
          concurrency: this.options.workers ?? 2,
          handle: async (key) => {
            const started = Date.now();
            const migration = key.startsWith(MIGRATION_KEY_PREFIX);
            const count = (outcome: 'success' | 'error') =>
              metrics?.reconciled(
                migration ? 'PtahMigration' : 'PtahSchema',
                outcome,
                (Date.now() - started) / 1000,
              );
            const run = migration
              ? migrationReconciler.reconcile(parseKey(key.slice(MIGRATION_KEY_PREFIX.length)), leadership)
              : reconciler.reconcile(parseKey(key), leadership);
            const result = await run.catch((error: unknown) => {
              count('error');
              throw error;
            });
            count('success');
            log.debug({ key, ms: Date.now() - started, requeueAfterMs: result.requeueAfterMs }, 'reconciled');
            return result;
          },
          onError: (key, error, retryInMs) =>
            log.warn(
              { key, retryInMs, error: errorSummary(error) },
              'reconcile failed; retrying with backoff',
            ),
        });
        metrics?.setLeader(false);
        if (!signal.aborted) log.error({}, 'leadership lost; stopping');
      });
    } finally {
      queue.shutdown();
      await Promise.all(this.informers.map((i) => i.stop().catch(() => undefined)));
    }
  }

  private startWatches(queue: WorkQueue, signal: AbortSignal): void {
    const { kubeConfig, log } = this.options;
    const custom = kubeConfig.makeApiClient(k8s.CustomObjectsApi);
    const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
    const batch = kubeConfig.makeApiClient(k8s.BatchV1Api);
    const group = `/apis/${API_GROUP}/${API_VERSION}`;

    // Each cache keeps only what routing and the metrics read (runtime/trimmed-informer.ts).
    const informer = <T extends Watched>(
      plural: string,
      trim: Trim<T>,
    ): k8s.Informer<T> & k8s.ObjectCache<T> =>
      trimmedInformer<T>(kubeConfig, {
        path: `${group}/${plural}`,
        list: () =>
          custom.listClusterCustomObject({ group: API_GROUP, version: API_VERSION, plural }) as Promise<
            k8s.KubernetesListObject<T>
          >,
        trim,
      });
    // The reconciler's realm and target checks and the metrics read a schema's spec and status here.
    const schemas = informer<WatchedSchema>('ptahschemas', withoutBookkeeping);
    this.schemas = schemas;
    const approvals = informer<WatchedApproval>('ptahschemaapprovals', withoutBookkeeping);
    // A plan deleted (or replaced) under a waiting resource is noticed at once, not at the next interval;
    // its labels name the resource, which is all the event needs.
    const plans = informer<Watched>('ptahschemaplans', metadataOf);
    const migrations = informer<WatchedSchema>('ptahmigrations', withoutBookkeeping);
    this.migrations = migrations;
    const migrationApprovals = informer<WatchedMigrationDecision>(
      'ptahmigrationapprovals',
      withoutBookkeeping,
    );
    const acknowledgments = informer<WatchedMigrationDecision>(
      'ptahmigrationrunacknowledgments',
      withoutBookkeeping,
    );
    const migrationPlans = informer<Watched>('ptahmigrationplans', metadataOf);
    const jobSelector = `${LABELS.managedBy}=${MANAGED_BY}`;
    const jobs = trimmedInformer<k8s.V1Job>(kubeConfig, {
      path: '/apis/batch/v1/jobs',
      list: () => batch.listJobForAllNamespaces({ labelSelector: jobSelector }),
      trim: trimJob,
      labelSelector: jobSelector,
    });
    this.jobs = jobs;
    // A person's ConfigMaps, by metadata only: an edit to a source is noticed at once (its resourceVersion
    // moves) and the reconciler reads the one it needs from the API server; no data, and no copy of it in
    // a last-applied annotation, is held here. Our own snapshots and plan chunks (up to 8 MiB a plan) are
    // not watched at all: only a person's ConfigMap can be a source.
    const notOurs = `${LABELS.managedBy}!=${MANAGED_BY}`;
    const configMaps = trimmedInformer<k8s.V1ConfigMap>(kubeConfig, {
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

    for (const verb of ['add', 'update', 'delete'] as const) {
      schemas.on(verb, (s) => queue.add(keyOf(s)));
      approvals.on(verb, (a) => {
        const ns = a.metadata?.namespace;
        const name = a.spec?.schemaRef?.name;
        if (ns && name) queue.add(keyString({ namespace: ns, name }));
      });
      plans.on(verb, (p) => {
        const ns = p.metadata?.namespace;
        const name = p.metadata?.labels?.[LABELS.schema];
        if (ns && name) queue.add(keyString({ namespace: ns, name }));
      });
      jobs.on(verb, (j) => {
        const ns = j.metadata?.namespace;
        const name = j.metadata?.labels?.[LABELS.schema];
        if (ns && name) queue.add(keyString({ namespace: ns, name }));
        const migration = j.metadata?.labels?.[LABELS.migration];
        if (ns && migration) queue.add(migrationKey(ns, migration));
      });
      migrations.on(verb, (m) =>
        queue.add(migrationKey(m.metadata?.namespace ?? '', m.metadata?.name ?? '')),
      );
      for (const decisions of [migrationApprovals, acknowledgments]) {
        decisions.on(verb, (a) => {
          const ns = a.metadata?.namespace;
          const name = a.spec?.migrationRef?.name;
          if (ns && name) queue.add(migrationKey(ns, name));
        });
      }
      migrationPlans.on(verb, (p) => {
        const ns = p.metadata?.namespace;
        const name = p.metadata?.labels?.[LABELS.migration];
        if (ns && name) queue.add(migrationKey(ns, name));
      });
      configMaps.on(verb, (cm) => {
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
          if (names(s).includes(name)) queue.add(keyOf(s));
        }
        for (const m of migrations.list(ns)) {
          if (names(m).includes(name))
            queue.add(migrationKey(m.metadata?.namespace ?? '', m.metadata?.name ?? ''));
        }
      });
    }

    const watched: [string, k8s.Informer<Watched>][] = [
      ['ptahschemas', schemas as unknown as k8s.Informer<Watched>],
      ['ptahschemaapprovals', approvals as unknown as k8s.Informer<Watched>],
      ['ptahschemaplans', plans],
      ['jobs', jobs as unknown as k8s.Informer<Watched>],
      ['ptahmigrations', migrations as unknown as k8s.Informer<Watched>],
      ['ptahmigrationapprovals', migrationApprovals as unknown as k8s.Informer<Watched>],
      ['ptahmigrationrunacknowledgments', acknowledgments as unknown as k8s.Informer<Watched>],
      ['ptahmigrationplans', migrationPlans],
      ['configmaps', configMaps as unknown as k8s.Informer<Watched>],
    ];
    for (const [name, informer] of watched) {
      this.informers.push(informer);
      let delay = 1_000;
      // A watch that fails stops; it is started again (a fresh list, then a watch) after a backoff, so a
      // cache survives API server restarts and expired resource versions.
      informer.on('error', (error) => {
        if (signal.aborted) return;
        log.warn({ watch: name, retryInMs: delay, error: errorSummary(error) }, 'watch failed; relisting');
        const wait = delay;
        delay = Math.min(delay * 2, 30_000);
        setTimeout(() => {
          if (!signal.aborted) informer.start().catch(() => undefined);
        }, wait).unref();
      });
      informer.on('connect', () => {
        delay = 1_000;
      });
      informer
        .start()
        .then(() => {
          if (name === 'ptahschemas') this.schemasListed = true;
        })
        .catch((error: unknown) =>
          log.warn({ watch: name, error: errorSummary(error) }, 'watch did not start; relisting'),
        );
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

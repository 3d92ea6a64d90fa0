/**
 * The manager process: watches that wake a rate-limited work queue, leader election on a Lease, and both
 * families' reconcilers (PtahSchema, PtahMigration) behind the one queue; a migration's key carries the
 * `migration:` prefix, so the two families never share a key. Start order and why:
 *   1. watches — every replica keeps them warm, so a new leader starts from a full picture;
 *   2. leader election — only the Lease holder reconciles; losing the Lease ends `start` so the process
 *      exits instead of acting without authority;
 *   3. workers — one key at a time per resource; a thrown error backs the key off, a requeue waits.
 *
 * The caches (src/controller/watches.ts) decide nothing here: they only map an event to the resource it
 * concerns, and the reconciler re-reads what it decides from. The webhooks this process serves read them
 * first and the API server on a miss (src/controller/admission-reads.ts). The manager holds no Secret
 * permission and never opens a database connection.
 */
import * as k8s from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { PtahMigration } from '../api/ptah-migration.ts';
import type { PtahSchema } from '../api/ptah-schema.ts';
import { RealmCensus } from './realm/realm-census.ts';
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
import { errorSummary, ManagerWatches, MIGRATION_KEY_PREFIX, migrationKey } from './watches.ts';

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

export class Manager {
  /** The process's one set of watches: the webhooks this process serves read them too. */
  readonly watches: ManagerWatches;

  constructor(private readonly options: ManagerOptions) {
    this.watches = new ManagerWatches(options.kubeConfig, options.log);
  }

  async start(signal: AbortSignal): Promise<void> {
    const { kubeConfig, log } = this.options;
    const queue = new WorkQueue({ baseMs: 500, maxMs: 60_000 }, (ms) => this.options.metrics?.waited(ms));
    const { watches } = this;
    watches.start(signal, (key) => queue.add(key));
    const { metrics } = this.options;
    if (metrics) {
      instrument(metrics, {
        schemas: watches.schemas,
        migrations: watches.migrations as InstrumentedCaches['migrations'],
        jobs: watches.jobs,
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
    // Both families' realm checks read one census: the caches of both, and each PtahRealm fresh.
    const census = new RealmCensus({
      ptah: deps.ptah,
      schemas: {
        list: (namespace) =>
          watches.synced('ptahschemas')
            ? (watches.schemas.list(namespace) as unknown as PtahSchema[])
            : undefined,
      },
      migrations: {
        list: (namespace) =>
          watches.synced('ptahmigrations')
            ? (watches.migrations.list(namespace) as unknown as PtahMigration[])
            : undefined,
      },
    });
    const reconciler = new SchemaReconciler({
      ...deps,
      census,
      // The informer holds the whole objects (WatchedSchema only narrows what routing reads).
      schemaCache: {
        list: (namespace) =>
          watches.synced('ptahschemas')
            ? (watches.schemas.list(namespace) as unknown as PtahSchema[])
            : undefined,
      } satisfies SchemaCache,
    });
    // A migration's approvals and acknowledgments are read only while their own webhooks stamp them.
    const migrationReconciler = new MigrationReconciler({
      ...deps,
      census,
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
        for (const s of watches.schemas.list())
          queue.add(keyString({ namespace: s.metadata?.namespace ?? '', name: s.metadata?.name ?? '' }));
        for (const m of watches.migrations.list())
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
      await watches.stop();
    }
  }
}

export { errorSummary };

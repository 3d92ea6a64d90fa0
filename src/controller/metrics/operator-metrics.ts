/**
 * The manager's Prometheus metrics. Every label value comes from a closed set (kind, phase, operation,
 * outcome, reason, severity): never a name of a resource, a database or a value, so a series count is
 * bounded by the code and not by what people create.
 *
 * Two sorts: gauges rebuilt at each scrape from the manager's watch caches (every replica keeps them warm,
 * so any replica answers the same and alerts aggregate with max), and counters and histograms of what this
 * process did (reconciles, Jobs it saw end). Jobs are counted once per UID; a Job that had ended before the
 * process started is counted when the first list shows it.
 */
import type * as k8s from '@kubernetes/client-node';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { DRIFT_SEVERITIES, type PtahSchemaStatus } from '../../api/ptah-schema.ts';
import { jobState, type JobState } from './job-state.ts';
import type { PtahMigrationStatus } from '../../api/ptah-migration.ts';
import {
  METRIC_KINDS,
  migrationResourceState,
  PHASES_OF,
  resourceState,
  type MetricKind,
  type ResourceState,
} from './resource-state.ts';

type KindState = ResourceState & { readonly kind: MetricKind };

export type WatchedResource =
  | { readonly kind: 'PtahSchema'; readonly status?: PtahSchemaStatus | undefined }
  | { readonly kind: 'PtahMigration'; readonly status?: PtahMigrationStatus | undefined };

/** How each kind's status becomes a metric state. */
function stateOf(resource: WatchedResource, now: Date): ResourceState {
  return resource.kind === 'PtahSchema'
    ? resourceState(resource.status, now)
    : migrationResourceState(resource.status, now);
}

/** Where the scrape-time gauges read from: the caches and the queue, never the API server. */
export interface MetricsSources {
  resources(): Iterable<WatchedResource>;
  jobs(): Iterable<k8s.V1Job>;
  queueDepth(): number;
}

export const RECONCILE_OUTCOMES = ['success', 'error'] as const;
export type ReconcileOutcome = (typeof RECONCILE_OUTCOMES)[number];

const PREFIX = 'ptah_';

export class OperatorMetrics {
  readonly registry = new Registry();
  private sources: MetricsSources | undefined;
  private readonly counted = new Set<string>();
  private readonly reconcileDuration: Histogram<'kind' | 'outcome'>;
  private readonly jobsFinished: Counter<'kind' | 'operation' | 'outcome'>;
  private readonly operationDuration: Histogram<'kind' | 'operation' | 'outcome'>;
  private readonly leader: Gauge;
  private readonly queueWait: Histogram;
  private readonly apiRequestCount: Counter<'method' | 'resource'>;
  private readonly admissionDuration: Histogram<'webhook' | 'allowed'>;

  constructor(now: () => Date = () => new Date()) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: `${PREFIX}process_` });
    this.reconcileDuration = new Histogram({
      name: `${PREFIX}reconcile_duration_seconds`,
      help: 'Time one reconcile of a resource took, by how it ended.',
      labelNames: ['kind', 'outcome'],
      buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.jobsFinished = new Counter({
      name: `${PREFIX}jobs_finished_total`,
      help: 'Operation Jobs this process saw end, by kind, operation and outcome.',
      labelNames: ['kind', 'operation', 'outcome'],
      registers,
    });
    this.operationDuration = new Histogram({
      name: `${PREFIX}operation_duration_seconds`,
      help: 'From the start of an operation Job to its end, by kind, operation and outcome.',
      labelNames: ['kind', 'operation', 'outcome'],
      buckets: [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800],
      registers,
    });
    this.leader = new Gauge({
      name: `${PREFIX}leader`,
      help: '1 while this replica holds the leader Lease and reconciles, else 0.',
      registers,
    });
    this.leader.set(0);
    this.queueWait = new Histogram({
      name: `${PREFIX}queue_wait_seconds`,
      help: 'Time a resource waited in the work queue, from being added to a worker taking it.',
      buckets: [0.001, 0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers,
    });
    this.apiRequestCount = new Counter({
      name: `${PREFIX}api_requests_total`,
      help: 'Requests this process sent to the API server, by HTTP method and resource; a watch counts once per connection.',
      labelNames: ['method', 'resource'],
      registers,
    });

    this.admissionDuration = new Histogram({
      name: `${PREFIX}admission_review_duration_seconds`,
      help: 'Time this replica took to answer one admission review, by webhook and whether it allowed the request.',
      labelNames: ['webhook', 'allowed'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });

    // Read at each scrape, through an arrow so `this` inside `collect` stays the gauge.
    const read = (): { states: KindState[]; jobs: JobState[] } | undefined => {
      const sources = this.sources;
      if (sources === undefined) return undefined;
      return {
        states: this.resourceStates(now()),
        jobs: [...sources.jobs()].flatMap((j) => jobState(j) ?? []),
      };
    };
    const perScrape = <L extends string>(
      name: string,
      help: string,
      labelNames: readonly L[],
      fill: (g: Gauge<L>, states: readonly KindState[], jobs: readonly JobState[]) => void,
    ) =>
      new Gauge<L>({
        name: `${PREFIX}${name}`,
        help,
        labelNames,
        registers,
        collect() {
          this.reset();
          const seen = read();
          if (seen !== undefined) fill(this, seen.states, seen.jobs);
        },
      });

    perScrape('work_queue_depth', 'Resources waiting in the work queue.', [], (g) =>
      g.set(this.sources?.queueDepth() ?? 0),
    );
    perScrape(
      'resources',
      'Resources by kind and phase (every phase is reported, 0 when none is in it).',
      ['kind', 'phase'],
      (g, states) => {
        for (const kind of METRIC_KINDS) {
          for (const phase of [...PHASES_OF[kind], 'Unknown']) g.set({ kind, phase }, 0);
        }
        for (const s of states) g.inc({ kind: s.kind, phase: s.phase });
      },
    );
    perScrape(
      'resources_not_ready',
      'Blocked or Failed resources by the reason their Ready condition gives.',
      ['kind', 'phase', 'reason'],
      (g, states) => {
        for (const s of states) {
          if (s.reason !== undefined) g.inc({ kind: s.kind, phase: s.phase, reason: s.reason });
        }
      },
    );
    perScrape(
      'drift_findings',
      'Drift findings the last observation reported, summed over resources, by severity.',
      ['kind', 'severity'],
      (g, states) => {
        for (const kind of METRIC_KINDS) {
          for (const severity of DRIFT_SEVERITIES) g.set({ kind, severity }, 0);
        }
        for (const s of states) {
          for (const [severity, n] of Object.entries(s.drift)) g.inc({ kind: s.kind, severity }, n);
        }
      },
    );
    perScrape(
      'approvals_waiting',
      'Resources awaiting an approval of their current plan.',
      ['kind'],
      (g, states) => {
        for (const kind of METRIC_KINDS) g.set({ kind }, 0);
        for (const s of states) if (s.approvalWaitingSeconds !== undefined) g.inc({ kind: s.kind });
      },
    );
    perScrape(
      'approval_waiting_seconds_max',
      'The longest time any resource has waited for an approval (0 when none waits).',
      ['kind'],
      (g, states) => {
        for (const kind of METRIC_KINDS) {
          const waits = states.filter((s) => s.kind === kind).map((s) => s.approvalWaitingSeconds ?? 0);
          g.set({ kind }, Math.max(0, ...waits));
        }
      },
    );
    perScrape(
      'unresolved_runs',
      'Resources whose last Apply or migration run ended with an unknown outcome, not yet settled.',
      ['kind'],
      (g, states) => {
        for (const kind of METRIC_KINDS) g.set({ kind }, 0);
        for (const s of states) if (s.unresolvedRun) g.inc({ kind: s.kind });
      },
    );
    perScrape(
      'jobs',
      'Operation Jobs that exist now, by kind, operation and state.',
      ['kind', 'operation', 'outcome'],
      (g, _states, jobs) => {
        for (const j of jobs) g.inc({ kind: j.kind, operation: j.operation, outcome: j.outcome });
      },
    );
  }

  /** Connects the scrape-time gauges to the manager's caches and queue. */
  attach(sources: MetricsSources): void {
    this.sources = sources;
  }

  reconciled(kind: MetricKind, outcome: ReconcileOutcome, seconds: number): void {
    this.reconcileDuration.observe({ kind, outcome }, seconds);
  }

  /** A Job was added or changed in the cache: an ended one is counted, once. */
  jobSeen(job: k8s.V1Job): void {
    const s = jobState(job);
    if (s === undefined || s.outcome === 'active' || this.counted.has(s.uid)) return;
    this.counted.add(s.uid);
    const labels = { kind: s.kind, operation: s.operation, outcome: s.outcome };
    this.jobsFinished.inc(labels);
    if (s.durationSeconds !== undefined) this.operationDuration.observe(labels, s.durationSeconds);
  }

  /** A deleted Job is forgotten, so the set of counted UIDs stays as small as the cache. */
  jobGone(job: k8s.V1Job): void {
    const uid = job.metadata?.uid;
    if (uid !== undefined) this.counted.delete(uid);
  }

  /** A key was taken from the work queue after waiting `ms`. */
  waited(ms: number): void {
    this.queueWait.observe(ms / 1000);
  }

  apiRequest(method: string, resource: string): void {
    this.apiRequestCount.inc({ method, resource });
  }

  /**
   * A review this replica answered. `webhook` is one of the served paths (the server answers 404 to any
   * other before a handler runs), so the label stays in a closed set.
   */
  admissionReview(webhook: string, allowed: boolean, seconds: number): void {
    this.admissionDuration.observe({ webhook, allowed: String(allowed) }, seconds);
  }

  setLeader(leading: boolean): void {
    this.leader.set(leading ? 1 : 0);
  }

  async text(): Promise<string> {
    return await this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private resourceStates(now: Date): KindState[] {
    return [...(this.sources?.resources() ?? [])].map((r) => ({
      ...stateOf(r, now),
      kind: r.kind,
    }));
  }
}

/** The caches the manager keeps, as the metrics need them. */
export interface InstrumentedCaches {
  readonly schemas: k8s.ObjectCache<k8s.KubernetesObject & { status?: PtahSchemaStatus }>;
  readonly migrations?: k8s.ObjectCache<k8s.KubernetesObject & { status?: PtahMigrationStatus }>;
  readonly jobs: k8s.Informer<k8s.V1Job> & k8s.ObjectCache<k8s.V1Job>;
  readonly queueDepth: () => number;
}

/** Wires the metrics to the manager's caches: scrape-time gauges read them, Job events count endings. */
export function instrument(metrics: OperatorMetrics, caches: InstrumentedCaches): void {
  metrics.attach({
    resources: (): WatchedResource[] => [
      ...caches.schemas.list().map((s) => ({ kind: 'PtahSchema' as const, status: s.status })),
      ...(caches.migrations?.list() ?? []).map((m) => ({ kind: 'PtahMigration' as const, status: m.status })),
    ],
    jobs: () => caches.jobs.list(),
    queueDepth: caches.queueDepth,
  });
  caches.jobs.on('add', (j) => metrics.jobSeen(j));
  caches.jobs.on('update', (j) => metrics.jobSeen(j));
  caches.jobs.on('delete', (j) => metrics.jobGone(j));
}

// The manager's metrics as Prometheus reads them: closed label values only, gauges rebuilt from the caches
// at each scrape, Jobs counted once, and the endpoint serving exactly /metrics.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import type { PtahSchemaStatus } from '../../../../src/api/ptah-schema.ts';
import { jobState } from '../../../../src/controller/metrics/job-state.ts';
import { parseBindAddress, startMetricsServer } from '../../../../src/controller/metrics/metrics-server.ts';
import {
  OperatorMetrics,
  type WatchedResource,
} from '../../../../src/controller/metrics/operator-metrics.ts';
import {
  migrationResourceState,
  reasonLabel,
  resourceState,
} from '../../../../src/controller/metrics/resource-state.ts';

const NOW = new Date('2026-01-02T12:00:00Z');
const cond = (type: string, status: 'True' | 'False', reason: string, at = '2026-01-02T10:00:00Z') => ({
  type,
  status,
  reason,
  message: 'm',
  lastTransitionTime: at,
});
const DIGEST = `sha256:${'a'.repeat(64)}`;

function job(
  uid: string,
  operation: string,
  end?: { type: 'Complete' | 'Failed'; at: string },
  owner = 'PtahSchema',
): k8s.V1Job {
  return {
    metadata: {
      uid,
      name: `secret-looking-name-${uid}`,
      namespace: 'team-a',
      labels: { 'operator.ptah.run/operation': operation, 'operator.ptah.run/schema': 'orders' },
      ownerReferences: [{ apiVersion: 'v1', kind: owner, name: 'orders', uid: 'o', controller: true }],
    },
    status: {
      startTime: new Date('2026-01-02T11:00:00Z'),
      ...(end
        ? {
            conditions: [{ type: end.type, status: 'True', lastTransitionTime: new Date(end.at) }],
            ...(end.type === 'Complete' ? { completionTime: new Date(end.at) } : {}),
          }
        : {}),
    },
  };
}

/** One sample's value from the exposition text, or undefined when the series is absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('resourceState', () => {
  it('reads the phase, and Unknown before the manager wrote one or for a value outside the API', () => {
    assert.equal(resourceState({ phase: 'InSync' }, NOW).phase, 'InSync');
    assert.equal(resourceState(undefined, NOW).phase, 'Unknown');
    assert.equal(resourceState({ phase: 'Whatever' } as unknown as PtahSchemaStatus, NOW).phase, 'Unknown');
  });

  it('gives Blocked and Failed resources the Ready reason, bounded to a CamelCase word', () => {
    const blocked = resourceState(
      { phase: 'Blocked', conditions: [cond('Ready', 'False', 'EngineUnsupported')] },
      NOW,
    );
    assert.equal(blocked.reason, 'EngineUnsupported');
    assert.equal(
      resourceState({ phase: 'InSync', conditions: [cond('Ready', 'True', 'InSync')] }, NOW).reason,
      undefined,
    );
    assert.equal(reasonLabel('has spaces and a name: orders'), 'Other');
    assert.equal(reasonLabel('A'.repeat(65)), 'Other');
    assert.equal(reasonLabel(undefined), 'Other');
  });

  it('sums drift per severity from the categories, or from the total when no category is listed', () => {
    const drift = {
      reportDigest: DIGEST,
      dialect: 'postgres' as const,
      total: 5,
      highestSeverity: 'destructive' as const,
      observedAt: '2026-01-02T11:00:00Z',
    };
    const withCategories = resourceState(
      {
        drift: {
          ...drift,
          categories: [
            { category: 'extra_column', count: 2, severity: 'warning' },
            { category: 'extra_table', count: 1, severity: 'destructive' },
            { category: 'extra_index', count: 2, severity: 'warning' },
          ],
        },
      },
      NOW,
    );
    assert.deepEqual(withCategories.drift, { warning: 4, destructive: 1 });
    assert.deepEqual(resourceState({ drift }, NOW).drift, { destructive: 5 });
    assert.deepEqual(resourceState({ drift: { ...drift, total: 0 } }, NOW).drift, {});
  });

  it('measures an approval wait from the ApprovalRequired transition, only while AwaitingApproval', () => {
    const waiting = resourceState(
      { phase: 'AwaitingApproval', conditions: [cond('ApprovalRequired', 'True', 'PlanNeedsApproval')] },
      NOW,
    );
    assert.equal(waiting.approvalWaitingSeconds, 7200);
    const applying = resourceState(
      { phase: 'Applying', conditions: [cond('ApprovalRequired', 'True', 'PlanNeedsApproval')] },
      NOW,
    );
    assert.equal(applying.approvalWaitingSeconds, undefined);
  });

  it('holds a run unresolved from an unknown outcome until a verification or acknowledgement settles it', () => {
    const at = '2026-01-02T11:00:00Z';
    const journal = (...types: [string, string?][]) => ({
      journal: {
        coveredSince: at,
        entries: types.map(([type, outcome]) => ({ type, time: at, ...(outcome ? { outcome } : {}) })),
      },
    });
    const state = (s: object) => resourceState(s as PtahSchemaStatus, NOW).unresolvedRun;
    assert.equal(state(journal(['PlanPublished'], ['ApplyFinished', 'Unknown'])), true);
    assert.equal(state(journal(['ApplyFinished', 'Unknown'], ['OperationFailed'])), true);
    assert.equal(state(journal(['ApplyFinished', 'Unknown'], ['Verified', 'InSync'])), false);
    assert.equal(state(journal(['ApplyFinished', 'Succeeded'])), false);
    assert.equal(state(journal(['RunFinished', 'Unknown'])), true);
    assert.equal(state(journal(['RunFinished', 'Unknown'], ['RunAcknowledged'])), false);
    assert.equal(state({}), false);
  });
});

describe('migrationResourceState', () => {
  it("reads a migration's own phases, and its latch in status as the unresolved run", () => {
    assert.equal(migrationResourceState({ phase: 'VerifyingHistory' }, NOW).phase, 'VerifyingHistory');
    assert.equal(migrationResourceState({ phase: 'Observing' } as never, NOW).phase, 'Unknown');
    const latched = migrationResourceState(
      {
        phase: 'Blocked',
        conditions: [cond('Ready', 'False', 'ApplyOutcomeUnknown')],
        unresolvedRun: {
          outcome: 'Partial',
          operationId: DIGEST,
          jobName: 'ptah-m-apply-orders-1',
          recordedAt: '2026-01-02T11:00:00Z',
        },
      },
      NOW,
    );
    assert.equal(latched.unresolvedRun, true);
    assert.equal(latched.reason, 'ApplyOutcomeUnknown');
    assert.deepEqual(latched.drift, {});
    assert.equal(migrationResourceState({ phase: 'InSync' }, NOW).unresolvedRun, false);
  });
});

describe('jobState', () => {
  it('names the operation as the API does and says how the Job ended and how long it took', () => {
    assert.deepEqual(jobState(job('u1', 'apply', { type: 'Complete', at: '2026-01-02T11:00:42Z' })), {
      uid: 'u1',
      kind: 'PtahSchema',
      operation: 'Apply',
      outcome: 'succeeded',
      durationSeconds: 42,
    });
    const failed = jobState(job('u2', 'plan', { type: 'Failed', at: '2026-01-02T11:01:00Z' }));
    assert.equal(failed?.outcome, 'failed');
    assert.equal(failed?.durationSeconds, 60);
    assert.equal(jobState(job('u3', 'observe'))?.outcome, 'active');
  });

  it("names a migration's History and Apply Jobs by their own kind and operation", () => {
    const history = jobState(job('m1', 'history', undefined, 'PtahMigration'));
    assert.equal(history?.kind, 'PtahMigration');
    assert.equal(history?.operation, 'History');
  });

  it('never carries a label value from outside the closed sets', () => {
    const odd = jobState(job('u4', 'drop-database-orders', undefined, 'SomethingElse'));
    assert.equal(odd?.operation, 'other');
    assert.equal(odd?.kind, 'other');
  });
});

describe('OperatorMetrics', () => {
  function scrapeWith(resources: WatchedResource[], jobs: k8s.V1Job[], depth = 0) {
    const m = new OperatorMetrics(() => NOW);
    m.attach({ resources: () => resources, jobs: () => jobs, queueDepth: () => depth });
    return m;
  }

  it('reports both families, each with its own phases, and a latched migration run as unresolved', async () => {
    const m = scrapeWith(
      [
        { kind: 'PtahSchema', status: { phase: 'InSync' } },
        {
          kind: 'PtahMigration',
          status: {
            phase: 'Blocked',
            conditions: [cond('Ready', 'False', 'ApplyOutcomeUnknown')],
            unresolvedRun: {
              outcome: 'Unknown',
              operationId: DIGEST,
              jobName: 'ptah-m-apply-orders-1',
              recordedAt: '2026-01-02T11:00:00Z',
            },
          },
        },
      ],
      [],
    );
    const text = await m.text();
    assert.equal(sample(text, 'ptah_resources{kind="PtahMigration",phase="Blocked"}'), 1);
    assert.equal(sample(text, 'ptah_resources{kind="PtahMigration",phase="VerifyingHistory"}'), 0);
    assert.equal(sample(text, 'ptah_resources{kind="PtahMigration",phase="Observing"}'), undefined);
    assert.equal(sample(text, 'ptah_resources{kind="PtahSchema",phase="InSync"}'), 1);
    assert.equal(sample(text, 'ptah_unresolved_runs{kind="PtahMigration"}'), 1);
    assert.equal(sample(text, 'ptah_unresolved_runs{kind="PtahSchema"}'), 0);
    assert.equal(
      sample(
        text,
        'ptah_resources_not_ready{kind="PtahMigration",phase="Blocked",reason="ApplyOutcomeUnknown"}',
      ),
      1,
    );
  });

  it('reports resources by phase with every phase present, and the queue depth', async () => {
    const m = scrapeWith(
      [
        { kind: 'PtahSchema', status: { phase: 'InSync' } },
        { kind: 'PtahSchema', status: { phase: 'InSync' } },
        {
          kind: 'PtahSchema',
          status: { phase: 'Failed', conditions: [cond('Ready', 'False', 'OperationFailed')] },
        },
      ],
      [],
      3,
    );
    const text = await m.text();
    assert.equal(sample(text, 'ptah_resources{kind="PtahSchema",phase="InSync"}'), 2);
    assert.equal(sample(text, 'ptah_resources{kind="PtahSchema",phase="Failed"}'), 1);
    assert.equal(sample(text, 'ptah_resources{kind="PtahSchema",phase="Blocked"}'), 0);
    assert.equal(
      sample(text, 'ptah_resources_not_ready{kind="PtahSchema",phase="Failed",reason="OperationFailed"}'),
      1,
    );
    assert.equal(sample(text, 'ptah_work_queue_depth'), 3);
    assert.equal(sample(text, 'ptah_leader'), 0);
  });

  it('reports waiting approvals with the longest wait, drift by severity and unresolved runs', async () => {
    const m = scrapeWith(
      [
        {
          kind: 'PtahSchema',
          status: {
            phase: 'AwaitingApproval',
            conditions: [cond('ApprovalRequired', 'True', 'PlanNeedsApproval', '2026-01-02T11:00:00Z')],
          },
        },
        {
          kind: 'PtahSchema',
          status: {
            phase: 'AwaitingApproval',
            conditions: [cond('ApprovalRequired', 'True', 'PlanNeedsApproval', '2026-01-02T09:00:00Z')],
            drift: {
              reportDigest: DIGEST,
              dialect: 'postgres',
              total: 2,
              highestSeverity: 'warning',
              observedAt: '2026-01-02T11:00:00Z',
            },
            journal: {
              coveredSince: '2026-01-02T09:00:00Z',
              entries: [{ type: 'ApplyFinished', outcome: 'Unknown', time: '2026-01-02T09:00:00Z' }],
            },
          },
        },
      ],
      [],
    );
    const text = await m.text();
    assert.equal(sample(text, 'ptah_approvals_waiting{kind="PtahSchema"}'), 2);
    assert.equal(sample(text, 'ptah_approval_waiting_seconds_max{kind="PtahSchema"}'), 3 * 3600);
    assert.equal(sample(text, 'ptah_drift_findings{kind="PtahSchema",severity="warning"}'), 2);
    assert.equal(sample(text, 'ptah_drift_findings{kind="PtahSchema",severity="destructive"}'), 0);
    assert.equal(sample(text, 'ptah_unresolved_runs{kind="PtahSchema"}'), 1);
  });

  it('counts each ended Job once, observes its duration, and shows the Jobs that exist now', async () => {
    const done = job('u1', 'apply', { type: 'Complete', at: '2026-01-02T11:00:42Z' });
    const running = job('u2', 'observe');
    const m = scrapeWith([], [done, running]);
    m.jobSeen(running);
    m.jobSeen(done);
    m.jobSeen(done);
    const text = await m.text();
    const labels = 'kind="PtahSchema",operation="Apply",outcome="succeeded"';
    assert.equal(sample(text, `ptah_jobs_finished_total{${labels}}`), 1);
    assert.equal(sample(text, `ptah_operation_duration_seconds_count{${labels}}`), 1);
    assert.equal(sample(text, `ptah_operation_duration_seconds_sum{${labels}}`), 42);
    assert.equal(sample(text, 'ptah_jobs{kind="PtahSchema",operation="Observe",outcome="active"}'), 1);
    assert.equal(
      sample(text, 'ptah_jobs_finished_total{kind="PtahSchema",operation="Observe",outcome="active"}'),
      undefined,
    );
    // No name, namespace or other label value a person chose ever appears.
    assert.doesNotMatch(text, /orders|team-a|secret-looking/);
  });

  it('times reconciles by outcome and says whether this replica leads', async () => {
    const m = scrapeWith([], []);
    m.reconciled('PtahSchema', 'success', 0.02);
    m.reconciled('PtahSchema', 'error', 0.5);
    m.setLeader(true);
    const text = await m.text();
    assert.equal(
      sample(text, 'ptah_reconcile_duration_seconds_count{kind="PtahSchema",outcome="success"}'),
      1,
    );
    assert.equal(sample(text, 'ptah_reconcile_duration_seconds_count{kind="PtahSchema",outcome="error"}'), 1);
    assert.equal(sample(text, 'ptah_leader'), 1);
  });

  it('times admission reviews by webhook and whether they allowed', async () => {
    const m = scrapeWith([], []);
    m.admissionReview('vcontrollerwrite', true, 0.004);
    m.admissionReview('vcontrollerwrite', false, 0.03);
    m.admissionReview('mapproval', true, 0.002);
    const text = await m.text();
    const series = (webhook: string, allowed: boolean, le: string) =>
      `ptah_admission_review_duration_seconds_bucket{le="${le}",webhook="${webhook}",allowed="${allowed}"}`;
    assert.equal(sample(text, series('vcontrollerwrite', true, '0.005')), 1);
    assert.equal(sample(text, series('vcontrollerwrite', false, '0.025')), 0);
    assert.equal(sample(text, series('vcontrollerwrite', false, '0.05')), 1);
    assert.equal(sample(text, series('mapproval', true, '0.0025')), 1);
  });
});

describe('metrics endpoint', () => {
  it('parses bind addresses and names the fix for a bad one', () => {
    assert.deepEqual(parseBindAddress(':8080'), { host: '', port: 8080 });
    assert.deepEqual(parseBindAddress('127.0.0.1:0'), { host: '127.0.0.1', port: 0 });
    assert.deepEqual(parseBindAddress('[::1]:9090'), { host: '::1', port: 9090 });
    assert.throws(() => parseBindAddress('8080'), /is not host:port; write e.g. ":8080"/);
    assert.throws(() => parseBindAddress(':70000'), /is not host:port/);
  });

  it('serves GET /metrics in the exposition format and nothing else', async () => {
    const m = new OperatorMetrics(() => NOW);
    const server = await startMetricsServer(m, '127.0.0.1:0');
    try {
      const base = `http://127.0.0.1:${server.port}`;
      const ok = await fetch(`${base}/metrics`);
      assert.equal(ok.status, 200);
      assert.match(ok.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
      assert.match(await ok.text(), /^# HELP ptah_leader /m);
      assert.equal((await fetch(`${base}/`)).status, 404);
      assert.equal((await fetch(`${base}/metrics`, { method: 'POST' })).status, 405);
    } finally {
      await server.close();
    }
  });
});

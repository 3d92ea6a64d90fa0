// The manager's /metrics endpoint scraped as Prometheus would, while it reconciles real resources: phases,
// operation Jobs and their durations, a waiting approval, and never a name a person chose.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { freePort } from '../env/ports.ts';
import { declareSchema, dumpDebug, eventually, useE2E, waitForPhase } from './harness.ts';

let metricsPort = 0;
const { skip, e2e } = useE2E(async () => {
  metricsPort = await freePort();
  return { PTAH_METRICS_BIND_ADDRESS: `127.0.0.1:${metricsPort}` };
});

const CUSTOMERS = 'CREATE TABLE public.customers (id bigint PRIMARY KEY, email text NOT NULL);\n';

async function scrape(): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  assert.equal(res.status, 200);
  return await res.text();
}

/** One sample's value, or undefined while the series is absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('the metrics endpoint of a running manager', { skip }, () => {
  it('shows resources by phase, operation counts and durations, and the approval waiting', async () => {
    // One database already matches its declaration (InSync without an Apply), one needs a change that
    // waits for a person's approval.
    await declareSchema(e2e(), 'metricsync', {
      data: { 'schema.sql': CUSTOMERS },
      existing: CUSTOMERS,
      policy: { apply: 'OnApproval' },
      interval: '1h',
    });
    await declareSchema(e2e(), 'metricwait', {
      data: { 'schema.sql': CUSTOMERS },
      policy: { apply: 'OnApproval' },
      interval: '1h',
    });
    const synced = await waitForPhase(e2e(), 'metricsync', ['InSync', 'Failed', 'Blocked']);
    if (synced.status?.phase !== 'InSync') await dumpDebug(e2e(), 'metricsync');
    assert.equal(synced.status?.phase, 'InSync');
    const waiting = await waitForPhase(e2e(), 'metricwait', ['AwaitingApproval', 'Failed', 'Blocked']);
    assert.equal(waiting.status?.phase, 'AwaitingApproval');

    const text = await eventually('the scrape shows both resources and their Jobs', async () => {
      const t = await scrape();
      return sample(t, 'ptah_resources{kind="PtahSchema",phase="InSync"}') === 1 &&
        sample(t, 'ptah_resources{kind="PtahSchema",phase="AwaitingApproval"}') === 1 &&
        (sample(t, 'ptah_jobs_finished_total{kind="PtahSchema",operation="Plan",outcome="succeeded"}') ??
          0) >= 2
        ? t
        : undefined;
    });
    assert.equal(sample(text, 'ptah_resources{kind="PtahSchema",phase="Failed"}'), 0);
    assert.equal(sample(text, 'ptah_approvals_waiting{kind="PtahSchema"}'), 1);
    assert.ok((sample(text, 'ptah_approval_waiting_seconds_max{kind="PtahSchema"}') ?? -1) >= 0);
    const observed = 'kind="PtahSchema",operation="Observe",outcome="succeeded"';
    assert.ok((sample(text, `ptah_jobs_finished_total{${observed}}`) ?? 0) >= 2, text);
    assert.ok((sample(text, `ptah_operation_duration_seconds_count{${observed}}`) ?? 0) >= 2);
    assert.ok((sample(text, `ptah_operation_duration_seconds_sum{${observed}}`) ?? 0) > 0);
    assert.ok(
      (sample(text, 'ptah_reconcile_duration_seconds_count{kind="PtahSchema",outcome="success"}') ?? 0) > 0,
    );
    assert.equal(sample(text, 'ptah_leader'), 1);
    assert.equal(sample(text, 'ptah_unresolved_runs{kind="PtahSchema"}'), 0);
    // Closed labels only: no resource, namespace or database name reaches the endpoint.
    assert.doesNotMatch(text, new RegExp(`metricsync|metricwait|${e2e().namespace}|_db\\b`));
  });
});

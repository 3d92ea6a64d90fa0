// Capacity benchmark: PtahSchemas on the local control plane with the real manager process, the node
// agent and PostgreSQL, as the e2e tests start them (operation Pods run the compiled runner bundle).
//
//   npm run bench -- capacity
//   PTAH_BENCH_ACTIVE=100 PTAH_BENCH_IDLE=0 npm run bench -- capacity
//
// Phase 1, cold start: ACTIVE schemas, one database each, policy Always: time until every one is InSync,
// operation Jobs run and their rate, per-operation overhead (Job created → Pod running → Job finished),
// manager RSS and CPU, the work queue's wait (the manager's ptah_queue_wait_seconds). Then a change batch:
// every ACTIVE source gets a new column at once, and the time until every database has it and every
// resource is InSync again is measured, with the API requests the manager sent per resource (its
// ptah_api_requests_total) during the batch and during an idle minute, and how fast its webhooks answered
// the reviews those phases caused (ptah_admission_review_duration_seconds). Phase 2, steady state: IDLE more
// schemas that are suspended (the manager caches, watches and reconciles them, but runs no Job), to see what
// each resource costs the manager's memory;
// RSS is read after the queue settles. Phase 3, a restart burst: the manager is restarted and the time until
// it has looked at every resource again (each ACTIVE resource's status rewritten or confirmed) is measured.
// Figures only: nothing is asserted (speed and memory are measured here, not in timed tests).
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type * as k8s from '@kubernetes/client-node';
import {
  at,
  createSchema,
  createSecret,
  createSource,
  query,
  startE2E,
  type E2E,
} from '../test/e2e/harness.ts';
import { freePort } from '../test/env/ports.ts';
import type { PtahSchema } from '../src/api/ptah-schema.ts';

const ACTIVE = Number(process.env['PTAH_BENCH_ACTIVE'] ?? 10);
const IDLE = Number(process.env['PTAH_BENCH_IDLE'] ?? 100);
const TABLE = 'CREATE TABLE public.items (id bigint PRIMARY KEY, name text NOT NULL);\n';
const CHANGED = 'CREATE TABLE public.items (id bigint PRIMARY KEY, name text NOT NULL, note text);\n';

/** The manager's Prometheus text, as numbers by series (name and labels exactly as printed). */
async function scrape(port: number): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (m) series.set(m[1]!, Number(m[2]));
  }
  return series;
}

const sum = (s: Map<string, number>, prefix: string) =>
  [...s].filter(([k]) => k.startsWith(prefix)).reduce((n, [, v]) => n + v, 0);

/** Each labelled series of a counter that rose between two scrapes, as `METHOD resource`, the largest first. */
function increases(
  before: Map<string, number>,
  after: Map<string, number>,
  name: string,
): [string, number][] {
  return [...after]
    .filter(([k]) => k.startsWith(`${name}{`))
    .map(([k, v]): [string, number] => {
      const method = /method="([^"]*)"/.exec(k)?.[1] ?? '';
      const resource = /resource="([^"]*)"/.exec(k)?.[1] ?? '';
      return [`${method} ${resource}`, v - (before.get(k) ?? 0)];
    })
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1]);
}

/**
 * A quantile of a histogram's increase between two scrapes, as the upper bound of its bucket, over every
 * labelled series of it (the buckets of one bound summed).
 */
function histogramQuantile(before: Map<string, number>, after: Map<string, number>, name: string, q: number) {
  const byBound = new Map<number, number>();
  for (const [k, v] of after) {
    if (!k.startsWith(`${name}_bucket{`)) continue;
    const le = Number(/le="([^"]+)"/.exec(k)![1]);
    byBound.set(le, (byBound.get(le) ?? 0) + v - (before.get(k) ?? 0));
  }
  const buckets = [...byBound].map(([le, n]) => ({ le, n })).sort((a, b) => a.le - b.le);
  const total = buckets.at(-1)?.n ?? 0;
  if (total === 0) return NaN;
  return buckets.find((b) => b.n >= q * total)!.le;
}

/** How many reviews the manager's webhooks answered between two scrapes, and their p50/p99 bucket bounds. */
function admissionLatency(before: Map<string, number>, after: Map<string, number>): string {
  const name = 'ptah_admission_review_duration_seconds';
  const count = sum(after, `${name}_count`) - sum(before, `${name}_count`);
  const ms = (q: number) => (histogramQuantile(before, after, name, q) * 1000).toFixed(1);
  return `${count} answered, p50/p99 ≤ ${ms(0.5)} / ${ms(0.99)} ms (bucket bound)`;
}

function procStatus(pid: number): { rssMiB: number; peakMiB: number; cpuSeconds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  // The kernel's high-water mark of the resident set: the true peak, not a sample that may miss it.
  const peakKb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  // utime and stime are fields 14 and 15 of /proc/pid/stat, in clock ticks (100 per second on Linux).
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { rssMiB: rssKb / 1024, peakMiB: peakKb / 1024, cpuSeconds: ticks / 100 };
}

const MiB = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/**
 * The manager's resident set and what of it V8 accounts for, from its own metrics (prom-client's default
 * process metrics): heap used and committed, and external memory (Buffers, TLS and ArrayBuffer backing
 * stores). What the resident set holds beyond those is code, stacks and the allocator's free lists.
 */
async function memory(pid: number, port: number): Promise<string> {
  const { rssMiB } = procStatus(pid);
  const s = await scrape(port);
  const p = 'ptah_process_nodejs_';
  return (
    `${rssMiB.toFixed(1)} MiB (V8 heap used ${MiB(s.get(`${p}heap_size_used_bytes`) ?? NaN)} of ` +
    `${MiB(s.get(`${p}heap_size_total_bytes`) ?? NaN)}, external ${MiB(s.get(`${p}external_memory_bytes`) ?? NaN)})`
  );
}

async function schemas(e2e: E2E): Promise<PtahSchema[]> {
  const list = (await e2e.objects.listNamespacedCustomObject({ ...at(e2e, 'ptahschemas') })) as {
    items: PtahSchema[];
  };
  return list.items;
}

async function until(what: string, timeoutMs: number, done: () => Promise<boolean>): Promise<number> {
  const started = performance.now();
  while (!(await done())) {
    if (performance.now() - started > timeoutMs)
      throw new Error(`capacity: ${what} not reached in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 1_000));
  }
  return performance.now() - started;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Job created → its Pod's main container started → the Job finished, from the objects' own timestamps. */
async function jobOverheads(e2e: E2E): Promise<{ jobs: number; toRunning: number[]; total: number[] }> {
  const jobs = (await e2e.batch.listNamespacedJob({ namespace: e2e.namespace })).items;
  const pods = (await e2e.core.listNamespacedPod({ namespace: e2e.namespace })).items;
  const byJob = new Map<string, k8s.V1Pod>();
  for (const p of pods) {
    const owner = p.metadata?.ownerReferences?.find((o) => o.kind === 'Job');
    if (owner) byJob.set(owner.uid, p);
  }
  const toRunning: number[] = [];
  const total: number[] = [];
  for (const j of jobs) {
    const created = Date.parse(String(j.metadata?.creationTimestamp ?? ''));
    const pod = byJob.get(j.metadata?.uid ?? '');
    const started = pod?.status?.containerStatuses?.[0]?.state?.terminated?.startedAt;
    if (started) toRunning.push(Date.parse(String(started)) - created);
    const end =
      j.status?.completionTime ?? j.status?.conditions?.find((c) => c.type === 'Failed')?.lastTransitionTime;
    if (end) total.push(Date.parse(String(end)) - created);
  }
  return {
    jobs: jobs.length,
    toRunning: toRunning.sort((a, b) => a - b),
    total: total.sort((a, b) => a - b),
  };
}

const rows: [string, string][] = [];
const row = (name: string, value: string) => {
  rows.push([name, value]);
  process.stdout.write(`  ${name}: ${value}\n`);
};

const e2e = await startE2E();
try {
  const metricsPort = await freePort();
  // As the chart runs it: metrics served, a 15 s leader Lease (the e2e default of 5 s is lost on a busy
  // machine, and a manager that loses its Lease exits).
  const managerEnv = {
    PTAH_METRICS_BIND_ADDRESS: `127.0.0.1:${metricsPort}`,
    PTAH_LEADER_LEASE_SECONDS: '15',
  };
  const pid = (await e2e.startManager(managerEnv)).pid;
  // Once its watches have listed and leadership is taken, as at the other readings.
  await new Promise((r) => setTimeout(r, 10_000));
  row('manager RSS, no resources', await memory(pid, metricsPort));

  // Phase 1: cold start of ACTIVE schemas.
  const urls: string[] = [];
  for (let i = 0; i < ACTIVE; i++) {
    const name = `cap${i}`;
    const url = await e2e.env.postgres!.createDatabase(`cap${i}_db`);
    urls.push(url);
    await createSource(e2e, `${name}-src`, { 'schema.sql': TABLE });
    await createSecret(e2e, `${name}-db`, url);
  }
  const cpu0 = procStatus(pid).cpuSeconds;
  const metrics0 = await scrape(metricsPort);
  const started = performance.now();
  for (let i = 0; i < ACTIVE; i++) {
    await createSchema(e2e, `cap${i}`, {
      source: `cap${i}-src`,
      secret: `cap${i}-db`,
      policy: { apply: 'Always' },
    });
  }
  const converge = await until(`${ACTIVE} InSync`, 60 * 60_000, async () => {
    const all = await schemas(e2e);
    return all.filter((s) => s.status?.phase === 'InSync').length >= ACTIVE;
  });
  const wall = performance.now() - started;
  const after = procStatus(pid);
  const overhead = await jobOverheads(e2e);
  row(`cold start, ${ACTIVE} schemas to InSync`, `${(converge / 1000).toFixed(1)} s`);
  row('operation Jobs run', `${overhead.jobs} (${(overhead.jobs / (wall / 60_000)).toFixed(1)} per minute)`);
  row(
    'Job created → Pod running, p50/p99',
    `${(percentile(overhead.toRunning, 50) / 1000).toFixed(1)} / ${(percentile(overhead.toRunning, 99) / 1000).toFixed(1)} s`,
  );
  row(
    'Job created → Job finished, p50/p99',
    `${(percentile(overhead.total, 50) / 1000).toFixed(1)} / ${(percentile(overhead.total, 99) / 1000).toFixed(1)} s`,
  );
  row('manager CPU during the cold start', `${(after.cpuSeconds - cpu0).toFixed(1)} s`);
  row(`manager RSS, ${ACTIVE} resources InSync`, await memory(pid, metricsPort));
  row('manager RSS high-water mark during the cold start', `${after.peakMiB.toFixed(1)} MiB`);
  const metrics1 = await scrape(metricsPort);
  const waitP = (q: number) => histogramQuantile(metrics0, metrics1, 'ptah_queue_wait_seconds', q).toFixed(3);
  row('queue wait during the cold start, p50/p99 (bucket bound)', `${waitP(0.5)} / ${waitP(0.99)} s`);
  row('admission reviews during the cold start', admissionLatency(metrics0, metrics1));
  const coldRequests = sum(metrics1, 'ptah_api_requests_total') - sum(metrics0, 'ptah_api_requests_total');
  row('API requests per resource, cold start', (coldRequests / ACTIVE).toFixed(1));

  // The change batch: every source edited at once; Always applies each new plan.
  await new Promise((r) => setTimeout(r, 15_000));
  const cpu2 = procStatus(pid).cpuSeconds;
  const metrics2 = await scrape(metricsPort);
  const batchStarted = performance.now();
  for (let i = 0; i < ACTIVE; i++) {
    await e2e.core.replaceNamespacedConfigMap({
      namespace: e2e.namespace,
      name: `cap${i}-src`,
      body: { metadata: { name: `cap${i}-src` }, data: { 'schema.sql': CHANGED } },
    });
  }
  const pending = new Set(urls.keys());
  await until(`${ACTIVE} changes applied`, 60 * 60_000, async () => {
    for (const i of [...pending]) {
      const rows = await query(
        urls[i]!,
        "SELECT 1 FROM information_schema.columns WHERE table_name = 'items' AND column_name = 'note'",
      );
      if (rows.length > 0) pending.delete(i);
    }
    if (pending.size > 0) return false;
    const all = await schemas(e2e);
    return all.filter((s) => s.status?.phase === 'InSync').length >= ACTIVE;
  });
  const batch = performance.now() - batchStarted;
  const metrics3 = await scrape(metricsPort);
  row(`change batch, ${ACTIVE} plans published and applied`, `${(batch / 1000).toFixed(1)} s`);
  row('manager CPU during the change batch', `${(procStatus(pid).cpuSeconds - cpu2).toFixed(1)} s`);
  const batchWaitP = (q: number) =>
    histogramQuantile(metrics2, metrics3, 'ptah_queue_wait_seconds', q).toFixed(3);
  row(
    'queue wait during the change batch, p50/p99 (bucket bound)',
    `${batchWaitP(0.5)} / ${batchWaitP(0.99)} s`,
  );
  row('admission reviews during the change batch', admissionLatency(metrics2, metrics3));
  const batchRequests = sum(metrics3, 'ptah_api_requests_total') - sum(metrics2, 'ptah_api_requests_total');
  row('API requests per resource, change batch', (batchRequests / ACTIVE).toFixed(1));
  row(`manager RSS after the change batch`, await memory(pid, metricsPort));
  row('manager RSS high-water mark so far', `${procStatus(pid).peakMiB.toFixed(1)} MiB`);
  await new Promise((r) => setTimeout(r, 60_000));
  const metrics4 = await scrape(metricsPort);
  const idleRequests = sum(metrics4, 'ptah_api_requests_total') - sum(metrics3, 'ptah_api_requests_total');
  row(`API requests per resource per idle minute, ${ACTIVE} resources`, (idleRequests / ACTIVE).toFixed(2));
  // What those requests are: by method and resource, the largest first.
  for (const [series, n] of increases(metrics3, metrics4, 'ptah_api_requests_total'))
    row(`  of which ${series}`, (n / ACTIVE).toFixed(2));
  row(`manager RSS, ${ACTIVE} resources, idle minute later`, await memory(pid, metricsPort));

  // Phase 2: IDLE suspended schemas on top (cached, watched, reconciled; no Job).
  const cpu1 = procStatus(pid).cpuSeconds;
  for (let i = 0; i < IDLE; i++) {
    await createSource(e2e, `idle${i}-src`, { 'schema.sql': TABLE });
    await e2e.objects.createNamespacedCustomObject({
      ...at(e2e, 'ptahschemas'),
      body: {
        apiVersion: 'operator.ptah.run/v1alpha1',
        kind: 'PtahSchema',
        metadata: { name: `idle${i}` },
        spec: {
          target: {
            engine: 'postgres',
            coordinationKey: `idle${i}`,
            urlFrom: { name: 'cap0-db', key: 'url' },
          },
          desired: { configMap: { name: `idle${i}-src`, files: [{ key: 'schema.sql' }] } },
          policy: {},
          suspend: true,
        },
      },
    });
  }
  await until(`${IDLE} suspended`, 30 * 60_000, async () => {
    if (IDLE === 0) return true;
    const all = await schemas(e2e);
    return all.filter((s) => s.status?.phase === 'Suspended').length >= IDLE;
  });
  await new Promise((r) => setTimeout(r, 20_000));
  const steady = procStatus(pid);
  const total = ACTIVE + IDLE;
  row(`manager RSS, ${total} resources (${IDLE} suspended)`, await memory(pid, metricsPort));
  row('manager CPU for the suspended ones', `${(steady.cpuSeconds - cpu1).toFixed(1)} s`);
  const idleCpu0 = steady.cpuSeconds;
  await new Promise((r) => setTimeout(r, 60_000));
  row(
    `manager CPU per idle minute, ${total} resources`,
    `${(procStatus(pid).cpuSeconds - idleCpu0).toFixed(2)} s`,
  );

  // Phase 3: restart burst.
  await e2e.manager?.stop(5_000);
  const restarted = performance.now();
  const next = await e2e.startManager(managerEnv);
  const burst = await until('every InSync resource looked at again', 10 * 60_000, async () => {
    const all = await schemas(e2e);
    // A pass that re-reads the resource and confirms its state writes nothing; the leader election and
    // the initial list are what a restart pays, so the burst ends when the manager's log says it reconciled
    // every key at least once.
    const log = readFileSync(next.logFile, 'utf8');
    const seen = new Set([...log.matchAll(/"key":"[^/]+\/([^"]+)","ms"/g)].map((m) => m[1]));
    return all.every((s) => seen.has(s.metadata.name!));
  });
  row(
    `restart burst: every one of ${total} resources reconciled`,
    `${((performance.now() - restarted) / 1000).toFixed(1)} s (${(burst / 1000).toFixed(1)} s after start)`,
  );
  row('manager RSS after the restart burst', `${procStatus(next.pid).rssMiB.toFixed(1)} MiB`);

  process.stdout.write('\ncapacity (machine shared with other work; figures are indicative)\n');
  for (const [name, value] of rows) process.stdout.write(`${name.padEnd(56)} ${value}\n`);
} finally {
  await e2e.stop();
}

// A chart upgrade while Applies of both families run, as a platform team upgrades: the operator installed
// with `helm install` (its manager Pods on the node agent), a PtahMigration whose Apply sleeps in the
// database and a PtahSchema whose Apply validates a CHECK that sleeps per row, and `helm upgrade` rolling the
// manager Deployment before either Apply ends. An upgrade that keeps the execution binding (only the log level
// moves) hands the running Jobs to the new Pods, which read their results; one that changes the manager
// image, or installs a build of a newer controller-state version (its bundles and chart made from this
// build, test/env/operator-build.ts), retires the epoch, and the new Pods wait the Jobs out without reading
// them and let a fresh read of the database say where it stands. Either way each Job is made once and each
// statement runs once.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { JOB_ANNOTATIONS } from '../../src/api/job-envelope.ts';
import { API_GROUP, API_VERSION, CONTROLLER_STATE_VERSION } from '../../src/api/meta.ts';
import type { PtahMigration } from '../../src/api/ptah-migration.ts';
import type { PtahSchema } from '../../src/api/ptah-schema.ts';
import { nodeAgentAvailable, startEnvironment, type Environment } from '../env/environment.ts';
import { stateVersionBuild } from '../env/operator-build.ts';
import {
  CHART,
  installOperatorChart,
  OPERATOR_REPOSITORY,
  type OperatorChart,
} from '../env/operator-chart.ts';
import {
  at,
  chartE2E,
  chartManagerPods,
  createSecret,
  declareSchema,
  getSchema,
  createSource,
  eventsOf,
  eventually,
  migrationWhen,
  query,
  podReady,
  statementsIn,
  withSum,
  type E2E,
} from './harness.ts';

const skip = nodeAgentAvailable() ? false : 'the node agent is not available';
const NS = 'ptah-operator';
/** Long enough for `helm upgrade --wait` to roll both manager Pods while the Applies still run. */
const SLEEP_SECONDS = 45;
/** The schema Apply's CHECK sleeps this long per existing row while it validates. */
const ROW_SLEEP_SECONDS = 0.05;
const ROWS = Math.ceil(SLEEP_SECONDS / ROW_SLEEP_SECONDS);

let env: Environment;
let chart: OperatorChart;
let e: E2E;

const managerPods = () => chartManagerPods(e, NS);

/** Both manager Pods Ready and none of them one of `old`: the Deployment rolled. */
async function rolledPast(old: readonly string[]): Promise<k8s.V1Pod[] | undefined> {
  const pods = await managerPods();
  const ok = pods.length === 2 && pods.every((p) => podReady(p) && !old.includes(p.metadata!.name!));
  return ok ? pods : undefined;
}

async function migrationJobs(name: string, operation: string): Promise<k8s.V1Job[]> {
  const selector = `${API_GROUP}/migration=${name},${API_GROUP}/operation=${operation}`;
  return (await e.batch.listNamespacedJob({ namespace: e.namespace, labelSelector: selector })).items;
}

const ended = (job: k8s.V1Job) =>
  (job.status?.conditions ?? []).some(
    (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
  );

const SLOW = (table: string) =>
  `SELECT pg_sleep(${SLEEP_SECONDS});\nCREATE TABLE ${table} (id int PRIMARY KEY);\nINSERT INTO ${table} VALUES (1);\n`;

/** A table the database already holds, with rows a CHECK must validate one by one. */
const EXISTING_ITEMS = `CREATE TABLE public.items (id integer PRIMARY KEY);
INSERT INTO public.items SELECT generate_series(1, ${ROWS});`;

/** What the schema declares: the same table with a CHECK whose function sleeps, so adding it takes a while. */
const SLOW_CHECK = `CREATE FUNCTION public.slow_check(v integer) RETURNS boolean
LANGUAGE plpgsql
AS $$
BEGIN
  PERFORM pg_sleep(${ROW_SLEEP_SECONDS});
  RETURN v > 0;
END
$$;
CREATE TABLE public.items (id integer PRIMARY KEY, CONSTRAINT items_slow CHECK (public.slow_check(id)));
`;

const CHECK_ADDED = /ADD CONSTRAINT "?items_slow"?/i;

/** A PtahMigration applying Always: database `<name>_db`, Secret `<name>-db`, ConfigMap `<name>-src`. */
async function declareMigration(name: string, files: Record<string, string>): Promise<string> {
  const url = await env.postgres!.createDatabase(`${name}_db`);
  await createSecret(e, `${name}-db`, url);
  const data = withSum(files);
  await createSource(e, `${name}-src`, data);
  await e.objects.createNamespacedCustomObject({
    ...at(e, 'ptahmigrations'),
    body: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'PtahMigration',
      metadata: { name },
      spec: {
        target: { engine: 'postgres', coordinationKey: name, urlFrom: { name: `${name}-db`, key: 'url' } },
        desired: { configMap: { name: `${name}-src`, files: Object.keys(data).map((key) => ({ key })) } },
        policy: { apply: 'Always' },
        interval: '10m',
        execution: { failureRetryInterval: '5s', activeDeadlineSeconds: 300 },
      },
    },
  });
  return url;
}

/** The Job of an Apply claim once it runs. */
async function runningJob(jobName: string): Promise<k8s.V1Job> {
  return await eventually(`the Apply Job ${jobName} running`, async () => {
    const j = await e.batch
      .readNamespacedJob({ namespace: e.namespace, name: jobName })
      .catch(() => undefined);
    return j !== undefined && (j.status?.active ?? 0) > 0 ? j : undefined;
  });
}

/** This migration's Apply, once dispatched and running. */
async function migrationApply(name: string): Promise<PtahMigration> {
  const migration = await migrationWhen(
    e,
    name,
    'its Apply dispatched',
    (m) => m.status?.claim?.type === 'Apply' && m.status.claim.dispatchStarted === true,
  );
  await runningJob(migration.status!.claim!.jobName);
  return migration;
}

/** This schema's Apply, once dispatched and running. */
async function schemaApply(name: string): Promise<PtahSchema> {
  const schema = await eventually(
    `${name}: its Apply dispatched`,
    async () => {
      const s = await getSchema(e, name);
      return s.status?.claim?.type === 'Apply' && s.status.claim.dispatchStarted === true ? s : undefined;
    },
    150_000,
  ).catch(async (error: unknown) => {
    const s = await getSchema(e, name).catch(() => undefined);
    throw new Error(`${(error as Error).message}; status: ${JSON.stringify(s?.status)}`);
  });
  await runningJob(schema.status!.claim!.jobName);
  return schema;
}

async function schemaWhen(name: string, what: string, ok: (s: PtahSchema) => boolean): Promise<PtahSchema> {
  return await eventually(
    `${name}: ${what}`,
    async () => {
      const s = await getSchema(e, name);
      return ok(s) ? s : undefined;
    },
    180_000,
  ).catch(async (error: unknown) => {
    const s = await getSchema(e, name).catch(() => undefined);
    throw new Error(`${(error as Error).message}; status: ${JSON.stringify(s?.status)}`);
  });
}

async function schemaApplyJobs(name: string): Promise<k8s.V1Job[]> {
  const selector = `${API_GROUP}/schema=${name},${API_GROUP}/operation=apply`;
  return (await e.batch.listNamespacedJob({ namespace: e.namespace, labelSelector: selector })).items;
}

/** `helm upgrade` has returned with the Deployment rolled, and the Apply Job has not ended yet. */
async function assertStillRunning(jobName: string): Promise<void> {
  const job = await e.batch.readNamespacedJob({ namespace: e.namespace, name: jobName });
  assert.ok(
    !ended(job),
    `the Apply Job ${jobName} ended before the upgrade finished: the test proves nothing`,
  );
}

/**
 * Applies of both families running while `upgrade` starts a new execution epoch: both Jobs are waited out,
 * given only their TTL and never read; a history read settles the migration and an Observe the schema, each
 * Job made once and each statement run once. Returns both resources as they settled.
 */
async function retiredBy(
  mname: string,
  sname: string,
  upgrade: () => Promise<{ readonly code: number; readonly stderr: string }>,
): Promise<{ migration: PtahMigration; schema: PtahSchema }> {
  const migrationUrl = await declareMigration(mname, { '1_slow.sql': SLOW(`${mname}_a`) });
  await declareSchema(e, sname, {
    existing: EXISTING_ITEMS,
    data: { 'schema.sql': SLOW_CHECK },
    policy: { apply: 'Always' },
  });
  const migration = await migrationApply(mname);
  const schema = await schemaApply(sname);
  const mclaim = migration.status!.claim!;
  const sclaim = schema.status!.claim!;
  const epoch = migration.status!.executionBinding!.epoch;
  const schemaEpoch = schema.status!.executionBinding!.epoch;
  assert.equal(mclaim.executionEpoch, epoch);
  assert.equal(sclaim.executionEpoch, schemaEpoch);
  const before = (await managerPods()).map((p) => p.metadata!.name!);

  const upgraded = await upgrade();
  assert.equal(upgraded.code, 0, upgraded.stderr);
  const image = `${OPERATOR_REPOSITORY}@${chart.digest}`;
  const pods = await eventually('both manager Pods replaced and Ready', () => rolledPast(before), 120_000);
  assert.ok(pods.every((p) => p.spec?.containers[0]?.image === image));
  await assertStillRunning(mclaim.jobName);
  await assertStillRunning(sclaim.jobName);

  // The migration: its run is latched unknown, and the history read at once finds nothing pending.
  const m = await migrationWhen(
    e,
    mname,
    'InSync under the new epoch after a history read',
    (x) =>
      x.status?.phase === 'InSync' &&
      x.status.claim === undefined &&
      x.status.executionBinding?.epoch !== epoch,
    180_000,
  );
  const next = m.status!.executionBinding!.epoch;
  assert.equal(m.status!.executionBinding!.managerImage, image);
  const unknown = await eventsOf(e, mname, 'ApplyOutcomeUnknown');
  assert.ok(
    unknown.some(
      (ev) =>
        ev.message ===
        `run ${mclaim.jobName} ran under execution binding epoch ${epoch}, retired by ${next}: its result is not read`,
    ),
    JSON.stringify(unknown.map((ev) => ev.message)),
  );
  assert.equal(m.status?.lastRun?.outcome, 'Unknown', 'the retired result was never certified');
  assert.equal(m.status?.resolvedRun?.resolution, 'HistoryRead', JSON.stringify(m.status?.resolvedRun));
  const mjob = await e.batch.readNamespacedJob({ namespace: e.namespace, name: mclaim.jobName });
  assert.ok(ended(mjob));
  assert.equal(mjob.spec?.ttlSecondsAfterFinished, 300, 'the retired Job got its cleanup TTL');
  assert.equal((await migrationJobs(mname, 'apply')).length, 1, 'the Apply Job was never made again');
  assert.deepEqual(await query(migrationUrl, `SELECT id FROM ${mname}_a`), [{ id: 1 }]);
  assert.equal(statementsIn(e, `${mname}_db`, new RegExp(`INSERT INTO ${mname}_a`, 'i')).length, 1);

  // The schema: its Apply ends Unknown, and a fresh observation proves the database before InSync.
  const s = await schemaWhen(
    sname,
    'InSync under the new epoch after a fresh observation',
    (x) =>
      x.status?.phase === 'InSync' &&
      x.status.claim === undefined &&
      x.status.executionBinding?.epoch !== schemaEpoch,
  );
  const schemaNext = s.status!.executionBinding!.epoch;
  assert.equal(s.status!.executionBinding!.managerImage, image);
  assert.deepEqual(
    (await eventsOf(e, sname, 'ApplyOutcomeUnknown')).map((ev) => ev.message),
    [
      `apply ${sclaim.jobName} ran under execution binding epoch ${schemaEpoch}, retired by ${schemaNext}: its result is not read, and a fresh observation decides`,
    ],
  );
  const entries = s.status!.journal!.entries;
  const finished = entries.findIndex((x) => x.type === 'ApplyFinished');
  assert.equal(entries[finished]?.type === 'ApplyFinished' && entries[finished].outcome, 'Unknown');
  assert.ok(
    entries.slice(finished + 1).some((x) => x.type === 'Verified'),
    `a reading after the Apply settles it: ${JSON.stringify(entries)}`,
  );
  const sjob = await e.batch.readNamespacedJob({ namespace: e.namespace, name: sclaim.jobName });
  assert.equal(sjob.spec?.ttlSecondsAfterFinished, 300, 'the retired Job got its cleanup TTL');
  assert.equal((await schemaApplyJobs(sname)).length, 1, 'the Apply Job was never made again');
  assert.equal(statementsIn(e, `${sname}_db`, CHECK_ADDED).length, 1);
  return { migration: m, schema: s };
}

before(async () => {
  if (skip) return;
  env = await startEnvironment({ components: ['node', 'postgres'] });
  const cp = env.controlPlane;
  e = chartE2E(env);
  chart = await installOperatorChart({
    kubeconfig: cp.kubeconfigs.admin,
    imageMapFile: env.description.imageMapFile,
    workDir: env.dir,
    namespace: NS,
    set: ['leaderElection.leaseSeconds=6'],
  });
});

after(async () => {
  if (!skip) await env?.stop();
});

describe('a chart upgrade while Applies of both families run', { skip }, () => {
  it('an upgrade that keeps the execution binding adopts the running Applies and reads their results: one Job each, each statement once', async () => {
    const migrationUrl = await declareMigration('madopt', { '1_slow.sql': SLOW('madopt_a') });
    await declareSchema(e, 'sadopt', {
      existing: EXISTING_ITEMS,
      data: { 'schema.sql': SLOW_CHECK },
      policy: { apply: 'Always' },
    });
    const migration = await migrationApply('madopt');
    const schema = await schemaApply('sadopt');
    // Each resource keeps its own epoch: minted when it first recorded the releases it runs under.
    const epoch = migration.status!.executionBinding!.epoch;
    const schemaEpoch = schema.status!.executionBinding!.epoch;
    const before = (await managerPods()).map((p) => p.metadata!.name!);

    // Only the log level moves: the Pods roll, and every release the execution binding names stays.
    const upgraded = await chart.helm([
      'upgrade',
      chart.release,
      CHART,
      '-n',
      NS,
      '--reuse-values',
      '--wait',
      '--timeout',
      '3m',
      '--set',
      'logLevel=debug',
    ]);
    assert.equal(upgraded.code, 0, upgraded.stderr);
    await eventually('both manager Pods replaced and Ready', () => rolledPast(before), 120_000);
    await assertStillRunning(migration.status!.claim!.jobName);
    await assertStillRunning(schema.status!.claim!.jobName);

    const m = await migrationWhen(
      e,
      'madopt',
      'InSync after its Apply',
      (x) => x.status?.phase === 'InSync' && x.status.claim === undefined,
      180_000,
    );
    assert.equal(m.status!.executionBinding!.epoch, epoch, 'the upgrade kept the execution binding');
    assert.equal(m.status?.lastRun?.outcome, 'Applied', JSON.stringify(m.status?.lastRun));
    assert.deepEqual(m.status?.lastRun?.appliedVersions, ['1']);
    assert.deepEqual(await eventsOf(e, 'madopt', 'ApplyOutcomeUnknown'), [], 'the result was read');
    assert.equal((await migrationJobs('madopt', 'apply')).length, 1, 'the Apply Job was made once');
    assert.deepEqual(await query(migrationUrl, 'SELECT id FROM madopt_a'), [{ id: 1 }]);
    assert.equal(statementsIn(e, 'madopt_db', /INSERT INTO madopt_a/i).length, 1);

    const s = await schemaWhen(
      'sadopt',
      'InSync after its Apply',
      (x) => x.status?.phase === 'InSync' && x.status.claim === undefined,
    );
    assert.equal(s.status!.executionBinding!.epoch, schemaEpoch, 'the upgrade kept the execution binding');
    const entries = s.status!.journal!.entries;
    const finished = entries.find((x) => x.type === 'ApplyFinished');
    assert.equal(
      finished?.type === 'ApplyFinished' && finished.outcome,
      'Succeeded',
      JSON.stringify(entries),
    );
    assert.deepEqual(await eventsOf(e, 'sadopt', 'ApplyOutcomeUnknown'), [], 'the result was read');
    assert.equal((await schemaApplyJobs('sadopt')).length, 1, 'the Apply Job was made once');
    assert.equal(statementsIn(e, 'sadopt_db', CHECK_ADDED).length, 1);
  });

  it('an upgrade to another manager image retires the epoch: the running Applies are waited out, their results never read, and fresh reads settle them', async () => {
    await retiredBy('mretire', 'sretire', () => chart.upgradeImage('rebuilt'));
  });

  it("an upgrade to a build of a newer controller-state version retires the epoch likewise, and the reads after it run as the new build's Jobs", async () => {
    const newer = CONTROLLER_STATE_VERSION + 1;
    const build = stateVersionBuild(env.dir, newer);
    const settled = await retiredBy('mstate', 'sstate', () => chart.upgradeImage('state', { build }));
    assert.equal(settled.migration.status!.executionBinding!.controllerStateVersion, newer);
    assert.equal(settled.schema.status!.executionBinding!.controllerStateVersion, newer);
    // The fresh reads ran as the new build's Jobs, admitted by the policies its chart carries (their literal).
    const reads = (await e.batch.listNamespacedJob({ namespace: e.namespace })).items.filter(
      (j) =>
        j.metadata?.annotations?.[JOB_ANNOTATIONS.controllerStateVersion] === String(newer) &&
        [settled.migration.metadata.name, settled.schema.metadata.name].some(
          (n) =>
            j.metadata?.labels?.[`${API_GROUP}/migration`] === n ||
            j.metadata?.labels?.[`${API_GROUP}/schema`] === n,
        ),
    );
    assert.ok(reads.length >= 2, `a read of each resource by the new build: ${reads.length}`);
  });
});

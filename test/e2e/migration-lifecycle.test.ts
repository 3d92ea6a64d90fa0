// PtahMigration end to end on the local control plane, the same test body on PostgreSQL and on MariaDB: the
// manager process, operation Pods run by the node agent, the real `ptah migrations` in them, and databases
// whose contents and statement logs are the evidence. Databases are prepared with the `ptah` CLI as a person
// would have left them; the resource then reads their history and reaches the verdict it states.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { API_GROUP, API_VERSION, READ_REQUESTED_ANNOTATION } from '../../src/api/meta.ts';
import { UNRESOLVED_RUN_ANNOTATION, type PtahMigration } from '../../src/api/ptah-migration.ts';
import type { PtahMigrationRunAcknowledgment } from '../../src/api/ptah-migration-approval.ts';
import type { PtahMigrationPlan } from '../../src/api/ptah-migration-plan.ts';
import {
  approveMigration,
  at,
  createSecret,
  type E2E,
  eventually,
  getMigration,
  migrationWhen,
  useE2E,
  withSum,
  writeStatusAsManager,
} from './harness.ts';

const { skip, e2e } = useE2E(async () => ({}), { mariadb: true });
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

type Files = Record<string, string>;

interface Engine {
  readonly name: 'postgres' | 'mysql';
  readonly label: string;
  createDatabase(t: E2E, name: string): Promise<string>;
  run(url: string, sql: string): Promise<Record<string, unknown>[]>;
  /**
   * How often the server's statement log holds a text. The raw log: a statement that follows a file's
   * directive comment starts on the log line after the comment.
   */
  logged(t: E2E, text: string): number;
  /** What a statement on a missing table answers. */
  readonly missingTable: { readonly sqlState: string; readonly mysqlErrorNumber?: number };
  /** Takes Ptah's migration lock on a connection of its own; resolves to the release. */
  holdMigrationLock(url: string): Promise<() => Promise<void>>;
  /** Whether some session waits for Ptah's migration lock. */
  lockWaiters(url: string): Promise<number>;
  /** A statement that holds its connection for a long while, and how to kill the session running it. */
  readonly sleep: string;
  killSleeper(url: string): Promise<number>;
}

async function pgRun(url: string, sql: string): Promise<Record<string, unknown>[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql)).rows as Record<string, unknown>[];
  } finally {
    await c.end();
  }
}

async function myRun(url: string, sql: string): Promise<Record<string, unknown>[]> {
  const c = await mysql.createConnection({ uri: url, multipleStatements: true });
  try {
    const [rows] = await c.query(sql);
    return Array.isArray(rows) ? (rows as Record<string, unknown>[]) : [];
  } finally {
    await c.end();
  }
}

const pgLockKey = createHash('sha256')
  .update('ptah:migrations:public.ptah_schema_revisions')
  .digest()
  .readBigInt64BE(0)
  .toString();

const ENGINES: readonly Engine[] = [
  {
    name: 'postgres',
    label: 'PostgreSQL',
    createDatabase: (t, name) => t.env.postgres!.createDatabase(name),
    run: pgRun,
    logged: (t, text) => readFileSync(t.env.postgres!.logFile, 'utf8').split(text).length - 1,
    missingTable: { sqlState: '42P01' },
    sleep: 'SELECT pg_sleep(60)',
    async killSleeper(url) {
      const rows = await pgRun(
        url,
        "SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60)%' AND pid <> pg_backend_pid() AND datname = current_database()",
      );
      return rows.filter((r) => r['killed'] === true).length;
    },
    async holdMigrationLock(url) {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(`SELECT pg_advisory_lock(${pgLockKey}::bigint)`);
      return async () => {
        await c.query(`SELECT pg_advisory_unlock(${pgLockKey}::bigint)`);
        await c.end();
      };
    },
    async lockWaiters(url) {
      const rows = await pgRun(
        url,
        "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
      );
      return Number(rows[0]!['n']);
    },
  },
  {
    name: 'mysql',
    label: 'MariaDB',
    createDatabase: (t, name) => t.env.mariadb!.createDatabase(name),
    run: myRun,
    logged: (t, text) => readFileSync(t.env.mariadb!.logFile, 'utf8').split(text).length - 1,
    missingTable: { sqlState: '42S02', mysqlErrorNumber: 1146 },
    sleep: 'DO SLEEP(60)',
    async killSleeper(url) {
      const rows = await myRun(
        url,
        "SELECT id FROM information_schema.processlist WHERE info LIKE 'DO SLEEP(60)%' AND db = DATABASE()",
      );
      for (const r of rows) await myRun(url, `KILL ${Number(r['id'])}`);
      return rows.length;
    },
    async holdMigrationLock(url) {
      const db = new URL(url).pathname.slice(1);
      const name =
        'ptah:' + createHash('sha256').update(`${db}.ptah_schema_revisions`).digest('hex').slice(0, 40);
      const c = await mysql.createConnection({ uri: url });
      await c.query('SELECT GET_LOCK(?, 10)', [name]);
      return async () => {
        await c.query('SELECT RELEASE_LOCK(?)', [name]);
        await c.end();
      };
    },
    async lockWaiters(url) {
      const rows = await myRun(
        url,
        "SELECT count(*) AS n FROM information_schema.processlist WHERE info LIKE 'SELECT GET_LOCK%' AND state LIKE '%lock%'",
      );
      return Number(rows[0]!['n']);
    },
  },
];

/** Runs `ptah migrations up` from this machine, as a person preparing the database would. */
function ptahUp(url: string, files: Files): { status: number | null; stdout: string } {
  return ptahMigrations(url, ['up'], files);
}

/** Runs `ptah migrations <args>` on a directory of `files`, with the URL in the environment only. */
function ptahMigrations(
  url: string,
  args: readonly string[],
  files: Files,
): { status: number | null; stdout: string } {
  const dir = mkdtempSync(join(tmpdir(), 'ptah-e2e-prep-'));
  try {
    for (const [name, sql] of Object.entries(withSum(files))) writeFileSync(join(dir, name), sql);
    const r = spawnSync(
      process.execPath,
      [join(ROOT, 'bin/ptah.mjs'), 'migrations', ...args, '--dir', dir, '--json'],
      {
        env: { ...process.env, PTAH_DB_URL: url },
        encoding: 'utf8',
      },
    );
    return { status: r.status, stdout: r.stdout };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function declareMigration(
  t: E2E,
  engine: Engine,
  name: string,
  options: { files: Files; policy?: Record<string, unknown>; prepare?: Files; prepareStatus?: number },
): Promise<string> {
  const url = await engine.createDatabase(t, name.replace(/-/g, '_'));
  if (options.prepare !== undefined) {
    const r = ptahUp(url, options.prepare);
    assert.equal(r.status, options.prepareStatus ?? 0, `preparing ${name}: ${r.stdout}`);
  }
  await createSecret(t, `${name}-db`, url);
  const data = withSum(options.files);
  await t.core.createNamespacedConfigMap({
    namespace: t.namespace,
    body: { metadata: { name: `${name}-src` }, data },
  });
  await t.objects.createNamespacedCustomObject({
    ...at(t, 'ptahmigrations'),
    body: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'PtahMigration',
      metadata: { name },
      spec: {
        target: { engine: engine.name, coordinationKey: name, urlFrom: { name: `${name}-db`, key: 'url' } },
        desired: { configMap: { name: `${name}-src`, files: Object.keys(data).map((key) => ({ key })) } },
        policy: options.policy ?? {},
        interval: '10m',
        execution: { failureRetryInterval: '5s', activeDeadlineSeconds: 120 },
      },
    },
  });
  return url;
}

const inPhase = (t: E2E, name: string, phases: string[]) =>
  migrationWhen(t, name, `phase ${phases.join('|')}`, (m) => phases.includes(m.status?.phase ?? ''));

const condition = (m: PtahMigration, type: string) => m.status?.conditions?.find((c) => c.type === type);

async function eventsOf(t: E2E, name: string): Promise<k8s.CoreV1Event[]> {
  return (
    await t.core.listNamespacedEvent({ namespace: t.namespace, fieldSelector: `involvedObject.name=${name}` })
  ).items;
}

async function applyJobs(t: E2E, name: string): Promise<k8s.V1Job[]> {
  const list = await t.batch.listNamespacedJob({
    namespace: t.namespace,
    labelSelector: `${API_GROUP}/migration=${name},${API_GROUP}/operation=apply`,
  });
  return list.items;
}

/** Nothing a database holds, no statement and no credential in status, Events, Job specs or logs. */
async function assertNothingLeaks(
  t: E2E,
  name: string,
  url: string,
  sqlFragments: readonly string[],
): Promise<void> {
  const m = await getMigration(t, name);
  const events = await eventsOf(t, name);
  const text = JSON.stringify(m.status) + JSON.stringify(events.map((e) => e.message));
  const password = decodeURIComponent(new URL(url).password);
  assert.ok(password.length > 0 && !text.includes(password), 'no credential');
  assert.ok(!text.includes(url), 'no URL');
  for (const f of sqlFragments) assert.ok(!text.includes(f), `no SQL text (${f})`);
  for (const job of await t.batch
    .listNamespacedJob({ namespace: t.namespace, labelSelector: `${API_GROUP}/migration=${name}` })
    .then((l) => l.items)) {
    const spec = JSON.stringify(job.spec);
    assert.ok(!spec.includes(password), 'no credential in a Job spec');
    for (const f of sqlFragments) assert.ok(!spec.includes(f), `no SQL text in a Job spec (${f})`);
  }
  // The operation Pods' logs (the runner's bounded stderr and its frame) and the manager's own log, at
  // debug level: what an operator's log pipeline would keep.
  const pods = await t.core.listNamespacedPod({
    namespace: t.namespace,
    labelSelector: `${API_GROUP}/migration=${name}`,
  });
  const logs: string[] = t.managerLogs.map((f) => readFileSync(f, 'utf8'));
  for (const pod of pods.items) {
    for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
      const log = await t.core
        .readNamespacedPodLog({ namespace: t.namespace, name: pod.metadata!.name!, container: c.name })
        .catch(() => '');
      logs.push(String(log));
    }
  }
  assert.ok(pods.items.length > 0, 'the operation Pods are still there to read');
  const logText = logs.join('\n');
  assert.match(logText, /ptah-runner: /, 'the runner logs were read');
  assert.ok(!logText.includes(password), 'no credential in a log');
  assert.ok(!logText.includes(url), 'no URL in a log');
  for (const f of sqlFragments) assert.ok(!logText.includes(f), `no SQL text in a log (${f})`);
}

for (const engine of ENGINES) {
  // Not `pg`: PostgreSQL reserves role names starting with pg_.
  const p = engine.name === 'postgres' ? 'pq' : 'my';
  describe(`PtahMigration on ${engine.label}`, { skip }, () => {
    it('pending versions are planned (no SQL in the plan), approved, applied once and read back InSync', async () => {
      const t = e2e();
      const name = `${p}-apply`;
      const files = {
        '1_orders.sql': `CREATE TABLE ${p}_ap_orders (id int PRIMARY KEY);\n`,
        '2_note.sql': `ALTER TABLE ${p}_ap_orders ADD COLUMN note varchar(40);\n`,
      };
      const url = await declareMigration(t, engine, name, { files });
      const waiting = await inPhase(t, name, ['AwaitingApproval', 'Failed', 'Blocked']);
      assert.equal(waiting.status?.phase, 'AwaitingApproval', JSON.stringify(waiting.status?.conditions));
      assert.equal(waiting.status?.history?.verdict, 'ReadyToPlan');
      assert.equal(waiting.status?.history?.currentVersion, '0');
      assert.equal(waiting.status?.history?.pendingCount, 2);
      const plan = (await t.objects.getNamespacedCustomObject({
        ...at(t, 'ptahmigrationplans'),
        name: waiting.status!.plan!.name,
      })) as PtahMigrationPlan;
      assert.deepEqual(
        plan.spec.migrations.map((m) => [m.version, m.versionKey, m.checksum]),
        [
          ['1', '1', createHash('sha256').update(files['1_orders.sql']).digest('hex')],
          ['2', '2', createHash('sha256').update(files['2_note.sql']).digest('hex')],
        ],
      );
      assert.ok(!JSON.stringify(plan).includes('CREATE TABLE'), 'a migration plan stores no SQL');
      assert.equal(plan.spec.binding.transactionMode, 'unset');
      assert.equal(engine.logged(t, `${p}_ap_orders`), 0, 'reading the history ran nothing');

      await approveMigration(t, waiting, `${name}-ok`);
      const done = await inPhase(t, name, ['InSync', 'Failed', 'Blocked']);
      assert.equal(done.status?.phase, 'InSync', JSON.stringify(done.status?.conditions));
      assert.equal(condition(done, 'Progressing')?.reason, 'HistoryMatched');
      assert.equal(done.status?.lastRun?.outcome, 'Applied');
      assert.deepEqual(done.status?.lastRun?.appliedVersions, ['1', '2']);
      assert.equal(done.status?.history?.currentVersion, '2');
      assert.equal(done.status?.plan, undefined);
      const journal: string[] = done.status?.journal?.entries.map((e) => e.type) ?? [];
      for (const type of ['PlanPublished', 'ApprovalAccepted', 'RunFinished'])
        assert.ok(journal.includes(type), type);
      assert.equal(engine.logged(t, `CREATE TABLE ${p}_ap_orders`), 1, 'applied exactly once');
      assert.equal((await applyJobs(t, name)).length, 1);
      await assertNothingLeaks(t, name, url, ['CREATE TABLE', 'ALTER TABLE']);
    });

    it('reads each verdict from a prepared database: dirty, modified, out of order, ahead, nothing pending', async () => {
      const t = e2e();
      const a = `CREATE TABLE ${p}_v_a (id int);\n`;
      const b = `CREATE TABLE ${p}_v_b (id int);\n`;
      const c = `CREATE TABLE ${p}_v_c (id int);\n`;
      const cases: {
        name: string;
        prepare: Files;
        files: Files;
        prepareStatus?: number;
        phase: string;
        reason?: string;
      }[] = [
        {
          name: `${p}-insync`,
          prepare: { '1_a.sql': a.replace('_a', '_i') },
          files: { '1_a.sql': a.replace('_a', '_i') },
          phase: 'InSync',
        },
        {
          name: `${p}-modified`,
          prepare: { '1_a.sql': a.replace('_a', '_m') },
          files: { '1_a.sql': `${a.replace('_a', '_m')}-- edited\n` },
          phase: 'Blocked',
          reason: 'HistoryModified',
        },
        {
          name: `${p}-order`,
          prepare: { '1_a.sql': a.replace('_a', '_o1'), '3_c.sql': c.replace('_c', '_o3') },
          files: {
            '1_a.sql': a.replace('_a', '_o1'),
            '2_b.sql': b.replace('_b', '_o2'),
            '3_c.sql': c.replace('_c', '_o3'),
          },
          phase: 'Blocked',
          reason: 'HistoryOutOfOrder',
        },
        {
          name: `${p}-ahead`,
          prepare: { '1_a.sql': a.replace('_a', '_h1'), '3_c.sql': c.replace('_c', '_h3') },
          files: { '1_a.sql': a.replace('_a', '_h1') },
          phase: 'Blocked',
          reason: 'HistoryAhead',
        },
        {
          name: `${p}-dirty`,
          prepare: {
            '1_a.sql': a.replace('_a', '_d1'),
            '2_b.sql': `-- ptah:txmode none\n${b.replace('_b', '_d2')}INSERT INTO ${p}_nowhere VALUES (1);\n`,
          },
          files: {
            '1_a.sql': a.replace('_a', '_d1'),
            '2_b.sql': `-- ptah:txmode none\n${b.replace('_b', '_d2')}INSERT INTO ${p}_nowhere VALUES (1);\n`,
          },
          prepareStatus: 5,
          phase: 'Blocked',
          reason: 'HistoryDirty',
        },
      ];
      for (const k of cases)
        await declareMigration(t, engine, k.name, {
          files: k.files,
          prepare: k.prepare,
          ...(k.prepareStatus !== undefined ? { prepareStatus: k.prepareStatus } : {}),
        });
      for (const k of cases) {
        const m = await inPhase(t, k.name, ['InSync', 'Blocked', 'Failed', 'AwaitingApproval']);
        assert.equal(m.status?.phase, k.phase, `${k.name}: ${JSON.stringify(m.status?.conditions)}`);
        if (k.reason !== undefined) {
          assert.equal(condition(m, 'Blocked')?.reason, k.reason, k.name);
          assert.equal(condition(m, 'Progressing')?.reason, k.reason, k.name);
          assert.equal(m.status?.plan, undefined, `${k.name} plans nothing`);
        }
        assert.equal((await applyJobs(t, k.name)).length, 0, `${k.name} applied nothing`);
      }
    });

    it('a history restored backwards after the approval is refused under the lock before any statement', async () => {
      const t = e2e();
      const name = `${p}-backwards`;
      const files = {
        '1_a.sql': `CREATE TABLE ${p}_bw_a (id int);\n`,
        '2_b.sql': `CREATE TABLE ${p}_bw_b (id int);\n`,
      };
      const url = await declareMigration(t, engine, name, {
        files,
        prepare: { '1_a.sql': files['1_a.sql'] },
      });
      const waiting = await inPhase(t, name, ['AwaitingApproval', 'Failed', 'Blocked']);
      assert.equal(waiting.status?.phase, 'AwaitingApproval', JSON.stringify(waiting.status?.conditions));
      assert.equal(waiting.status?.history?.currentVersion, '1');
      // The Apply will wait for Ptah's migration lock; meanwhile the database goes back to before version 1.
      const release = await engine.holdMigrationLock(url);
      try {
        await approveMigration(t, waiting, `${name}-ok`);
        await eventually(`${name}: the apply waits for the migration lock`, async () =>
          (await engine.lockWaiters(url)) > 0 ? true : undefined,
        );
        await engine.run(url, `DROP TABLE ${p}_bw_a`);
        await engine.run(url, 'DELETE FROM ptah_schema_revisions');
      } finally {
        await release();
      }
      const failed = await inPhase(t, name, ['Failed', 'InSync', 'Blocked']);
      assert.equal(failed.status?.phase, 'Failed', JSON.stringify(failed.status?.conditions));
      assert.match(
        condition(failed, 'ReconciliationFailed')?.reason ?? '',
        /^(SequenceMismatch|HistoryMismatch)$/,
      );
      assert.equal(failed.status?.lastRun?.outcome, 'Failed');
      assert.equal(failed.status?.lastRun?.appliedVersions, undefined);
      assert.equal(failed.status?.unresolvedRun, undefined, 'nothing ran, nothing latched');
      assert.equal(engine.logged(t, `CREATE TABLE ${p}_bw_b`), 0, 'no statement of the plan ran');
    });

    it('a none-mode file failing after its first statement latches Partial → Blocked, is not retried, survives a restore, and is released by a stamped acknowledgment', async () => {
      const t = e2e();
      const name = `${p}-partial`;
      const files = {
        '1_a.sql': `CREATE TABLE ${p}_pa_a (id int);\n`,
        '2_b.sql': `-- ptah:txmode none\nCREATE TABLE ${p}_pa_b (id int);\nINSERT INTO ${p}_pa_missing VALUES (1);\n`,
      };
      const url = await declareMigration(t, engine, name, { files, policy: { apply: 'Always' } });
      const blocked = await migrationWhen(
        t,
        name,
        'the run latched',
        (m) => m.status?.unresolvedRun !== undefined,
      );
      const latched = await inPhase(t, name, ['Blocked']);
      assert.equal(condition(latched, 'Blocked')?.reason, 'ApplyOutcomeUnknown');
      const run = latched.status!.unresolvedRun!;
      assert.equal(run.outcome, 'Partial');
      assert.equal(latched.status?.lastRun?.outcome, 'Partial');
      assert.deepEqual(latched.status?.lastRun?.appliedVersions, ['1']);
      assert.deepEqual(latched.status?.lastRun?.failure, {
        version: '2',
        statementPosition: 2,
        ...engine.missingTable,
      });
      assert.deepEqual(JSON.parse(latched.metadata.annotations?.[UNRESOLVED_RUN_ANNOTATION] ?? '{}'), run);
      assert.equal(blocked.status?.unresolvedRun?.operationId, run.operationId);
      await assertNothingLeaks(t, name, url, ['CREATE TABLE', 'INSERT INTO']);

      // A read now: the history is dirty and the run stays unresolved; nothing is retried.
      const requested = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      await t.objects.patchNamespacedCustomObject(
        {
          ...at(t, 'ptahmigrations'),
          name,
          body: { metadata: { annotations: { [READ_REQUESTED_ANNOTATION]: requested } } },
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
      const reread = await migrationWhen(
        t,
        name,
        'the read request answered by a fresh read',
        (m) =>
          m.status?.lastReadRequest === requested &&
          m.status?.claim === undefined &&
          m.status?.history?.observedAt !== latched.status?.history?.observedAt,
      );
      assert.equal(reread.status?.phase, 'Blocked');
      assert.equal(reread.status?.history?.verdict, 'Dirty');
      assert.equal(reread.status?.unresolvedRun?.operationId, run.operationId);
      assert.equal((await applyJobs(t, name)).length, 1, 'never retried');
      assert.equal(engine.logged(t, `CREATE TABLE ${p}_pa_b`), 1, 'no statement twice');

      // A restore that drops status but keeps the annotation brings the run back. The status guard admits
      // a status write from the manager's ServiceAccount alone, so the dropped status is written with it.
      await writeStatusAsManager<PtahMigration>(t, 'ptahmigrations', name, () => ({}));
      const restored = await migrationWhen(
        t,
        name,
        'the run restored from the annotation',
        (m) => m.status?.unresolvedRun !== undefined,
      );
      assert.equal(restored.status?.unresolvedRun?.operationId, run.operationId);
      await eventually(`${name}: UnresolvedRunRestored`, async () =>
        (await eventsOf(t, name)).some((e) => e.reason === 'UnresolvedRunRestored' && e.type === 'Warning')
          ? true
          : undefined,
      );

      // A person settles it; the identity is stamped by admission whatever the client wrote.
      const ack = (await t.approver.makeApiClient(k8s.CustomObjectsApi).createNamespacedCustomObject({
        ...at(t, 'ptahmigrationrunacknowledgments'),
        body: {
          apiVersion: `${API_GROUP}/${API_VERSION}`,
          kind: 'PtahMigrationRunAcknowledgment',
          metadata: { name: `${name}-ack` },
          spec: {
            migrationRef: { name, uid: restored.metadata.uid },
            operationId: run.operationId,
            acknowledgedBy: { username: 'mallory', groups: ['system:masters'] },
          },
        },
      })) as PtahMigrationRunAcknowledgment;
      assert.equal(ack.spec.acknowledgedBy?.username, t.env.controlPlane.identities.approver);
      const settled = await migrationWhen(
        t,
        name,
        'the run acknowledged',
        (m) => m.status?.resolvedRun?.operationId === run.operationId,
      );
      assert.equal(settled.status?.resolvedRun?.resolution, 'Acknowledged');
      assert.equal(
        settled.status?.resolvedRun?.acknowledgedBy?.username,
        t.env.controlPlane.identities.approver,
      );
      const after = await migrationWhen(
        t,
        name,
        'the annotation removed and the history read again',
        (m) =>
          m.status?.unresolvedRun === undefined &&
          m.metadata.annotations?.[UNRESOLVED_RUN_ANNOTATION] === undefined &&
          m.status?.phase === 'Blocked' &&
          condition(m, 'Blocked')?.reason === 'HistoryDirty',
      );
      assert.ok(after.status?.journal?.entries.some((e) => e.type === 'RunAcknowledged'));
      assert.equal((await applyJobs(t, name)).length, 1, 'the dirty history still applies nothing');
    });

    it('an Unknown outcome (the connection killed mid-run) is released by a history read that shows nothing pending', async () => {
      const t = e2e();
      const name = `${p}-unknown`;
      const files = {
        '1_a.sql': `CREATE TABLE ${p}_un_a (id int);\n`,
        '2_b.sql': `-- ptah:txmode none\nCREATE TABLE ${p}_un_b (id int);\n${engine.sleep};\n`,
      };
      const url = await declareMigration(t, engine, name, { files, policy: { apply: 'Always' } });
      await eventually(
        `${name}: the run sleeps`,
        async () => ((await engine.killSleeper(url)) > 0 ? true : undefined),
        150_000,
      );
      const latched = await migrationWhen(
        t,
        name,
        'the run latched',
        (m) => m.status?.unresolvedRun !== undefined,
      );
      assert.equal(latched.status?.unresolvedRun?.outcome, 'Unknown');
      const blocked = await inPhase(t, name, ['Blocked']);
      assert.equal(condition(blocked, 'Blocked')?.reason, 'ApplyOutcomeUnknown');

      // The person finishes version 2 by hand and records it; a read then shows nothing pending.
      const repaired = ptahMigrations(url, ['repair', '--mark-applied', '--yes'], files);
      assert.equal(repaired.status, 0, repaired.stdout);
      const requested = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      await t.objects.patchNamespacedCustomObject(
        {
          ...at(t, 'ptahmigrations'),
          name,
          body: { metadata: { annotations: { [READ_REQUESTED_ANNOTATION]: requested } } },
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
      const settled = await migrationWhen(
        t,
        name,
        'settled by the history',
        (m) => m.status?.resolvedRun !== undefined && m.status.phase === 'InSync',
      );
      assert.equal(settled.status?.resolvedRun?.resolution, 'HistoryRead');
      assert.equal(settled.status?.resolvedRun?.outcome, 'Unknown');
      assert.equal(settled.status?.unresolvedRun, undefined);
      await migrationWhen(
        t,
        name,
        'the annotation removed',
        (m) => m.metadata.annotations?.[UNRESOLVED_RUN_ANNOTATION] === undefined,
      );
      assert.equal((await applyJobs(t, name)).length, 1, 'never retried');
      assert.equal(engine.logged(t, `CREATE TABLE ${p}_un_b`), 1, 'no statement twice');
    });

    it('the manager killed right after creating the Apply Job resumes with one Job and no statement twice', async () => {
      const t = e2e();
      const name = `${p}-crash`;
      await t.manager?.stop(5_000);
      const crashing = await t.startManager({ PTAH_TEST_CRASH_AFTER_JOB_CREATE: `apply@${name}` });
      const files = { '1_a.sql': `CREATE TABLE ${p}_cr_a (id int);\n` };
      await declareMigration(t, engine, name, { files, policy: { apply: 'Always' } });
      await eventually(
        `${name}: the manager died after the create`,
        async () => (crashing.exited() ? true : undefined),
        150_000,
      );
      await t.startManager();
      const done = await inPhase(t, name, ['InSync', 'Blocked', 'Failed']);
      assert.equal(done.status?.phase, 'InSync', JSON.stringify(done.status));
      assert.equal(done.status?.lastRun?.outcome, 'Applied');
      assert.equal((await applyJobs(t, name)).length, 1, 'one Job');
      assert.equal(engine.logged(t, `CREATE TABLE ${p}_cr_a`), 1, 'no statement twice');
    });
  });
}

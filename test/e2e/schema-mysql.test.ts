// PtahSchema with engine: mysql end to end, on the MariaDB that runs here (the same engine family): the
// manager process, operation Pods run by the node agent, and a real MariaDB whose contents and general
// query log are the evidence. MySQL commits DDL as it runs, so an Apply that fails part-way has an unknown
// outcome: it is never replayed, and the resource learns the database's state by reading it. The server's
// product and release are recorded in status; MariaDB's errors reach status as classified causes (errno,
// SQLSTATE, never the server's text) and clear on recovery.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import type { PtahSchema } from '../../src/api/ptah-schema.ts';
import {
  createApproval,
  createSchema,
  createSecret,
  createSource,
  dumpDebug,
  type E2E,
  eventsOf,
  eventsOnceRecorded,
  eventually,
  getSchema,
  operationJobs,
  useE2E,
  waitForPhase,
} from './harness.ts';

const { skip, e2e } = useE2E(async () => ({}), { mariadb: true });

async function run(url: string, sql: string): Promise<Record<string, unknown>[]> {
  const u = new URL(url);
  const conn = await mysql.createConnection({
    host: u.hostname,
    port: Number(u.port),
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
    database: u.pathname.slice(1),
    multipleStatements: true,
  });
  try {
    const [rows] = await conn.query(sql);
    return Array.isArray(rows) ? (rows as Record<string, unknown>[]) : [];
  } finally {
    await conn.end();
  }
}

/** Database `<name>_db` on MariaDB holding `existing`, its URL in Secret `<name>-db`, the source, the resource. */
async function declareMysqlSchema(
  t: E2E,
  name: string,
  options: { sql: string; existing?: string; policy?: Record<string, unknown> },
): Promise<string> {
  const url = await t.env.mariadb!.createDatabase(`${name}_db`);
  if (options.existing !== undefined) await run(url, options.existing);
  await createSecret(t, `${name}-db`, url);
  await createSource(t, `${name}-src`, { 'schema.sql': options.sql });
  await createSchema(t, name, {
    source: `${name}-src`,
    secret: `${name}-db`,
    engine: 'mysql',
    ...(options.policy ? { policy: options.policy } : {}),
  });
  return url;
}

/** Statements from MariaDB's general log that match; table names are unique per test, so they say whose. */
function logged(t: E2E, pattern: RegExp): string[] {
  return t.env
    .mariadb!.statements()
    .map((s) => s.sql)
    .filter((sql) => pattern.test(sql));
}

async function approve(t: E2E, name: string, approval: string): Promise<void> {
  const waiting = await waitForPhase(t, name, ['AwaitingApproval', 'Failed', 'Blocked']);
  if (waiting.status?.phase !== 'AwaitingApproval') await dumpDebug(t, name);
  assert.equal(waiting.status?.phase, 'AwaitingApproval', JSON.stringify(waiting.status?.conditions));
  const plan = waiting.status!.plan!;
  await createApproval(t, approval, {
    schema: { name, uid: waiting.metadata.uid! },
    plan: { name: plan.name, uid: plan.uid },
    fingerprint: plan.fingerprint,
  });
}

describe('PtahSchema with engine mysql on MariaDB', { skip }, () => {
  it('from a ConfigMap reaches InSync after approval; MariaDB holds the declared tables and rows', async () => {
    const url = await declareMysqlSchema(e2e(), 'shop', {
      sql: `
CREATE TABLE shop_status (code varchar(16) NOT NULL PRIMARY KEY, label varchar(64) NOT NULL) ENGINE=InnoDB;
CREATE TABLE shop_orders (
  id bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY,
  state varchar(16) NOT NULL,
  CONSTRAINT fk_status FOREIGN KEY (state) REFERENCES shop_status (code)
) ENGINE=InnoDB;
INSERT INTO shop_status (code, label) VALUES ('new', 'New'), ('paid', 'Paid');
`,
    });
    await approve(e2e(), 'shop', 'shop-approval');
    const done = await waitForPhase(e2e(), 'shop', ['InSync', 'Failed', 'Blocked']);
    if (done.status?.phase !== 'InSync') await dumpDebug(e2e(), 'shop');
    assert.equal(done.status?.phase, 'InSync', JSON.stringify(done.status?.conditions));
    // MariaDB is accepted as the mysql engine family, and the release it runs is recorded.
    assert.equal(done.status?.target?.engine, 'mysql');
    assert.equal(done.status?.target?.server?.product, 'MariaDB');
    assert.match(done.status?.target?.server?.version ?? '', /^10\.11\.\d+$/);

    const tables = await run(
      url,
      'SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY 1',
    );
    assert.deepEqual(
      tables.map((r) => r['t']),
      ['shop_orders', 'shop_status'],
    );
    assert.deepEqual(await run(url, 'SELECT code, label FROM shop_status ORDER BY code'), [
      { code: 'new', label: 'New' },
      { code: 'paid', label: 'Paid' },
    ]);
    const fks = await run(
      url,
      `SELECT constraint_name AS c FROM information_schema.referential_constraints
        WHERE constraint_schema = DATABASE()`,
    );
    assert.deepEqual(
      fks.map((r) => r['c']),
      ['fk_status'],
    );
    assert.equal(logged(e2e(), /CREATE TABLE `shop_orders`/).length, 1, 'created exactly once');
    assert.equal((await operationJobs(e2e(), 'shop', 'apply')).length, 1);
    const journal = done.status?.journal?.entries ?? [];
    assert.deepEqual(
      journal.filter((e) => e.type === 'ApplyFinished').map((e) => e.outcome),
      ['Succeeded'],
    );
    assert.ok(journal.some((e) => e.type === 'Verified' && e.outcome === 'InSync'));
  });

  it('a statement refused in the middle of an Apply is an unknown outcome, never replayed, proven by reading', async () => {
    // Declared rows are not part of the plan's fingerprint, so the engine plans the unique key; the server
    // refuses it at statement 2 (duplicate values), after statement 1 (a new table) committed on its own.
    const url = await declareMysqlSchema(e2e(), 'split', {
      existing: `CREATE TABLE split_items (id int NOT NULL PRIMARY KEY, sku int NOT NULL) ENGINE=InnoDB;
        INSERT INTO split_items VALUES (1, 7), (2, 7);`,
      sql: `
CREATE TABLE split_items (id int NOT NULL PRIMARY KEY, sku int NOT NULL, UNIQUE KEY uq_sku (sku)) ENGINE=InnoDB;
CREATE TABLE split_extra (id int NOT NULL PRIMARY KEY) ENGINE=InnoDB;
`,
    });
    await approve(e2e(), 'split', 'split-approval');
    const s = await eventually(
      'the apply ends and its proof has read the database',
      async () => {
        const r = await getSchema(e2e(), 'split');
        const entries = r.status?.journal?.entries ?? [];
        return entries.some((e) => e.type === 'ApplyFinished') &&
          entries.some((e) => e.type === 'Verified') &&
          r.status?.claim === undefined
          ? r
          : undefined;
      },
      150_000,
    ).catch(async (error: unknown) => {
      await dumpDebug(e2e(), 'split');
      throw error;
    });
    const entries = s.status?.journal?.entries ?? [];
    assert.deepEqual(
      entries.filter((e) => e.type === 'ApplyFinished').map((e) => e.outcome),
      ['Unknown'],
      JSON.stringify(entries),
    );
    assert.ok(
      !entries.some((e) => e.type === 'Verified' && e.outcome === 'InSync'),
      'the database does not hold the declared schema, and the proof says so',
    );
    const unknown = await eventsOnceRecorded(e2e(), 'split', 'ApplyOutcomeUnknown');
    assert.ok(unknown.length >= 1, 'the unknown outcome is reported as an Event');
    assert.match(
      unknown.map((e) => e.message).join('\n'),
      /partially: statement 2 failed \(error 1062, SQLSTATE 23000\) after 1 statement\(s\) committed on their own/,
      'the Event names the failing statement, its errno and SQLSTATE',
    );

    // Never replayed: one apply Job, each statement of the plan ran once.
    assert.equal((await operationJobs(e2e(), 'split', 'apply')).length, 1, 'exactly one apply Job');
    assert.equal(logged(e2e(), /CREATE TABLE `split_extra`/).length, 1, 'statement 1 ran once');
    assert.equal(logged(e2e(), /CREATE UNIQUE INDEX `uq_sku`/).length, 1, 'statement 2 ran once');

    // The proof read the database: an Observe after the apply, and the state it found is the real one.
    const applyJob = (await operationJobs(e2e(), 'split', 'apply'))[0]!;
    const appliedAt = new Date(applyJob.metadata!.creationTimestamp!).getTime();
    const proofs = (await operationJobs(e2e(), 'split', 'observe')).filter(
      (j) => new Date(j.metadata!.creationTimestamp!).getTime() >= appliedAt,
    );
    assert.ok(proofs.length >= 1, 'a proof Observe ran after the apply');
    const tables = await run(
      url,
      'SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY 1',
    );
    assert.deepEqual(
      tables.map((r) => r['t']),
      ['split_extra', 'split_items'],
      'statement 1 committed; nothing rolled it back',
    );
    const indexes = await run(
      url,
      "SELECT index_name AS i FROM information_schema.statistics WHERE table_name = 'split_items'",
    );
    assert.deepEqual(
      indexes.map((r) => r['i']),
      ['PRIMARY'],
    );
    // Whatever comes next is a new plan from the state read, never the old one dispatched again.
    const later = await getSchema(e2e(), 'split');
    assert.notEqual(later.status?.phase, 'InSync');
  });

  it('a refused password on MariaDB is DatabaseAuthenticationFailed naming errno 1045, never the URL; the right one recovers', async () => {
    const url = await e2e().env.mariadb!.createDatabase('mypass_db');
    const wrong = new URL(url);
    wrong.password = 'not-the-password';
    const failed = await failingMysqlSchema('mypass', wrong.toString());
    await assertCause(
      failed,
      'DatabaseAuthenticationFailed',
      /MySQL error 1045 ER_ACCESS_DENIED_ERROR, SQLSTATE 28000/,
    );
    assert.equal(condition(failed, 'DatabaseReachable')?.status, 'False');
    assert.equal(condition(failed, 'DatabaseReachable')?.reason, 'DatabaseAuthenticationFailed');
    const text = JSON.stringify(failed.status);
    assert.ok(
      !text.includes('not-the-password') && !text.includes('Access denied'),
      'no credential, no server text',
    );
    await replaceSecret('mypass-db', url);
    await recovered('mypass');
  });

  it('a database the user has no grant on is DatabasePermissionDenied naming errno 1044; its own database recovers', async () => {
    // MariaDB does not say whether a database it refuses exists: without a grant on it, the answer is 1044.
    const url = await e2e().env.mariadb!.createDatabase('mygrant_db');
    const other = new URL(url);
    other.pathname = '/absent_db';
    const failed = await failingMysqlSchema('mygrant', other.toString());
    await assertCause(
      failed,
      'DatabasePermissionDenied',
      /MySQL error 1044 ER_DBACCESS_DENIED_ERROR, SQLSTATE 42000/,
    );
    assert.ok(!JSON.stringify(failed.status).includes('absent_db'), 'no server text naming the database');
    await replaceSecret('mygrant-db', url);
    await recovered('mygrant');
  });

  it('desired MySQL that does not parse is DesiredStateInvalid with file:line:column; MariaDB is not called unreachable', async () => {
    const url = await e2e().env.mariadb!.createDatabase('mysyntax_db');
    const failed = await failingMysqlSchema(
      'mysyntax',
      url,
      'CREATE TABLE ok_t (id int PRIMARY KEY);\nCREATE TABL oops (id int);\n',
    );
    await assertCause(failed, 'DesiredStateInvalid', /the desired state does not load: schema\.sql:2:\d+: /);
    assert.notEqual(condition(failed, 'DatabaseReachable')?.status, 'False');
  });
});

const CAUSE_TABLE = 'CREATE TABLE cause_items (id bigint PRIMARY KEY);\n';

function condition(s: PtahSchema, type: string) {
  return s.status?.conditions?.find((c) => c.type === type);
}

/** Source, Secret and schema (engine mysql, policy Always); waits until its first operation fails. */
async function failingMysqlSchema(name: string, url: string, sql = CAUSE_TABLE): Promise<PtahSchema> {
  await createSource(e2e(), `${name}-src`, { 'schema.sql': sql });
  await createSecret(e2e(), `${name}-db`, url);
  await createSchema(e2e(), name, {
    source: `${name}-src`,
    secret: `${name}-db`,
    engine: 'mysql',
    policy: { apply: 'Always' },
  });
  const settled = await waitForPhase(e2e(), name, ['Failed', 'InSync', 'Blocked'], 120_000);
  if (settled.status?.phase !== 'Failed') await dumpDebug(e2e(), name);
  assert.equal(settled.status?.phase, 'Failed', JSON.stringify(settled.status?.conditions));
  return settled;
}

/** The cause is the condition's reason, its message matches, and the Warning Event says the same. */
async function assertCause(s: PtahSchema, reason: string, message: RegExp): Promise<void> {
  const failed = condition(s, 'ReconciliationFailed');
  assert.equal(failed?.status, 'True');
  assert.equal(failed?.reason, reason, failed?.message);
  assert.match(failed?.message ?? '', message);
  const events = await eventually(
    `a ${reason} Event on ${s.metadata!.name}`,
    async () => {
      const list = await eventsOf(e2e(), s.metadata!.name!, reason);
      return list.length > 0 ? list : undefined;
    },
    30_000,
  );
  assert.equal(events[0]!.type, 'Warning');
  assert.match(events[0]!.message ?? '', message);
}

async function replaceSecret(name: string, url: string): Promise<void> {
  await e2e().core.replaceNamespacedSecret({
    name,
    namespace: e2e().namespace,
    body: { metadata: { name }, stringData: { url } },
  });
}

async function recovered(name: string): Promise<void> {
  const s = await waitForPhase(e2e(), name, ['InSync'], 180_000);
  const after = condition(s, 'ReconciliationFailed');
  assert.equal(after?.status, 'False', JSON.stringify(after));
  assert.equal(after?.reason, 'Succeeded');
}

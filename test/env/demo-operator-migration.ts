/**
 * The demo's migration act, after the schema's worked example and on the same installed operator:
 *   the ordinary user hands the operator a versioned migration directory (two files and the ptah.sum
 *   `ptah migrations hash` writes) in a ConfigMap, for a fresh PostgreSQL database of its own, with a
 *   PtahMigration (apply: OnApproval); the manager reads the history and publishes the plan (the sequence
 *   of versions and checksums it binds, no SQL); the approver approves exactly that plan; the manager
 *   applies it under the realm Lease, reads the history again and reports InSync. The revision table and
 *   the journal are printed at the end.
 */
import * as k8s from '@kubernetes/client-node';
import pg from 'pg';
import { API_GROUP, API_VERSION } from '../../src/api/meta.ts';
import type { PtahMigration } from '../../src/api/ptah-migration.ts';
import type { PtahMigrationApproval } from '../../src/api/ptah-migration-approval.ts';
import type { PtahMigrationPlan } from '../../src/api/ptah-migration-plan.ts';
import { withSum } from './migration-files.ts';
import { waitFor, WaitAborted, type InstalledOperator } from './demo-operator-install.ts';
import { explainStop, printJournal, type ProgressPrinter } from './demo-operator-view.ts';
import type { EnvironmentDescription } from './environment.ts';

const MIGRATIONS: Readonly<Record<string, string>> = {
  '1_orders.sql': `-- The shop's orders, one row per checkout.
CREATE TABLE public.orders (
  id bigint PRIMARY KEY,
  placed_at timestamptz NOT NULL DEFAULT now()
);
`,
  '2_order_status.sql': `-- Orders gain a status; every existing order is 'placed'.
ALTER TABLE public.orders ADD COLUMN status text NOT NULL DEFAULT 'placed';
CREATE INDEX orders_status_idx ON public.orders (status);
`,
};

const MILESTONE_TIMEOUT_MS = 180_000;

export interface MigrationActContext {
  readonly description: EnvironmentDescription;
  readonly operator: InstalledOperator;
  readonly runId: string;
  readonly progress: ProgressPrinter;
  /** Creates a database with a login role of its own and returns its URL (kept in memory only). */
  createDatabase(adminUrl: string, name: string): Promise<string>;
  /** Strings the demo must never print, gathered as they are made. */
  readonly secrets: string[];
  section(title: string): void;
  kubeconfig(file: string): k8s.KubeConfig;
}

const at = (namespace: string, plural: string) => ({
  group: API_GROUP,
  version: API_VERSION,
  namespace,
  plural,
});

async function watchMigration(
  ctx: MigrationActContext,
  objects: k8s.CustomObjectsApi,
  name: string,
  milestone: string,
  done: (m: PtahMigration) => boolean,
): Promise<PtahMigration> {
  let last: PtahMigration | undefined;
  try {
    return await waitFor(
      `PtahMigration ${name} to reach ${milestone}`,
      async () => {
        const down = await ctx.operator.problem();
        if (down) throw new WaitAborted(`the manager is not running: ${down}`);
        const m = (await objects.getNamespacedCustomObject({
          ...at(ctx.description.testNamespace, 'ptahmigrations'),
          name,
        })) as PtahMigration;
        last = m;
        ctx.progress.observe(m);
        if (done(m)) return m;
        if (m.status?.phase === 'Blocked' || m.status?.phase === 'Failed')
          throw new WaitAborted(`PtahMigration ${name} is ${m.status.phase}: ${explainStop(m)}`);
        return undefined;
      },
      MILESTONE_TIMEOUT_MS,
      500,
    );
  } catch (error) {
    const why = last ? explainStop(last) : '';
    throw new Error(
      `${(error as Error).message}; last seen in phase ${last?.status?.phase ?? 'no status'} (${why})`,
      { cause: error },
    );
  }
}

export async function migrationAct(ctx: MigrationActContext): Promise<void> {
  const { description, runId } = ctx;
  const namespace = description.testNamespace;
  const user = ctx.kubeconfig(description.kubeconfigs.user);
  const userObjects = user.makeApiClient(k8s.CustomObjectsApi);
  const userCore = user.makeApiClient(k8s.CoreV1Api);
  const names = {
    database: `orders_${runId}`,
    secret: `orders-${runId}-db`,
    source: `orders-${runId}-migrations`,
    migration: `orders-${runId}`,
    approval: `orders-${runId}-approval`,
  };

  ctx.section(`the ordinary user (${description.identities.user}) declares versioned migrations`);
  const url = await ctx.createDatabase(description.postgres!.adminUrl, names.database);
  ctx.secrets.push(url, new URL(url).password);
  console.log(`postgres: created database ${names.database} with its own login role`);
  await userCore.createNamespacedSecret({
    namespace,
    body: { metadata: { name: names.secret }, stringData: { url } },
  });
  const data = withSum(MIGRATIONS);
  await userCore.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: names.source }, data },
  });
  console.log(`created ConfigMap ${namespace}/${names.source}: ${Object.keys(data).join(', ')}`);
  for (const [file, sql] of Object.entries(MIGRATIONS)) {
    console.log(`  ${file}:`);
    console.log(sql.trimEnd().replace(/^/gm, '  | '));
  }
  await userObjects.createNamespacedCustomObject({
    ...at(namespace, 'ptahmigrations'),
    body: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'PtahMigration',
      metadata: { name: names.migration },
      spec: {
        target: {
          engine: 'postgres',
          coordinationKey: names.database,
          urlFrom: { name: names.secret, key: 'url' },
        },
        desired: { configMap: { name: names.source, files: Object.keys(data).map((key) => ({ key })) } },
        policy: { apply: 'OnApproval' },
        interval: '10m',
        execution: { failureRetryInterval: '10s', activeDeadlineSeconds: 120 },
      },
    },
  });
  console.log(`created PtahMigration ${namespace}/${names.migration} (policy.apply OnApproval)`);

  ctx.section('the manager reads the history and publishes a plan');
  const waiting = await watchMigration(
    ctx,
    userObjects,
    names.migration,
    'AwaitingApproval',
    (m) => m.status?.phase === 'AwaitingApproval',
  );
  const current = waiting.status!.plan!;
  const plan = (await userObjects.getNamespacedCustomObject({
    ...at(namespace, 'ptahmigrationplans'),
    name: current.name,
  })) as PtahMigrationPlan;
  console.log(
    `history: ${waiting.status?.history?.verdict}, current version ${waiting.status?.history?.currentVersion ?? 0}, ` +
      `${waiting.status?.history?.pendingCount ?? 0} pending`,
  );
  console.log(`plan ${current.name}, fingerprint ${plan.spec.fingerprint}; the sequence it binds (no SQL):`);
  for (const m of plan.spec.migrations)
    console.log(`  version ${m.version} ${m.description.padEnd(14)} ${m.checksum} tx=${m.transactionMode}`);

  ctx.section(`the approver (${description.identities.approver}) approves exactly this plan`);
  const approverObjects = ctx
    .kubeconfig(description.kubeconfigs.approver)
    .makeApiClient(k8s.CustomObjectsApi);
  const stored = (await approverObjects.createNamespacedCustomObject({
    ...at(namespace, 'ptahmigrationapprovals'),
    body: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'PtahMigrationApproval',
      metadata: { name: names.approval },
      spec: {
        migrationRef: { name: names.migration, uid: waiting.metadata.uid! },
        planRef: { name: current.name, uid: current.uid },
        planFingerprint: current.fingerprint,
      },
    },
  })) as PtahMigrationApproval;
  if (stored.spec.approver?.username !== description.identities.approver) {
    throw new Error(
      `admission did not stamp the approver: the stored approval names ${stored.spec.approver?.username ?? 'nobody'}`,
    );
  }
  console.log(
    `admission stamped it: approver ${stored.spec.approver.username}, approvedAt ${stored.spec.approvedAt}`,
  );

  ctx.section('the manager applies the sequence under the realm Lease and reads the history again');
  const synced = await watchMigration(
    ctx,
    userObjects,
    names.migration,
    'InSync',
    (m) => m.status?.phase === 'InSync',
  );
  const run = synced.status?.lastRun;
  if (run?.outcome !== 'Applied' || run.planRef?.uid !== current.uid) {
    throw new Error(
      `InSync, but the last run is ${run?.outcome ?? 'missing'} of plan ${run?.planRef?.name ?? 'none'}, not ${current.name}`,
    );
  }
  console.log(
    `last run: ${run.outcome}, applied versions ${(run.appliedVersions ?? []).join(', ')}; ` +
      `history ${synced.status?.history?.verdict}, current version ${synced.status?.history?.currentVersion}`,
  );

  ctx.section(`database ${names.database}, read with pg as its owner`);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const columns = await client.query<{ column_name: string; data_type: string }>(
      "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'orders' ORDER BY ordinal_position",
    );
    console.log(`  orders(${columns.rows.map((r) => `${r.column_name} ${r.data_type}`).join(', ')})`);
  } finally {
    await client.end();
  }

  ctx.section(`the journal of PtahMigration ${names.migration} (status.journal)`);
  printJournal(synced);
}

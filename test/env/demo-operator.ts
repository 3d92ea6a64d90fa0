/**
 * The demo's second act, the operator's worked example, run as people would run it:
 *   the cluster admin installs the operator with `helm install` of deploy/helm/ptah-operator (the manager
 *   runs as the Deployment's two Pods on the node agent) and binds the people's ClusterRoles;
 *   the ordinary user declares a schema for a fresh PostgreSQL database (Secret + ConfigMap + PtahSchema
 *   with apply: OnApproval) and watches it reach AwaitingApproval, then reads the published plan;
 *   the approver approves exactly that plan; the user watches it reach InSync and reads the database
 *   and the journal; then the same people run versioned migrations with a PtahMigration
 *   (demo-operator-migration.ts). The release is uninstalled at the end, also on failure or Ctrl-C.
 * Reads the environment from $PTAH_ENV_DIR/env.json (written by `npm run env -- up`).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import pg from 'pg';
import { API_GROUP, API_VERSION } from '../../src/api/meta.ts';
import type { PtahSchema } from '../../src/api/ptah-schema.ts';
import type { PtahSchemaApproval } from '../../src/api/ptah-schema-approval.ts';
import type { PtahSchemaPlan } from '../../src/api/ptah-schema-plan.ts';
import { redact } from '../../src/engine/database-url.ts';
import { installOperator, waitFor, WaitAborted, type InstalledOperator } from './demo-operator-install.ts';
import { migrationAct } from './demo-operator-migration.ts';
import {
  explainStop,
  printDatabase,
  printJournal,
  printPlanStatements,
  ProgressPrinter,
  readPublishedPlan,
} from './demo-operator-view.ts';
import type { EnvironmentDescription } from './environment.ts';

const SCHEMA_SQL = `-- The shop's declared schema: countries (reference rows) and the customers who live in them.
CREATE TABLE public.countries (
  code char(2) PRIMARY KEY,
  name text NOT NULL
);

CREATE TABLE public.customers (
  id bigint PRIMARY KEY,
  email text NOT NULL UNIQUE,
  country char(2) NOT NULL REFERENCES public.countries (code)
);

CREATE INDEX customers_country_idx ON public.customers (country);

INSERT INTO public.countries (code, name) VALUES
  ('DE', 'Germany'),
  ('FR', 'France'),
  ('JP', 'Japan');
`;

/** The demo waits at most this long for each lifecycle milestone. */
const MILESTONE_TIMEOUT_MS = 180_000;

function section(title: string): void {
  console.log(`\n== ${title}`);
}

function kubeconfig(file: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(file);
  return kc;
}

/** A database and a login role of the same name, its password random and kept in memory only. */
async function createDatabase(adminUrl: string, name: string): Promise<string> {
  const password = randomBytes(18).toString('base64url');
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE ROLE ${admin.escapeIdentifier(name)} LOGIN PASSWORD '${password}'`);
    await admin.query(
      `CREATE DATABASE ${admin.escapeIdentifier(name)} OWNER ${admin.escapeIdentifier(name)}`,
    );
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const inDatabase = new pg.Client({ connectionString: url.toString() });
  await inDatabase.connect();
  try {
    await inDatabase.query(`ALTER SCHEMA public OWNER TO ${inDatabase.escapeIdentifier(name)}`);
  } finally {
    await inDatabase.end();
  }
  url.username = name;
  url.password = password;
  return url.toString();
}

interface Demo {
  readonly description: EnvironmentDescription;
  readonly operator: InstalledOperator;
  readonly runId: string;
  readonly startedAt: number;
  readonly secrets: string[];
  /** One printer for the whole run, so each wait prints only what moved since the last line. */
  readonly progress: ProgressPrinter;
}

const at = (namespace: string, plural: string) => ({
  group: API_GROUP,
  version: API_VERSION,
  namespace,
  plural,
});

/** Polls the resource, printing its progress, until `done` says so; Blocked ends the wait with an error. */
async function watchUntil(
  demo: Demo,
  objects: k8s.CustomObjectsApi,
  name: string,
  milestone: string,
  done: (s: PtahSchema) => boolean,
): Promise<PtahSchema> {
  const { progress } = demo;
  let last: PtahSchema | undefined;
  try {
    return await waitFor(
      `PtahSchema ${name} to reach ${milestone}`,
      async () => {
        const down = await demo.operator.problem();
        if (down) throw new WaitAborted(`the manager is not running: ${down}`);
        const s = (await objects.getNamespacedCustomObject({
          ...at(demo.description.testNamespace, 'ptahschemas'),
          name,
        })) as PtahSchema;
        last = s;
        progress.observe(s);
        if (done(s)) return s;
        if (s.status?.phase === 'Blocked')
          throw new WaitAborted(`PtahSchema ${name} is Blocked: ${explainStop(s)}`);
        return undefined;
      },
      MILESTONE_TIMEOUT_MS,
      500,
    );
  } catch (error) {
    const phase = last?.status?.phase ?? 'no status';
    const why = last ? explainStop(last) : '';
    throw new Error(`${(error as Error).message}; last seen in phase ${phase} (${why})`, { cause: error });
  }
}

async function workedExample(demo: Demo): Promise<void> {
  const { description, runId } = demo;
  const namespace = description.testNamespace;
  const user = kubeconfig(description.kubeconfigs.user);
  const userObjects = user.makeApiClient(k8s.CustomObjectsApi);
  const userCore = user.makeApiClient(k8s.CoreV1Api);
  const names = {
    database: `shop_${runId}`,
    secret: `shop-${runId}-db`,
    source: `shop-${runId}-schema`,
    schema: `shop-${runId}`,
    approval: `shop-${runId}-approval`,
  };

  section(`the ordinary user (${description.identities.user}) declares a schema`);
  const url = await createDatabase(description.postgres!.adminUrl, names.database);
  demo.secrets.push(url, new URL(url).password);
  console.log(
    `postgres: created database ${names.database} with its own login role (its URL is never printed)`,
  );
  await userCore.createNamespacedSecret({
    namespace,
    body: { metadata: { name: names.secret }, stringData: { url } },
  });
  console.log(`created Secret ${namespace}/${names.secret} (key url)`);
  await userCore.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: names.source }, data: { 'schema.sql': SCHEMA_SQL } },
  });
  console.log(`created ConfigMap ${namespace}/${names.source}, key schema.sql:`);
  console.log(SCHEMA_SQL.trimEnd().replace(/^/gm, '  | '));
  await userObjects.createNamespacedCustomObject({
    ...at(namespace, 'ptahschemas'),
    body: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'PtahSchema',
      metadata: { name: names.schema },
      spec: {
        target: {
          engine: 'postgres',
          coordinationKey: names.database,
          urlFrom: { name: names.secret, key: 'url' },
        },
        desired: { configMap: { name: names.source, files: [{ key: 'schema.sql' }] } },
        policy: { apply: 'OnApproval' },
        interval: '10m',
        execution: { failureRetryInterval: '10s', activeDeadlineSeconds: 120 },
      },
    },
  });
  console.log(`created PtahSchema ${namespace}/${names.schema} (engine postgres, policy.apply OnApproval)`);

  section('the manager resolves, observes and plans (phase, then conditions as they change)');
  const waiting = await watchUntil(
    demo,
    userObjects,
    names.schema,
    'AwaitingApproval',
    (s) => s.status?.phase === 'AwaitingApproval',
  );
  const current = waiting.status!.plan!;

  section(`the published plan ${current.name}`);
  const plan = (await userObjects.getNamespacedCustomObject({
    ...at(namespace, 'ptahschemaplans'),
    name: current.name,
  })) as PtahSchemaPlan;
  const published = await readPublishedPlan(userObjects, plan);
  console.log(
    `fingerprint ${plan.spec.fingerprint}\n` +
      `${published.document.statements.length} statements, ${published.size} bytes in ${published.chunks} chunk ConfigMap(s), ` +
      `destructive: ${plan.spec.binding.destructive}, rebuilt from the chunks and checked (names, UIDs, sizes, hashes):`,
  );
  printPlanStatements(published.document);

  section(`the approver (${description.identities.approver}) approves exactly this plan`);
  const approver = kubeconfig(description.kubeconfigs.approver);
  const approverObjects = approver.makeApiClient(k8s.CustomObjectsApi);
  // The approver reads what is waiting, as they would before deciding.
  const seen = (await approverObjects.getNamespacedCustomObject({
    ...at(namespace, 'ptahschemas'),
    name: names.schema,
  })) as PtahSchema;
  const body = {
    apiVersion: `${API_GROUP}/${API_VERSION}`,
    kind: 'PtahSchemaApproval',
    metadata: { name: names.approval },
    spec: {
      schemaRef: { name: names.schema, uid: seen.metadata.uid! },
      planRef: { name: seen.status!.plan!.name, uid: seen.status!.plan!.uid },
      planFingerprint: seen.status!.plan!.fingerprint,
    },
  };
  console.log(`sent PtahSchemaApproval ${names.approval}: ${JSON.stringify(body.spec)}`);
  const stored = (await approverObjects.createNamespacedCustomObject({
    ...at(namespace, 'ptahschemaapprovals'),
    body,
  })) as PtahSchemaApproval;
  const stamp = stored.spec;
  if (stamp.approver?.username !== description.identities.approver) {
    throw new Error(
      `admission did not stamp the approver: the stored approval names ${stamp.approver?.username ?? 'nobody'}`,
    );
  }
  console.log(
    `admission stamped it: approver ${stamp.approver.username} (groups ${(stamp.approver.groups ?? []).join(', ')}), ` +
      `approvedAt ${stamp.approvedAt}, request ${stamp.mutationRequestUID}`,
  );

  section('the manager applies the approved plan and proves convergence');
  const synced = await watchUntil(
    demo,
    userObjects,
    names.schema,
    'InSync',
    (s) => s.status?.phase === 'InSync',
  );
  if (synced.status?.applied?.planRef.uid !== current.uid) {
    throw new Error(
      `InSync, but the applied plan is ${synced.status?.applied?.planRef.name ?? 'none'}, not ${current.name}`,
    );
  }
  const consumed = await waitFor(
    `PtahSchemaApproval ${names.approval} to be marked Consumed`,
    async () => {
      const a = (await userObjects.getNamespacedCustomObject({
        ...at(namespace, 'ptahschemaapprovals'),
        name: names.approval,
      })) as PtahSchemaApproval;
      return a.status?.conditions?.find((c) => c.type === 'Consumed' && c.status === 'True');
    },
    30_000,
  );
  console.log(
    `applied plan ${synced.status.applied.planRef.name}; approval ${names.approval}: Consumed (${consumed.reason})`,
  );
  const jobs = await user.makeApiClient(k8s.BatchV1Api).listNamespacedJob({
    namespace,
    labelSelector: `${API_GROUP}/schema=${names.schema}`,
  });
  const operations = jobs.items
    .sort(
      (a, b) =>
        (a.metadata?.creationTimestamp?.getTime() ?? 0) - (b.metadata?.creationTimestamp?.getTime() ?? 0),
    )
    .map((j) => j.metadata?.labels?.[`${API_GROUP}/operation`] ?? '?');
  console.log(`operation Jobs run on the node agent, in order: ${operations.join(' -> ')}`);

  section(`database ${names.database}, read with pg as its owner`);
  await printDatabase(url);

  section(`the journal of PtahSchema ${names.schema} (status.journal)`);
  printJournal(synced);

  // The second family on the same installed operator: versioned migrations for a database of their own.
  await migrationAct({ ...demo, createDatabase, section, kubeconfig });
}

async function main(): Promise<number> {
  const startedAt = Date.now();
  const stateDir = process.env['PTAH_ENV_DIR'] ?? join(tmpdir(), 'ptah-env');
  const description = JSON.parse(readFileSync(join(stateDir, 'env.json'), 'utf8')) as EnvironmentDescription;
  const secrets: string[] = [];
  if (description.postgres)
    secrets.push(description.postgres.adminUrl, new URL(description.postgres.adminUrl).password);
  const safe = (text: string) => redact(text, secrets);
  if (!description.postgres || !description.node) {
    console.error('demo-operator: the environment needs PostgreSQL and the node agent (npm run env -- up)');
    return 1;
  }
  const runId = Date.now().toString(36).slice(-6);

  section('the cluster admin installs the operator with helm');
  let operator: InstalledOperator;
  try {
    operator = await installOperator(description);
  } catch (error) {
    console.error(`demo-operator: FAILED to install the operator: ${safe((error as Error).message)}`);
    return 1;
  }
  let removing: Promise<void> | undefined;
  const uninstall = () => (removing ??= operator.uninstall());
  // Ctrl-C or a TERM from the shell: uninstall the release before going.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`demo-operator: ${signal}; uninstalling the operator`);
      void uninstall()
        .catch(() => undefined)
        .then(() => process.exit(128 + os.constants.signals[signal]));
    });
  }
  try {
    await workedExample({
      description,
      operator,
      runId,
      startedAt,
      secrets,
      progress: new ProgressPrinter(startedAt),
    });
    console.log(
      `\ndemo-operator: the worked example finished in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`,
    );
    return 0;
  } catch (error) {
    console.error(`\ndemo-operator: FAILED: ${safe((error as Error).message)}`);
    // The environment (and the Pods' logs with it) is taken down next, so show their end now.
    const tail = await operator.logTail(30).catch((e: unknown) => `(no logs: ${(e as Error).message})`);
    console.error(`demo-operator: the last lines of the manager Pods' logs:\n${safe(tail)}`);
    return 1;
  } finally {
    const started = Date.now();
    await uninstall().then(
      () =>
        console.log(
          `demo-operator: helm uninstall ptah: done in ${((Date.now() - started) / 1000).toFixed(1)} s`,
        ),
      (error: unknown) => console.error(`demo-operator: ${safe((error as Error).message)}`),
    );
  }
}

process.exitCode = await main();

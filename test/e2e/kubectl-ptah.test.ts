// kubectl and `kubectl ptah` against the local control plane, as a person uses them: the real kubectl
// (built from its Go module at the control plane's version) finds kubectl-ptah on PATH as a plugin, with
// the approver's own kubeconfig; the manager process and operation Pods do the rest.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import type { PtahSchemaPlan } from '../../src/api/ptah-schema-plan.ts';
import type { PtahSchemaPlanChunk } from '../../src/api/ptah-schema-plan-chunk.ts';
import { findKubernetesBinaries } from '../env/k8s-binaries.ts';
import { builtProgram } from '../env/build-output.ts';
import { at, declareSchema, dumpDebug, query, useE2E, waitForPhase, type E2E } from './harness.ts';

const { skip, e2e } = useE2E();
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const ORDERS = `
CREATE TABLE public.customers (id bigint PRIMARY KEY, email text NOT NULL);
CREATE TABLE public.orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL REFERENCES public.customers (id));
`;

interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** kubectl with this checkout's bin/ on PATH (where kubectl-ptah is), as the identity of `kubeconfig`. */
function kubectl(kubeconfig: string, args: readonly string[]): Promise<Ran> {
  const bin = findKubernetesBinaries().kubectl;
  return new Promise((resolve) => {
    execFile(
      bin,
      [...args],
      {
        env: {
          PATH: `${dirname(bin)}:${join(ROOT, 'bin')}:${dirname(process.execPath)}:/usr/bin:/bin`,
          KUBECONFIG: kubeconfig,
          HOME: e2e().env.dir,
        },
        encoding: 'utf8',
        timeout: 60_000,
      },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const approver = () => e2e().env.description.kubeconfigs.approver;
const admin = () => e2e().env.description.kubeconfigs.admin;

async function currentPlan(e: E2E, schema: string): Promise<PtahSchemaPlan> {
  const s = await waitForPhase(e, schema, ['AwaitingApproval', 'Failed', 'Blocked']);
  if (s.status?.phase !== 'AwaitingApproval') await dumpDebug(e, schema);
  assert.equal(s.status?.phase, 'AwaitingApproval', JSON.stringify(s.status?.conditions));
  return (await e.objects.getNamespacedCustomObject({
    ...at(e, 'ptahschemaplans'),
    name: s.status!.plan!.name,
  })) as PtahSchemaPlan;
}

async function storedBytes(e: E2E, plan: PtahSchemaPlan): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (const chunk of plan.spec.chunks) {
    const stored = (await e.objects.getNamespacedCustomObject({
      ...at(e, 'ptahschemaplanchunks'),
      name: chunk.name,
    })) as PtahSchemaPlanChunk;
    parts.push(Buffer.from(stored.spec.data, 'base64'));
  }
  return Buffer.concat(parts);
}

async function bindPlanReader(e: E2E): Promise<void> {
  await e.admin.makeApiClient(k8s.RbacAuthorizationV1Api).createNamespacedRoleBinding({
    namespace: e.namespace,
    body: {
      metadata: { name: 'approver-reads-plans' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'ptah-plan-reader' },
      subjects: [
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: e.env.description.identities.approver },
      ],
    },
  });
}

describe('kubectl and kubectl ptah', { skip }, () => {
  it('kubectl reads our resources with their printer columns and explains their fields', async () => {
    builtProgram('kubectl-ptah');
    const ns = e2e().namespace;
    await declareSchema(e2e(), 'columns', { data: { 'schema.sql': ORDERS } });
    await waitForPhase(e2e(), 'columns', ['AwaitingApproval', 'Failed', 'Blocked']);
    const got = await kubectl(admin(), ['get', 'ptahschemas', '-n', ns]);
    assert.equal(got.code, 0, got.stderr);
    assert.match(got.stdout, /^NAME +PHASE +PLAN +APPROVAL +DRIFT +IN SYNC +AGE\n/);
    assert.match(got.stdout, /\ncolumns +AwaitingApproval +ptah-plan-[0-9a-f]+ +AwaitingApproval +/);
    const wide = await kubectl(admin(), ['get', 'ptahschemas', '-n', ns, '-o', 'wide']);
    assert.match(wide.stdout, /^NAME +PHASE +PLAN +APPROVAL +DRIFT +FINDINGS +IN SYNC +READY +FAILURE +/);
    const plans = await kubectl(admin(), ['get', 'ptahplan', '-n', ns, '-o', 'wide']);
    assert.match(plans.stdout, /^NAME +SCHEMA +FINGERPRINT +STATEMENTS +DESTRUCTIVE +READY +AGE\n/);
    assert.match(plans.stdout, /\n\S+ +columns +sha256:[0-9a-f]{64} +3 +false +True +/);
    const explained = await kubectl(admin(), ['explain', 'ptahschemaapproval.spec.planFingerprint']);
    assert.equal(explained.code, 0, explained.stderr);
    assert.match(explained.stdout, /KIND: +PtahSchemaApproval/);
    assert.match(
      explained.stdout,
      /The fingerprint of the plan approved; it binds every input of the plan\./,
    );
  });

  it('kubectl ptah plan prints the verified plan only to someone who may read its chunks', async () => {
    const ns = e2e().namespace;
    await declareSchema(e2e(), 'plugin', { data: { 'schema.sql': ORDERS } });
    const plan = await currentPlan(e2e(), 'plugin');

    // The approver role alone may see the plan object but not its chunks: refused, nothing printed.
    const denied = await kubectl(approver(), ['ptah', 'plan', 'plugin', '-n', ns]);
    assert.equal(denied.code, 1, denied.stderr);
    assert.equal(denied.stdout, '');
    assert.match(denied.stderr, /not allowed to read ptahschemaplanchunks\/\S+-000 .*ptah-plan-reader/);

    await bindPlanReader(e2e());
    const sql = await kubectl(approver(), ['ptah', 'plan', 'plugin', '-n', ns]);
    assert.equal(sql.code, 0, sql.stderr);
    assert.match(
      sql.stdout,
      new RegExp(`^-- plan ${plan.metadata.name} of PtahSchema plugin: 3 statement\\(s\\)\\n`),
    );
    assert.match(sql.stdout, /CREATE TABLE "public"\."customers" \([^;]*\);\n/);
    assert.match(
      sql.stdout,
      /-- 3\/3 \[warning\] adds a foreign key[^\n]*\nALTER TABLE "public"\."orders" ADD FOREIGN KEY [^;]*;\n$/,
    );

    const json = await kubectl(approver(), ['ptah', 'plan', 'plugin', '-n', ns, '-o', 'json']);
    assert.equal(json.code, 0, json.stderr);
    assert.equal(
      json.stdout,
      (await storedBytes(e2e(), plan)).toString('utf8'),
      'the stored bytes, unchanged',
    );

    const diff = await kubectl(approver(), ['ptah', 'plan', 'plugin', '-n', ns, '-o', 'diff']);
    assert.match(diff.stdout, /^--- database +sha256:[0-9a-f]{64}\n\+\+\+ declared +sha256:[0-9a-f]{64}\n/m);

    const applied = await kubectl(approver(), ['ptah', 'plan', 'plugin', '-n', ns, '--applied']);
    assert.equal(applied.code, 3);
    assert.match(applied.stderr, /PtahSchema plugin has applied no plan yet \(phase AwaitingApproval\)/);
    const absent = await kubectl(approver(), ['ptah', 'plan', 'nosuch', '-n', ns]);
    assert.equal(absent.code, 3);
    assert.match(absent.stderr, new RegExp(`no PtahSchema nosuch in namespace ${ns}`));
    const usage = await kubectl(approver(), ['ptah', 'plan', 'plugin', '-o', 'yaml']);
    assert.equal(usage.code, 2);
  });

  it('kubectl ptah plan refuses a plan whose chunk was deleted (none can be forged in its place), and prints nothing of it', async () => {
    const ns = e2e().namespace;
    await declareSchema(e2e(), 'tampered', { data: { 'schema.sql': ORDERS } });
    const plan = await currentPlan(e2e(), 'tampered');
    const name = plan.spec.chunks[0]!.name;
    const chunks = { ...at(e2e(), 'ptahschemaplanchunks'), namespace: ns };
    const original = (await e2e().objects.getNamespacedCustomObject({
      ...chunks,
      name,
    })) as PtahSchemaPlanChunk;
    // A chunk of the same name, owner and bytes, from anyone but the manager: vcontrollerwrite judges a
    // create before the store looks for the name, so it refuses the forgery while the original still exists.
    const forge = () =>
      e2e()
        .objects.createNamespacedCustomObject({
          ...chunks,
          body: {
            apiVersion: original.apiVersion,
            kind: original.kind,
            metadata: {
              name,
              labels: original.metadata.labels!,
              ownerReferences: original.metadata.ownerReferences!,
            },
            spec: original.spec,
          },
        })
        .then(
          () => 'admitted',
          (error: unknown) => String((error as { body?: unknown }).body ?? error),
        );
    assert.match(await forge(), /vcontrollerwrite: only the manager .* creates plan chunk/);
    // The manager retires a tampered plan at its next pass; stopped, only the plugin's own check stands
    // between the person and the missing chunk. The webhook is the manager's, so with it stopped a forged
    // chunk is refused still: the API server fails closed.
    await e2e().manager?.stop(5_000);
    try {
      await e2e().objects.deleteNamespacedCustomObject({ ...chunks, name });
      assert.match(await forge(), /failed calling webhook \\"vcontrollerwrite\.operator\.ptah\.run\\"/);
      const refused = await kubectl(admin(), ['ptah', 'plan', 'tampered', '-n', ns]);
      assert.equal(refused.code, 1, refused.stdout);
      assert.equal(refused.stdout, '', 'nothing of the plan is printed');
      assert.match(
        refused.stderr,
        new RegExp(
          `plan ${plan.metadata.name} of PtahSchema tampered: does not verify \\(Missing\\): chunk ${name} does not exist`,
        ),
      );
      const approve = await kubectl(admin(), ['ptah', 'approve', 'tampered', '-n', ns, '--yes']);
      assert.equal(approve.code, 1);
      const approvals = (await e2e().objects.listNamespacedCustomObject(
        at(e2e(), 'ptahschemaapprovals'),
      )) as {
        items: { spec: { schemaRef: { name: string } } }[];
      };
      assert.deepEqual(
        approvals.items.filter((a) => a.spec.schemaRef.name === 'tampered'),
        [],
        'no approval of an unverifiable plan',
      );
    } finally {
      await e2e().startManager();
    }
  });

  it('kubectl ptah approve creates the exact approval, stamped with the caller, and the schema reaches InSync', async () => {
    const ns = e2e().namespace;
    const url = await declareSchema(e2e(), 'approved', { data: { 'schema.sql': ORDERS } });
    const plan = await currentPlan(e2e(), 'approved');
    const noTty = await kubectl(approver(), ['ptah', 'approve', 'approved', '-n', ns]);
    assert.equal(noTty.code, 2);
    assert.match(noTty.stderr, /standard input is not a terminal.*pass --yes/);

    const approved = await kubectl(approver(), ['ptah', 'approve', 'approved', '-n', ns, '--yes']);
    assert.equal(approved.code, 0, approved.stderr);
    assert.match(approved.stdout, /\+ CREATE TABLE "public"\."customers"/, 'the plan is shown first');
    const who = e2e().env.description.identities.approver;
    assert.match(
      approved.stdout,
      new RegExp(`approval approved-\\w+ created for plan ${plan.metadata.name}, approver ${who}\\n$`),
    );
    const s = await waitForPhase(e2e(), 'approved', ['InSync', 'Failed', 'Blocked']);
    if (s.status?.phase !== 'InSync') await dumpDebug(e2e(), 'approved');
    assert.equal(s.status?.phase, 'InSync');
    assert.equal(s.status?.applied?.planRef.uid, plan.metadata.uid);
    const tables = await query(
      url,
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
    );
    assert.deepEqual(
      tables.map((r) => r['table_name']),
      ['customers', 'orders'],
    );

    const status = await kubectl(approver(), ['ptah', 'status', 'approved', '-n', ns]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /^PtahSchema \S+\/approved\nphase: +InSync\n/);
    assert.match(status.stdout, /\nCONDITIONS\nTYPE +STATUS +REASON +SINCE +MESSAGE\n/);
    assert.match(status.stdout, /\nReady +True +/);
    assert.match(
      status.stdout,
      new RegExp(`\\nJOURNAL\\n[^]*ApprovalAccepted +[^\\n]*${plan.metadata.name} +${who}`),
    );
    const appliedPlan = await kubectl(approver(), ['ptah', 'plan', 'approved', '-n', ns, '--applied']);
    assert.equal(appliedPlan.code, 0, appliedPlan.stderr);
    assert.match(appliedPlan.stdout, /CREATE TABLE "public"\."orders"/);
  });

  it('kubectl completes kubectl ptah through kubectl_complete-ptah, with schema names from the cluster', async () => {
    const ns = e2e().namespace;
    const commands = await kubectl(approver(), ['__complete', 'ptah', '']);
    assert.match(commands.stdout, /^plan\napprove\nstatus\nmigration\ncompletion\n:4\n/);
    const names = await kubectl(approver(), ['__complete', 'ptah', 'status', '-n', ns, 'appr']);
    assert.match(names.stdout, /^approved\n:4\n/);
  });
});

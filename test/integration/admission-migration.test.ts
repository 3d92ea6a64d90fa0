// The migration decision webhooks and the unresolved-run annotation guard against the real local control
// plane: the API server calls the admission server by URL on loopback (verified with the caBundle), the
// webhooks read as the manager ServiceAccount holding the shipped deploy/rbac/manager.yaml, and people hold
// the shipped ClusterRoles of deploy/rbac/user-roles.yaml. Then `kubectl ptah migration` through the real
// kubectl, as the approver, on objects created directly (no migration controller runs here).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { startControlPlane, type ControlPlane } from '../env/controlplane.ts';
import { findKubernetesBinaries } from '../env/k8s-binaries.ts';
import { createCertificateAuthority, issueCertificate } from '../env/pki.ts';
import { eventually } from '../env/eventually.ts';
import { installCrds } from '../env/install-crds.ts';
import { startAdmissionServer, type AdmissionServer } from '../../src/admission/server.ts';
import { kubernetesApprovalSubjects } from '../../src/admission/approval-subjects.ts';
import { approvalWebhooks } from '../../src/admission/webhooks.ts';
import { approvalWebhookConfigurations } from '../../src/admission/webhook-configurations.ts';
import {
  admissionPolicies,
  STATUS_GUARD_NAME,
  UNRESOLVED_RUN_GUARD_NAME,
} from '../../src/admission/admission-policies.ts';
import { sha256Digest } from '../../src/api/digest.ts';
import { API_GROUP, API_VERSION, GROUP_VERSION } from '../../src/api/meta.ts';
import { UNRESOLVED_RUN_ANNOTATION, type PtahMigration } from '../../src/api/ptah-migration.ts';
import type {
  PtahMigrationApproval,
  PtahMigrationRunAcknowledgment,
} from '../../src/api/ptah-migration-approval.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const d = (s: string) => sha256Digest(s);
const group = API_GROUP;
const version = API_VERSION;
const OPERATION = d('apply operation 1');

let cp: ControlPlane;
let webhook: AdmissionServer;
let pkiDir: string;
let namespace: string;
let admin: k8s.CustomObjectsApi;
let manager: k8s.CustomObjectsApi;
let approver: k8s.CustomObjectsApi;

function client(file: string): k8s.CustomObjectsApi {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(file);
  return kc.makeApiClient(k8s.CustomObjectsApi);
}

const at = (plural: string) => ({ group, version, namespace, plural });

async function createAll(file: string): Promise<void> {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(cp.kubeconfigs.admin);
  const api = k8s.KubernetesObjectApi.makeApiClient(kc);
  for (const doc of parseAllDocuments(readFileSync(join(ROOT, file), 'utf8'))) {
    const spec = doc.toJSON() as k8s.KubernetesObject | null;
    if (!spec) continue;
    try {
      await api.create(spec);
    } catch (error) {
      if ((error as { code?: number }).code !== 409) throw error;
    }
  }
}

interface Made {
  uid: string;
  planName: string;
  planUID: string;
  fingerprint: string;
}

/** A PtahMigration waiting on a plan, as the manager would leave it: the plan, and status naming it. */
async function migrationWaitingOnPlan(name: string, annotations?: Record<string, string>): Promise<Made> {
  const created = (await admin.createNamespacedCustomObject({
    ...at('ptahmigrations'),
    body: {
      apiVersion: GROUP_VERSION,
      kind: 'PtahMigration',
      metadata: { name, ...(annotations ? { annotations } : {}) },
      spec: {
        target: { engine: 'postgres', coordinationKey: 'shop-db', urlFrom: { name: 'shop-db', key: 'url' } },
        desired: { configMap: { name: `${name}-migrations`, files: [{ key: '0004_add_orders.sql' }] } },
      },
    },
  })) as PtahMigration;
  const uid = created.metadata.uid!;
  const fingerprint = d(`plan of ${name}`);
  const planName = `ptah-mplan-${name}`;
  const plan = (await admin.createNamespacedCustomObject({
    ...at('ptahmigrationplans'),
    body: {
      apiVersion: GROUP_VERSION,
      kind: 'PtahMigrationPlan',
      metadata: { name: planName },
      spec: {
        migrationRef: { name, uid },
        fingerprint,
        binding: {
          contractVersion: 2,
          migrationUID: uid,
          sourceType: 'ConfigMap',
          configMapUID: 'cm-uid',
          contentDigest: d('files'),
          coordinationDigest: d('realm'),
          targetIdentityDigest: d('route'),
          historyFingerprint: d('history'),
          currentVersion: '3',
          transactionMode: 'unset',
          executionEpoch: 'v1-' + 'e'.repeat(32),
          managerImage: 'registry.example/ptah-operator@sha256:' + '1'.repeat(64),
          managerRevision: 'abc1234',
          controllerStateVersion: 1,
          ptahVersion: '0.1.0',
          runnerImage: 'registry.example/ptah-runner@sha256:' + '2'.repeat(64),
          runnerProtocolVersion: 1,
          dialect: 'postgres',
        },
        migrations: [
          {
            version: '4',
            versionKey: '0004',
            description: 'add orders',
            checksum: 'c4',
            checkpoint: false,
            transactionMode: 'file',
          },
          {
            version: '5',
            versionKey: '0005',
            description: 'backfill orders',
            checksum: 'c5',
            checkpoint: false,
            transactionMode: 'none',
          },
        ],
      },
    },
  })) as { metadata: { uid: string } };
  await writeStatus(name, {
    phase: 'AwaitingApproval',
    plan: { name: planName, uid: plan.metadata.uid, fingerprint, createdAt: now() },
  });
  return { uid, planName, planUID: plan.metadata.uid, fingerprint };
}

const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Writes status as the manager does (the status subresource, with the manager ServiceAccount). */
async function writeStatus(name: string, status: Record<string, unknown>): Promise<void> {
  const current = (await manager.getNamespacedCustomObject({ ...at('ptahmigrations'), name })) as Record<
    string,
    unknown
  >;
  await manager.replaceNamespacedCustomObjectStatus({
    ...at('ptahmigrations'),
    name,
    body: { ...current, status: { ...((current['status'] as object) ?? {}), ...status } },
  });
}

function unresolvedRun(operationId = OPERATION) {
  return {
    outcome: 'Partial',
    operationId,
    jobName: 'ptah-m-apply-shop-db-0123456789abcdef',
    recordedAt: now(),
  };
}

/** The API server's answer to a refused write: its status code and message. */
function denial(error: unknown): string {
  if (!(error instanceof k8s.ApiException)) return String(error);
  try {
    return `${error.code} ${(JSON.parse(String(error.body)) as { message: string }).message}`;
  } catch {
    return `${error.code} ${String(error.body)}`;
  }
}

let shop: Made;

before(async () => {
  cp = await startControlPlane();
  namespace = cp.testNamespace;
  admin = client(cp.kubeconfigs.admin);
  manager = client(cp.kubeconfigs.manager);
  approver = client(cp.kubeconfigs.approver);

  pkiDir = mkdtempSync(join(tmpdir(), 'ptah-admission-migration-it-'));
  const ca = createCertificateAuthority(pkiDir, 'webhook-ca', 'ptah-webhook-ca');
  const serving = issueCertificate(pkiDir, ca, {
    name: 'webhook',
    commonName: 'ptah-webhook',
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  const managerConfig = new k8s.KubeConfig();
  managerConfig.loadFromFile(cp.kubeconfigs.manager);
  webhook = await startAdmissionServer({
    cert: readFileSync(serving.certFile),
    key: readFileSync(serving.keyFile),
    handlers: approvalWebhooks(kubernetesApprovalSubjects(managerConfig)),
  });

  const adminConfig = new k8s.KubeConfig();
  adminConfig.loadFromFile(cp.kubeconfigs.admin);
  await installCrds(adminConfig);

  // The shipped roles, unchanged: the manager's (the webhooks read with it) and the people's.
  await createAll('deploy/rbac/manager.yaml');
  await createAll('deploy/rbac/user-roles.yaml');
  await adminConfig.makeApiClient(k8s.RbacAuthorizationV1Api).createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: 'ptah-approver' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'ptah-approver' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: cp.identities.approver }],
    },
  });

  const reg = adminConfig.makeApiClient(k8s.AdmissionregistrationV1Api);
  const webhooks = approvalWebhookConfigurations({
    baseUrl: webhook.url,
    caBundle: readFileSync(ca.certFile).toString('base64'),
    names: { mutating: 'ptah-test-mutating', validating: 'ptah-test-validating' },
    timeoutSeconds: 5,
  });
  await reg.createMutatingWebhookConfiguration({ body: webhooks.mutating });
  await reg.createValidatingWebhookConfiguration({ body: webhooks.validating });
  // The guards of the manager's state; the plans here are written by hand, not in the manager's form, so the
  // typed policies (admission-policies.test.ts) stay out.
  for (const guard of admissionPolicies({
    managerUsername: cp.identities.manager,
    managerImage: 'registry.example/ptah-operator@sha256:' + '1'.repeat(64),
    controllerStateVersion: 1,
  }).filter((p) => [STATUS_GUARD_NAME, UNRESOLVED_RUN_GUARD_NAME].includes(p.policy.metadata!.name!))) {
    await reg.createValidatingAdmissionPolicy({ body: guard.policy });
    await reg.createValidatingAdmissionPolicyBinding({ body: guard.binding });
  }

  shop = await migrationWaitingOnPlan('shop-db');

  // Webhook configurations reach the API server asynchronously: a dry run shows when the stamp is applied.
  await eventually('the migration webhooks stamp', async () => {
    const dry = (await approver.createNamespacedCustomObject({
      ...at('ptahmigrationapprovals'),
      dryRun: 'All',
      body: approvalBody('dry-run', shop),
    })) as PtahMigrationApproval;
    return dry.spec.approver?.username === cp.identities.approver ? true : undefined;
  });
});

after(async () => {
  await webhook?.close();
  await cp?.stop();
  if (pkiDir !== undefined) rmSync(pkiDir, { recursive: true, force: true });
});

function approvalBody(name: string, m: Made, spec: Partial<PtahMigrationApproval['spec']> = {}): object {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'PtahMigrationApproval',
    metadata: { name },
    spec: {
      migrationRef: { name: m === shop ? 'shop-db' : 'cli-db', uid: m.uid },
      planRef: { name: m.planName, uid: m.planUID },
      planFingerprint: m.fingerprint,
      ...spec,
    },
  };
}

function acknowledgmentBody(
  name: string,
  migration: string,
  uid: string,
  spec: Partial<PtahMigrationRunAcknowledgment['spec']> = {},
): object {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'PtahMigrationRunAcknowledgment',
    metadata: { name },
    spec: { migrationRef: { name: migration, uid }, operationId: OPERATION, ...spec },
  };
}

const vmigrationapproval = 'admission webhook "vmigrationapproval.operator.ptah.run" denied the request';
const vack = 'admission webhook "vmigrationrunacknowledgment.operator.ptah.run" denied the request';

describe('PtahMigrationApproval admission on the real API server', () => {
  it('an approval with a forged approver is stored with the authenticated identity', async () => {
    await approver.createNamespacedCustomObject({
      ...at('ptahmigrationapprovals'),
      body: approvalBody('forged', shop, {
        approver: { username: 'ceo@example.com', uid: 'forged-uid', groups: ['system:masters'] },
        approvedAt: '1999-01-01T00:00:00Z',
        mutationRequestUID: 'forged-request',
      }),
    });
    // Read back from storage, not from the create response.
    const read = (await admin.getNamespacedCustomObject({
      ...at('ptahmigrationapprovals'),
      name: 'forged',
    })) as PtahMigrationApproval;
    assert.equal(read.spec.approver?.username, cp.identities.approver);
    assert.notEqual(read.spec.approver?.uid, 'forged-uid');
    assert.ok(read.spec.approver?.groups?.includes('ptah:approvers'), JSON.stringify(read.spec.approver));
    assert.ok(!read.spec.approver?.groups?.includes('system:masters'));
    assert.match(read.spec.mutationRequestUID ?? '', /^[0-9a-f-]{36}$/);
    assert.ok(Math.abs(Date.parse(read.spec.approvedAt ?? '') - Date.now()) < 120_000, read.spec.approvedAt);
    assert.equal(read.spec.planFingerprint, shop.fingerprint);
  });

  for (const [what, spec, why] of [
    [
      'a wrong fingerprint',
      { planFingerprint: d('another plan') },
      /the approval names another fingerprint than the current plan/,
    ],
    [
      'a plan that is no longer current',
      { planRef: { name: 'ptah-mplan-old', uid: 'old-plan-uid' } },
      /the approval names plan ptah-mplan-old, but the current plan of shop-db is ptah-mplan-shop-db/,
    ],
    [
      'another object of the same name (UID)',
      { migrationRef: { name: 'shop-db', uid: 'recreated-uid' } },
      /the approval names PtahMigration shop-db with UID recreated-uid, but the PtahMigration of that name has UID/,
    ],
  ] as const) {
    it(`an approval naming ${what} is refused with the webhook's reason, and nothing is stored`, async () => {
      const name = `refused-${what.length}`;
      await assert.rejects(
        approver.createNamespacedCustomObject({
          ...at('ptahmigrationapprovals'),
          body: approvalBody(name, shop, spec),
        }),
        (e) => {
          const text = denial(e);
          assert.match(text, /^403 /);
          assert.ok(text.includes(vmigrationapproval), text);
          assert.match(text, why);
          return true;
        },
      );
      await assert.rejects(admin.getNamespacedCustomObject({ ...at('ptahmigrationapprovals'), name }), (e) =>
        denial(e).startsWith('404'),
      );
    });
  }

  it('what an approval binds is never edited; its labels may change (the update passes admission)', async () => {
    await assert.rejects(
      admin.patchNamespacedCustomObject({
        ...at('ptahmigrationapprovals'),
        name: 'forged',
        body: [{ op: 'replace', path: '/spec/planFingerprint', value: d('another plan') }],
      }),
      (e) => /an approval is immutable; create another one/.test(denial(e)),
    );
    await admin.patchNamespacedCustomObject({
      ...at('ptahmigrationapprovals'),
      name: 'forged',
      body: [{ op: 'add', path: '/metadata/labels', value: { team: 'db' } }],
    });
  });
});

describe('PtahMigrationRunAcknowledgment admission on the real API server', () => {
  before(async () => writeStatus('shop-db', { phase: 'Blocked', unresolvedRun: unresolvedRun() }));

  it('an acknowledgment with a forged acknowledgedBy is stored with the authenticated identity', async () => {
    await eventually('the acknowledgment is admitted once the status is read', async () => {
      try {
        await approver.createNamespacedCustomObject({
          ...at('ptahmigrationrunacknowledgments'),
          body: acknowledgmentBody('settled', 'shop-db', shop.uid, {
            acknowledgedBy: {
              username: 'dba-lead@example.com',
              uid: 'forged-uid',
              groups: ['system:masters'],
            },
            acknowledgedAt: '1999-01-01T00:00:00Z',
            mutationRequestUID: 'forged-request',
          }),
        });
        return true;
      } catch (error) {
        if (/records no unresolved run/.test(denial(error))) return undefined;
        throw error;
      }
    });
    const read = (await admin.getNamespacedCustomObject({
      ...at('ptahmigrationrunacknowledgments'),
      name: 'settled',
    })) as PtahMigrationRunAcknowledgment;
    assert.equal(
      read.spec.acknowledgedBy?.username,
      cp.identities.approver,
      'the forged identity is replaced',
    );
    assert.notEqual(read.spec.acknowledgedBy?.uid, 'forged-uid');
    assert.ok(read.spec.acknowledgedBy?.groups?.includes('ptah:approvers'));
    assert.ok(!read.spec.acknowledgedBy?.groups?.includes('system:masters'));
    assert.notEqual(read.spec.acknowledgedAt, '1999-01-01T00:00:00Z');
    assert.match(read.spec.mutationRequestUID ?? '', /^[0-9a-f-]{36}$/);
    assert.equal(read.spec.operationId, OPERATION);
  });

  it('an acknowledgment naming another operation id is refused, naming the run recorded', async () => {
    await assert.rejects(
      approver.createNamespacedCustomObject({
        ...at('ptahmigrationrunacknowledgments'),
        body: acknowledgmentBody('wrong-op', 'shop-db', shop.uid, { operationId: d('another run') }),
      }),
      (e) => {
        const text = denial(e);
        assert.ok(text.includes(vack), text);
        assert.match(
          text,
          new RegExp(
            `the acknowledgment names operation ${d('another run')}, but the unresolved run of PtahMigration shop-db is operation ${OPERATION} \\(Partial, Job ptah-m-apply-shop-db-0123456789abcdef\\)`,
          ),
        );
        return true;
      },
    );
  });

  it('an acknowledgment of a migration with no unresolved run, or of a recreated one, is refused', async () => {
    const quiet = await migrationWaitingOnPlan('quiet-db');
    await assert.rejects(
      approver.createNamespacedCustomObject({
        ...at('ptahmigrationrunacknowledgments'),
        body: acknowledgmentBody('nothing', 'quiet-db', quiet.uid),
      }),
      (e) =>
        /PtahMigration quiet-db records no unresolved run: there is nothing to acknowledge/.test(denial(e)),
    );
    await assert.rejects(
      approver.createNamespacedCustomObject({
        ...at('ptahmigrationrunacknowledgments'),
        body: acknowledgmentBody('stale-uid', 'shop-db', 'an-older-uid'),
      }),
      (e) =>
        /names PtahMigration shop-db with UID an-older-uid, but the PtahMigration of that name has UID/.test(
          denial(e),
        ),
    );
  });

  it('an acknowledgment is immutable after creation', async () => {
    await assert.rejects(
      admin.patchNamespacedCustomObject({
        ...at('ptahmigrationrunacknowledgments'),
        name: 'settled',
        body: [{ op: 'replace', path: '/spec/operationId', value: d('another run') }],
      }),
      (e) => /an acknowledgment is immutable; create another one/.test(denial(e)),
    );
  });

  it('while the run is unresolved, no plan of the migration is approved', async () => {
    await assert.rejects(
      approver.createNamespacedCustomObject({
        ...at('ptahmigrationapprovals'),
        body: approvalBody('during-unresolved', shop),
      }),
      (e) =>
        /PtahMigration shop-db has an unresolved run \(Partial, operation sha256:[0-9a-f]{64}, Job ptah-m-apply-shop-db-0123456789abcdef\): no plan is applied until it is settled/.test(
          denial(e),
        ),
    );
  });
});

describe('the unresolved-run annotation guard', () => {
  const record = JSON.stringify(unresolvedRun());
  const annotate = (api: k8s.CustomObjectsApi, name: string, value: string | null) =>
    api.patchNamespacedCustomObject(
      {
        ...at('ptahmigrations'),
        name,
        body: { metadata: { annotations: { [UNRESOLVED_RUN_ANNOTATION]: value } } },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
  const refusedToAdmin =
    /only the manager may change the operator\.ptah\.run\/unresolved-run annotation of PtahMigration (\S+): it records a run that may have changed part of the database; settle the run and create a PtahMigrationRunAcknowledgment/;

  it('a PtahMigration created with the annotation is admitted: that is what a restore does', async () => {
    await migrationWaitingOnPlan('restored-db', { [UNRESOLVED_RUN_ANNOTATION]: record });
    const read = (await admin.getNamespacedCustomObject({
      ...at('ptahmigrations'),
      name: 'restored-db',
    })) as PtahMigration;
    assert.equal(read.metadata.annotations?.[UNRESOLVED_RUN_ANNOTATION], record);
  });

  it('nobody but the manager changes, removes or adds it on an existing PtahMigration, a cluster admin included', async () => {
    await eventually('the policy refuses', async () => {
      try {
        await annotate(admin, 'restored-db', '{}');
        // Admitted before the policy took effect: put the record back and try again.
        await annotate(manager, 'restored-db', record);
        return undefined;
      } catch (error) {
        const text = denial(error);
        assert.match(text, /^403 /);
        assert.match(text, refusedToAdmin);
        return true;
      }
    });
    await assert.rejects(annotate(admin, 'restored-db', null), (e) => refusedToAdmin.test(denial(e)));
    await assert.rejects(annotate(admin, 'shop-db', record), (e) => refusedToAdmin.test(denial(e)));
    const read = (await admin.getNamespacedCustomObject({
      ...at('ptahmigrations'),
      name: 'restored-db',
    })) as PtahMigration;
    assert.equal(read.metadata.annotations?.[UNRESOLVED_RUN_ANNOTATION], record, 'unchanged');
  });

  it('other writes by people still pass, and the manager moves the annotation', async () => {
    await admin.patchNamespacedCustomObject(
      {
        ...at('ptahmigrations'),
        name: 'restored-db',
        body: { metadata: { annotations: { 'operator.ptah.run/read-requested-at': now() } } },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    await annotate(manager, 'restored-db', null);
    await annotate(manager, 'shop-db', record);
    const read = (await admin.getNamespacedCustomObject({
      ...at('ptahmigrations'),
      name: 'shop-db',
    })) as PtahMigration;
    assert.equal(read.metadata.annotations?.[UNRESOLVED_RUN_ANNOTATION], record);
  });
});

interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The real kubectl with this checkout's bin/ on PATH (where kubectl-ptah is), as the approver. */
function kubectl(args: readonly string[]): Promise<Ran> {
  const bin = findKubernetesBinaries().kubectl;
  return new Promise((resolve) => {
    execFile(
      bin,
      [...args],
      {
        env: {
          PATH: `${dirname(bin)}:${join(ROOT, 'bin')}:${dirname(process.execPath)}:/usr/bin:/bin`,
          KUBECONFIG: cp.kubeconfigs.approver,
          HOME: pkiDir,
        },
        encoding: 'utf8',
        timeout: 60_000,
      },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('kubectl ptah migration, through the real kubectl, as the approver', () => {
  let cli: Made;
  before(async () => {
    cli = await migrationWaitingOnPlan('cli-db');
  });

  it('status and plan print the migration and its plan sequence; an absent one exits 3', async () => {
    const status = await kubectl(['ptah', 'migration', 'status', 'cli-db', '-n', namespace]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(
      status.stdout,
      new RegExp(`^PtahMigration ${namespace}/cli-db\\nphase: +AwaitingApproval\\n`),
    );
    assert.match(status.stdout, /\nplan: +ptah-mplan-cli-db, fingerprint sha256:[0-9a-f]{64}\n/);

    const plan = await kubectl(['ptah', 'migration', 'plan', 'cli-db', '-n', namespace]);
    assert.equal(plan.code, 0, plan.stderr);
    assert.match(
      plan.stdout,
      /^# plan ptah-mplan-cli-db of PtahMigration cli-db: 2 migration\(s\) from version 3\n/,
    );
    assert.match(
      plan.stdout,
      /\n4 +0004 +no +file +c4 +add orders\n5 +0005 +no +none +c5 +backfill orders\n$/,
    );
    const json = await kubectl(['ptah', 'migration', 'plan', 'cli-db', '-n', namespace, '-o', 'json']);
    assert.equal(json.code, 0, json.stderr);
    assert.equal((JSON.parse(json.stdout) as { metadata: { uid: string } }).metadata.uid, cli.planUID);

    const absent = await kubectl(['ptah', 'migration', 'status', 'nosuch', '-n', namespace]);
    assert.equal(absent.code, 3);
    assert.match(absent.stderr, new RegExp(`no PtahMigration nosuch in namespace ${namespace}`));
    const usage = await kubectl(['ptah', 'migration', 'status', 'cli-db', '--operation', 'x']);
    assert.equal(usage.code, 2);
  });

  it('approve creates the exact approval, stamped with the caller, and does not approve twice', async () => {
    const noTty = await kubectl(['ptah', 'migration', 'approve', 'cli-db', '-n', namespace]);
    assert.equal(noTty.code, 2);
    assert.match(noTty.stderr, /standard input is not a terminal.*pass --yes/);
    const approved = await kubectl(['ptah', 'migration', 'approve', 'cli-db', '-n', namespace, '--yes']);
    assert.equal(approved.code, 0, approved.stderr);
    assert.match(
      approved.stdout,
      /^# plan ptah-mplan-cli-db of PtahMigration cli-db/,
      'the plan is shown first',
    );
    const who = cp.identities.approver;
    const made = new RegExp(
      `approval (cli-db-\\w+) created for plan ptah-mplan-cli-db, approver ${who}\\n$`,
    ).exec(approved.stdout);
    assert.ok(made, approved.stdout);
    const stored = (await admin.getNamespacedCustomObject({
      ...at('ptahmigrationapprovals'),
      name: made[1]!,
    })) as PtahMigrationApproval;
    assert.deepEqual(
      [
        stored.spec.migrationRef,
        stored.spec.planRef,
        stored.spec.planFingerprint,
        stored.spec.approver?.username,
      ],
      [{ name: 'cli-db', uid: cli.uid }, { name: cli.planName, uid: cli.planUID }, cli.fingerprint, who],
    );
    const again = await kubectl(['ptah', 'migration', 'approve', 'cli-db', '-n', namespace, '--yes']);
    assert.equal(again.code, 0, again.stderr);
    assert.match(
      again.stdout,
      new RegExp(`plan ptah-mplan-cli-db is already approved by ${who} \\(approval ${made[1]}\\)\\n$`),
    );
  });

  it('acknowledge settles exactly the recorded run, stamped with the caller', async () => {
    const none = await kubectl(['ptah', 'migration', 'acknowledge', 'cli-db', '-n', namespace, '--yes']);
    assert.equal(none.code, 3);
    assert.match(
      none.stderr,
      /PtahMigration cli-db records no unresolved run \(phase AwaitingApproval\): nothing to acknowledge/,
    );

    // Status dropped by a restore, the annotation kept: the run is not settled, and it is not yet in status.
    const restored = await migrationWaitingOnPlan('annotated-db', {
      [UNRESOLVED_RUN_ANNOTATION]: JSON.stringify(unresolvedRun()),
    });
    const early = await kubectl([
      'ptah',
      'migration',
      'acknowledge',
      'annotated-db',
      '-n',
      namespace,
      '--yes',
    ]);
    assert.equal(early.code, 3);
    assert.match(
      early.stderr,
      /records no unresolved run in its status yet, but its operator\.ptah\.run\/unresolved-run annotation holds one: the manager brings it back into status at its next pass/,
    );
    await assert.rejects(
      approver.createNamespacedCustomObject({
        ...at('ptahmigrationrunacknowledgments'),
        body: acknowledgmentBody('too-early', 'annotated-db', restored.uid),
      }),
      (e) =>
        /in its status, but its operator\.ptah\.run\/unresolved-run annotation holds one/.test(denial(e)),
    );

    await writeStatus('cli-db', { phase: 'Blocked', unresolvedRun: unresolvedRun() });
    const status = await kubectl(['ptah', 'migration', 'status', 'cli-db', '-n', namespace]);
    assert.match(
      status.stdout,
      new RegExp(
        `\\nUNRESOLVED: Partial run, operation ${OPERATION} \\(Job ptah-m-apply-shop-db-0123456789abcdef\\)`,
      ),
    );
    const other = d('another run');
    const wrong = await kubectl([
      'ptah',
      'migration',
      'acknowledge',
      'cli-db',
      '-n',
      namespace,
      '--operation',
      other,
      '--yes',
    ]);
    assert.equal(wrong.code, 1);
    assert.match(
      wrong.stderr,
      new RegExp(
        `--operation ${other} is not the unresolved run of PtahMigration cli-db, which is operation ${OPERATION}`,
      ),
    );

    const acked = await eventually('the acknowledgment is admitted once the status is read', async () => {
      const r = await kubectl([
        'ptah',
        'migration',
        'acknowledge',
        'cli-db',
        '-n',
        namespace,
        '--operation',
        OPERATION,
        '--yes',
      ]);
      return r.code === 0 || !/records no unresolved run/.test(r.stderr) ? r : undefined;
    });
    assert.equal(acked.code, 0, acked.stderr);
    const who = cp.identities.approver;
    const made = new RegExp(
      `acknowledgment (cli-db-\\w+) created for operation ${OPERATION}, acknowledged by ${who}\\n$`,
    ).exec(acked.stdout);
    assert.ok(made, acked.stdout);
    const stored = (await admin.getNamespacedCustomObject({
      ...at('ptahmigrationrunacknowledgments'),
      name: made[1]!,
    })) as PtahMigrationRunAcknowledgment;
    assert.deepEqual(
      [stored.spec.migrationRef, stored.spec.operationId, stored.spec.acknowledgedBy?.username],
      [{ name: 'cli-db', uid: cli.uid }, OPERATION, who],
    );
  });
});

describe('fail closed', () => {
  it('with the webhook unreachable, no approval or acknowledgment is written', async () => {
    await webhook.close();
    for (const [plural, body] of [
      ['ptahmigrationrunacknowledgments', acknowledgmentBody('unreachable-ack', 'shop-db', shop.uid)],
      ['ptahmigrationapprovals', approvalBody('unreachable-approval', shop)],
    ] as const) {
      await assert.rejects(approver.createNamespacedCustomObject({ ...at(plural), body }), (e) =>
        /failed calling webhook "m(migrationrunacknowledgment|migrationapproval)\.operator\.ptah\.run"/.test(
          denial(e),
        ),
      );
    }
    const acks = (await admin.listNamespacedCustomObject(at('ptahmigrationrunacknowledgments'))) as {
      items: { metadata: { name: string } }[];
    };
    assert.ok(!acks.items.some((a) => a.metadata.name === 'unreachable-ack'));
  });
});

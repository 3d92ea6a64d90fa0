import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { admissionPolicies } from '../../../src/admission/admission-policies.ts';
import {
  ADMISSION_POLICY_TEMPLATE,
  admissionPolicyTemplate,
  PLAIN_ADMISSION_DIR,
  PLAIN_RBAC,
  PLAIN_VARIABLES,
  plainAdmissionManifests,
  WEBHOOK_TEMPLATE,
  webhookTemplate,
} from '../../../scripts/gen-admission-policies.ts';
import {
  approvalWebhookConfigurations,
  approvalWebhookGuard,
  approvalWebhooksProblem,
} from '../../../src/admission/webhook-configurations.ts';
import { approvalWebhookGate } from '../../../src/controller/runtime/approval-webhook-gate.ts';

describe('approvalWebhookConfigurations', () => {
  const { mutating, validating } = approvalWebhookConfigurations({
    baseUrl: 'https://127.0.0.1:9443',
    caBundle: 'Q0E=',
  });

  it('points every stamping and checking webhook at the path the server serves, with the CA bundle', () => {
    assert.equal(mutating.metadata?.name, 'ptah-mapproval');
    assert.equal(validating.metadata?.name, 'ptah-vapproval');
    const at = (name: string) => [`${name}.operator.ptah.run`, `https://127.0.0.1:9443/${name}`, 'Q0E='];
    assert.deepEqual(
      mutating.webhooks?.map((w) => [w.name, w.clientConfig.url, w.clientConfig.caBundle]),
      ['mapproval', 'mmigrationapproval', 'mmigrationrunacknowledgment'].map(at),
    );
    assert.deepEqual(
      validating.webhooks?.map((w) => [w.name, w.clientConfig.url, w.clientConfig.caBundle]),
      ['vapproval', 'vmigrationapproval', 'vmigrationrunacknowledgment'].map(at),
    );
  });

  it('sends each webhook its own kind only, fails closed, has no side effects, never reinvokes', () => {
    const rule = (resource: string, operations: string[]) => [
      {
        apiGroups: ['operator.ptah.run'],
        apiVersions: ['v1alpha1'],
        resources: [resource],
        operations,
        scope: 'Namespaced',
      },
    ];
    assert.deepEqual(
      mutating.webhooks!.map((w) => w.rules),
      [
        rule('ptahschemaapprovals', ['CREATE']),
        rule('ptahmigrationapprovals', ['CREATE']),
        rule('ptahmigrationrunacknowledgments', ['CREATE']),
      ],
    );
    // A migration decision's webhook also refuses edits of what it binds, so it sees updates too.
    assert.deepEqual(
      validating.webhooks!.map((w) => w.rules),
      [
        rule('ptahschemaapprovals', ['CREATE']),
        rule('ptahmigrationapprovals', ['CREATE', 'UPDATE']),
        rule('ptahmigrationrunacknowledgments', ['CREATE', 'UPDATE']),
      ],
    );
    for (const w of [...mutating.webhooks!, ...validating.webhooks!]) {
      assert.equal(w.failurePolicy, 'Fail');
      assert.equal(w.sideEffects, 'None');
      assert.deepEqual(w.admissionReviewVersions, ['v1']);
      assert.equal(w.timeoutSeconds, 10);
    }
    for (const w of mutating.webhooks!) assert.equal(w.reinvocationPolicy, 'Never');
  });

  it('takes other names and a timeout for a registration beside the operator’s', () => {
    const own = approvalWebhookConfigurations({
      baseUrl: 'https://127.0.0.1:1',
      caBundle: 'Q0E=',
      names: { mutating: 'm', validating: 'v' },
      timeoutSeconds: 5,
    });
    assert.equal(own.mutating.metadata?.name, 'm');
    assert.equal(own.validating.metadata?.name, 'v');
    assert.equal(own.mutating.webhooks![0]!.timeoutSeconds, 5);
    assert.equal(own.validating.webhooks![0]!.timeoutSeconds, 5);
  });
});

describe('approvalWebhooksProblem: approvals are trusted only behind both webhooks', () => {
  const good = () => approvalWebhookConfigurations({ baseUrl: 'https://10.0.0.1:9443', caBundle: 'Q0E=' });

  it('accepts the configurations the manager registers', () => {
    const { mutating, validating } = good();
    assert.equal(approvalWebhooksProblem({ mutating: [mutating], validating: [validating] }), undefined);
  });

  it('names the missing mutating and validating webhook', () => {
    const { mutating, validating } = good();
    assert.match(
      approvalWebhooksProblem({ mutating: [], validating: [validating] }) ?? '',
      /no MutatingWebhookConfiguration sends PtahSchemaApproval CREATE to \/mapproval/,
    );
    assert.match(
      approvalWebhooksProblem({ mutating: [mutating], validating: [] }) ?? '',
      /no ValidatingWebhookConfiguration sends PtahSchemaApproval CREATE to \/vapproval/,
    );
  });

  const broken: [string, (w: k8s.V1MutatingWebhook) => k8s.V1MutatingWebhook][] = [
    ['another path', (w) => ({ ...w, clientConfig: { url: 'https://10.0.0.1:9443/elsewhere' } })],
    ['failurePolicy Ignore', (w) => ({ ...w, failurePolicy: 'Ignore' })],
    ['a namespace selector', (w) => ({ ...w, namespaceSelector: { matchLabels: { team: 'a' } } })],
    ['a match condition', (w) => ({ ...w, matchConditions: [{ name: 'x', expression: 'false' }] })],
    ['UPDATE only', (w) => ({ ...w, rules: [{ ...w.rules![0]!, operations: ['UPDATE'] }] })],
    ['another resource', (w) => ({ ...w, rules: [{ ...w.rules![0]!, resources: ['ptahschemas'] }] })],
  ];
  for (const [what, change] of broken) {
    it(`refuses a mutating webhook with ${what}`, () => {
      const { mutating, validating } = good();
      const bad = { ...mutating, webhooks: mutating.webhooks!.map(change) };
      assert.notEqual(approvalWebhooksProblem({ mutating: [bad], validating: [validating] }), undefined);
    });
  }

  it('accepts a service reference with our path and wildcard rules', () => {
    const { mutating, validating } = good();
    const viaService = {
      ...mutating,
      webhooks: mutating.webhooks!.map((w) => ({
        ...w,
        clientConfig: { service: { namespace: 'ptah-system', name: 'ptah', path: '/mapproval' } },
        rules: [{ apiGroups: ['*'], apiVersions: ['*'], resources: ['*'], operations: ['*'] }],
      })),
    };
    assert.equal(approvalWebhooksProblem({ mutating: [viaService], validating: [validating] }), undefined);
  });

  it('the gate fails closed when the configurations cannot be read, and caches its answer', async () => {
    let reads = 0;
    const { mutating, validating } = good();
    let now = 0;
    const gate = approvalWebhookGate(
      {
        listMutatingWebhookConfiguration: async () => {
          reads++;
          if (reads === 1) throw Object.assign(new Error('forbidden'), { code: 403 });
          return { items: [mutating] };
        },
        listValidatingWebhookConfiguration: async () => ({ items: [validating] }),
      } as never,
      { ttlMs: 1000, clock: () => now },
    );
    const reason = (st: Awaited<ReturnType<typeof gate>>) => (st.ok ? '' : st.reason);
    assert.match(reason(await gate()), /cannot be read \(HTTP 403\)/);
    assert.match(reason(await gate()), /cannot be read/, 'cached within the TTL');
    assert.equal(reads, 1);
    now = 2000;
    assert.equal((await gate()).ok, true);
  });

  it('stands since the later of the two guarding configurations was created', () => {
    const { mutating, validating } = good();
    const guard = approvalWebhookGuard({
      mutating: [
        {
          ...mutating,
          metadata: { ...mutating.metadata, creationTimestamp: new Date('2026-01-01T00:00:00Z') },
        },
      ],
      validating: [
        {
          ...validating,
          metadata: { ...validating.metadata, creationTimestamp: new Date('2026-01-02T00:00:00Z') },
        },
      ],
    });
    assert.equal(guard.problem, undefined);
    assert.equal(guard.since?.toISOString(), '2026-01-02T00:00:00.000Z');
  });

  it('guards each decision kind by its own webhooks: schema approvals stay trusted without the migration ones', () => {
    const { mutating, validating } = good();
    for (const kind of [
      'PtahSchemaApproval',
      'PtahMigrationApproval',
      'PtahMigrationRunAcknowledgment',
    ] as const)
      assert.equal(
        approvalWebhooksProblem({ mutating: [mutating], validating: [validating] }, kind),
        undefined,
        kind,
      );
    const withoutAck = {
      ...mutating,
      webhooks: mutating.webhooks!.filter((w) => !w.name.startsWith('mmigrationrunacknowledgment.')),
    };
    const registered = { mutating: [withoutAck], validating: [validating] };
    assert.equal(
      approvalWebhooksProblem(registered, 'PtahMigrationRunAcknowledgment'),
      'run acknowledgments are not accepted: no MutatingWebhookConfiguration sends PtahMigrationRunAcknowledgment CREATE to /mmigrationrunacknowledgment with failurePolicy Fail and no selector; register them (approvalWebhookConfigurations) and the acknowledgment is read again',
    );
    assert.equal(approvalWebhooksProblem(registered, 'PtahMigrationApproval'), undefined);
    assert.equal(approvalWebhooksProblem(registered), undefined);
    // The schema approval's webhook does not guard a migration approval, though it is a "Fail" webhook too.
    const schemaOnly = { ...validating, webhooks: validating.webhooks!.slice(0, 1) };
    assert.match(
      approvalWebhooksProblem({ mutating: [mutating], validating: [schemaOnly] }, 'PtahMigrationApproval') ??
        '',
      /^migration approvals are not accepted: no ValidatingWebhookConfiguration sends PtahMigrationApproval CREATE to \/vmigrationapproval/,
    );
  });
});

describe('the chart templates written from the code', () => {
  it('are current: scripts/gen-admission-policies.ts writes what the chart holds', () => {
    const root = join(import.meta.dirname, '..', '..', '..');
    const webhooks = readFileSync(join(root, WEBHOOK_TEMPLATE), 'utf8');
    assert.equal(webhookTemplate(webhooks), webhooks, `${WEBHOOK_TEMPLATE}: run the script`);
    assert.equal(
      admissionPolicyTemplate(),
      readFileSync(join(root, ADMISSION_POLICY_TEMPLATE), 'utf8'),
      `${ADMISSION_POLICY_TEMPLATE}: run the script`,
    );
  });
});

describe('the plain manifests in deploy/admission written from the code', () => {
  const root = join(import.meta.dirname, '..', '..', '..');
  const plain = plainAdmissionManifests(readFileSync(join(root, PLAIN_RBAC), 'utf8'));

  it('are current: scripts/gen-admission-policies.ts writes exactly the files deploy/admission holds', () => {
    assert.deepEqual(readdirSync(join(root, PLAIN_ADMISSION_DIR)).sort(), Object.keys(plain).sort());
    for (const [file, text] of Object.entries(plain)) {
      assert.equal(
        readFileSync(join(root, PLAIN_ADMISSION_DIR, file), 'utf8'),
        text,
        `${PLAIN_ADMISSION_DIR}/${file}: run the script`,
      );
    }
  });

  it('hold what the chart installs: every policy and binding, every webhook, the manager of deploy/rbac exempt', () => {
    const docs = Object.values(plain).flatMap((t) =>
      parseAllDocuments(t).map((d) => d.toJSON() as k8s.KubernetesObject),
    );
    const names = (kind: string) => docs.filter((d) => d.kind === kind).map((d) => d.metadata!.name);
    assert.deepEqual(
      names('ValidatingAdmissionPolicy'),
      admissionPolicies({ managerUsername: 'm', managerImage: 'i', controllerStateVersion: 1 }).map(
        (p) => p.policy.metadata!.name,
      ),
    );
    assert.equal(names('ValidatingAdmissionPolicyBinding').length, names('ValidatingAdmissionPolicy').length);
    assert.deepEqual(names('MutatingWebhookConfiguration'), ['ptah-mapproval']);
    assert.deepEqual(names('ValidatingWebhookConfiguration'), ['ptah-vapproval', 'ptah-vcontrollerwrite']);
    const hooks = docs.flatMap((d) => (d as { webhooks?: k8s.V1ValidatingWebhook[] }).webhooks ?? []);
    assert.equal(hooks.length, 8);
    for (const w of hooks) {
      assert.equal(w.failurePolicy, 'Fail');
      assert.deepEqual(w.clientConfig.service, {
        name: 'ptah-operator-webhook',
        namespace: 'ptah-system',
        path: `/${w.name.split('.')[0]}`,
        port: 443,
      });
      assert.equal(w.clientConfig.caBundle, '${PTAH_WEBHOOK_CA_BUNDLE}');
    }
    assert.match(plain['policies.yaml']!, /"system:serviceaccount:ptah-system:ptah-manager"/);
    // Only the two variables the installer fills in are left for envsubst.
    const left = new Set(
      Object.values(plain).flatMap((t) => [...t.matchAll(/\$\{([A-Za-z_]+)\}/g)].map((m) => m[1])),
    );
    assert.deepEqual([...left].sort(), [...PLAIN_VARIABLES].sort());
  });
});

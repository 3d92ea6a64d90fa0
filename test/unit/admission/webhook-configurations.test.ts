import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
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

  it('points mapproval and vapproval at the paths the server serves, with the CA bundle', () => {
    assert.equal(mutating.metadata?.name, 'ptah-mapproval');
    assert.equal(validating.metadata?.name, 'ptah-vapproval');
    assert.deepEqual(
      mutating.webhooks?.map((w) => [w.name, w.clientConfig.url, w.clientConfig.caBundle]),
      [['mapproval.operator.ptah.run', 'https://127.0.0.1:9443/mapproval', 'Q0E=']],
    );
    assert.deepEqual(
      validating.webhooks?.map((w) => [w.name, w.clientConfig.url, w.clientConfig.caBundle]),
      [['vapproval.operator.ptah.run', 'https://127.0.0.1:9443/vapproval', 'Q0E=']],
    );
  });

  it('admits only PtahSchemaApproval CREATE, fails closed, has no side effects, never reinvokes', () => {
    for (const w of [...mutating.webhooks!, ...validating.webhooks!]) {
      assert.deepEqual(w.rules, [
        {
          apiGroups: ['operator.ptah.run'],
          apiVersions: ['v1alpha1'],
          resources: ['ptahschemaapprovals'],
          operations: ['CREATE'],
          scope: 'Namespaced',
        },
      ]);
      assert.equal(w.failurePolicy, 'Fail');
      assert.equal(w.sideEffects, 'None');
      assert.deepEqual(w.admissionReviewVersions, ['v1']);
      assert.equal(w.timeoutSeconds, 10);
    }
    assert.equal(mutating.webhooks![0]!.reinvocationPolicy, 'Never');
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
});

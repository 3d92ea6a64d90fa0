import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { approvalWebhookConfigurations } from '../../../src/admission/webhook-configurations.ts';

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

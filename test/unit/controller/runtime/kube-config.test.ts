import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpMethod, RequestContext } from '@kubernetes/client-node';
import {
  requestResource,
  SharedConnectionKubeConfig,
} from '../../../../src/controller/runtime/kube-config.ts';

function config(caData: string): SharedConnectionKubeConfig {
  const kc = new SharedConnectionKubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:6443', caData }],
    users: [{ name: 'u', token: 'not-a-secret' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

async function dispatcherOf(kc: SharedConnectionKubeConfig): Promise<unknown> {
  const context = new RequestContext('https://127.0.0.1:6443/api', HttpMethod.GET);
  await kc.applySecurityAuthentication(context);
  assert.equal(
    context.getHeaders()['Authorization'],
    'Bearer not-a-secret',
    'the token is still applied per request',
  );
  return context.getDispatcher();
}

test('every request through the manager KubeConfig shares one connection pool', async () => {
  const kc = config(Buffer.from('ca-one').toString('base64'));
  const first = await dispatcherOf(kc);
  assert.ok(first !== undefined);
  assert.equal(await dispatcherOf(kc), first);
  assert.equal(await dispatcherOf(kc), first);
});

test('new TLS material gets a new pool', async () => {
  const kc = config(Buffer.from('ca-one').toString('base64'));
  const first = await dispatcherOf(kc);
  kc.clusters[0] = { ...kc.clusters[0]!, caData: Buffer.from('ca-two').toString('base64') };
  const second = await dispatcherOf(kc);
  assert.notEqual(second, first);
  assert.equal(await dispatcherOf(kc), second);
});

test('requestResource, the resource label of ptah_api_requests_total, names the resource and subresource, never the object or its namespace', () => {
  const cases: [string, string][] = [
    ['https://h:6443/api/v1/namespaces/shop/pods/orders-x/log?limitBytes=9', 'pods/log'],
    ['https://h:6443/api/v1/namespaces/shop/configmaps/ptah-src-ab', 'configmaps'],
    ['https://h:6443/api/v1/namespaces/shop/configmaps', 'configmaps'],
    [
      'https://h:6443/apis/operator.ptah.run/v1alpha1/namespaces/shop/ptahschemas/orders/status',
      'ptahschemas/status',
    ],
    [
      'https://h:6443/apis/operator.ptah.run/v1alpha1/ptahschemas?watch=true&resourceVersion=1',
      'ptahschemas (watch)',
    ],
    ['https://h:6443/apis/coordination.k8s.io/v1/namespaces/ptah-system/leases/ptah', 'leases'],
    ['https://h:6443/apis/operator.ptah.run/v1alpha1/ptahrealms/shared', 'ptahrealms'],
    ['https://h:6443/version', 'other'],
  ];
  assert.deepEqual(
    cases.map(([url]) => requestResource(url)),
    cases.map(([, r]) => r),
  );
});

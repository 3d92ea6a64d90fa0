// The webhooks' cache-first reads, against an API server address nothing listens on: a read the caches
// answer makes no request, and one they cannot answer (a watch not listed, an object not held, a finished
// Job without its template) goes to the API server, which here fails, rather than being answered from
// nothing.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import * as k8s from '@kubernetes/client-node';
import { pino } from 'pino';
import { cachedJob, cachedJobReaders } from '../../../src/controller/admission-reads.ts';
import { PtahObjects, readJob } from '../../../src/controller/runtime/kube.ts';
import { ManagerWatches, type CacheLookup } from '../../../src/controller/watches.ts';

/** A loopback port that refuses connections: it was free a moment ago and nothing listens on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function nowhere(): Promise<k8s.KubeConfig> {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${await closedPort()}`, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

/** The request reached for the API server and found nobody. */
const refused = (error: unknown) =>
  /ECONNREFUSED/.test(String((error as { cause?: unknown }).cause ?? error)) || assert.fail(String(error));

const schema = {
  apiVersion: 'operator.ptah.run/v1alpha1',
  kind: 'PtahSchema',
  metadata: { namespace: 'ns', name: 'orders', uid: 'u-1', resourceVersion: '7' },
  status: { claim: { jobName: 'ptah-observe-orders-1' } },
};
const holding = (objects: Record<string, k8s.KubernetesObject>): CacheLookup => ({
  find: (kind, _ns, name) => ({ object: objects[`${kind}/${name}`] }),
});

describe('the webhooks read the manager caches first', () => {
  it('a watch that has not listed proves nothing', async () => {
    const watches = new ManagerWatches(await nowhere(), pino({ level: 'silent' }));
    assert.equal(watches.find('ptahschemas', 'ns', 'orders'), undefined);
    assert.equal(watches.synced('jobs'), false);
  });

  it('a resource the cache holds is read from it; one it does not hold, or an unsynced cache, goes to the API server', async () => {
    const kc = await nowhere();
    const live = {
      core: kc.makeApiClient(k8s.CoreV1Api),
      ptah: new PtahObjects(kc.makeApiClient(k8s.CustomObjectsApi)),
    };
    const plan = { ...schema, kind: 'PtahSchemaPlan', metadata: { ...schema.metadata, name: 'ptah-plan-1' } };
    const readers = cachedJobReaders(
      holding({ 'ptahschemas/orders': schema, 'ptahschemaplans/ptah-plan-1': plan }),
      live,
    );
    assert.deepEqual(await readers.ptah.get('ptahschemas', 'ns', 'orders'), schema);
    await assert.rejects(readers.ptah.get('ptahschemas', 'ns', 'other'), refused);
    // Plans are watched whole: one the cache holds is read from it, another goes to the API server.
    assert.deepEqual(await readers.ptah.get('ptahschemaplans', 'ns', 'ptah-plan-1'), plan);
    await assert.rejects(readers.ptah.get('ptahschemaplans', 'ns', 'orders'), refused);
    // No watch holds plan chunks (up to 8 MiB a plan): always the API server.
    await assert.rejects(readers.ptah.get('ptahschemaplanchunks', 'ns', 'ptah-plan-1-000'), refused);
    const unsynced = cachedJobReaders({ find: () => undefined }, live);
    await assert.rejects(unsynced.ptah.get('ptahschemas', 'ns', 'orders'), refused);
    // A source ConfigMap's data is never in the watch: the first read of it goes to the API server.
    await assert.rejects(
      readers.core.readNamespacedConfigMap({ namespace: 'ns', name: 'orders-schema' }),
      refused,
    );
  });

  it('a running Job is read with its template from the cache; a Job held without one goes to the API server', async () => {
    const batch = (await nowhere()).makeApiClient(k8s.BatchV1Api);
    const live = (namespace: string, name: string) => readJob(batch, namespace, name);
    const running = {
      metadata: { namespace: 'ns', name: 'ptah-observe-orders-1', uid: 'j-1' },
      spec: { template: { spec: { containers: [{ name: 'ptah' }] } } },
    };
    const finished = { metadata: { namespace: 'ns', name: 'ptah-observe-orders-0', uid: 'j-0' } };
    const caches = holding({ 'jobs/ptah-observe-orders-1': running, 'jobs/ptah-observe-orders-0': finished });
    assert.deepEqual(await cachedJob(caches, live, 'ns', 'ptah-observe-orders-1'), running);
    await assert.rejects(cachedJob(caches, live, 'ns', 'ptah-observe-orders-0'), refused);
  });
});

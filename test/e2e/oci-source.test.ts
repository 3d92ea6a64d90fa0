// A PtahSchema from an OCI artifact end to end: the real registry with TLS and basic auth, Resolve and
// Verify Jobs, the guard and fetch init containers, and the registry password only where the routing
// table allows it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { API_GROUP, API_VERSION } from '../../src/api/meta.ts';
import { ARTIFACT_TYPE, pushArtifact } from '../../src/sources/oci/index.ts';
import { startRegistry, type RegistryServer } from '../env/registry.ts';
import { at, createSecret, dumpDebug, query, schemaJobs, useE2E, waitForPhase } from './harness.ts';

const { skip, e2e } = useE2E();

const ORDERS = `CREATE TABLE public.orders (id bigint PRIMARY KEY, note text NOT NULL);\n`;

describe('PtahSchema from an OCI source', { skip }, () => {
  let registry: RegistryServer;
  before(async () => {
    if (skip) return;
    registry = await startRegistry({ tls: true, auth: true });
  });
  after(async () => {
    await registry?.stop();
  });

  it('reaches InSync; the registry password reaches only the Resolve, Verify and fetch containers', async () => {
    const env = e2e();
    const ca = readFileSync(registry.caFile!, 'utf8');
    const auth = registry.auth!;
    const dockerConfigJson = JSON.stringify({
      auths: {
        [registry.host]: { auth: Buffer.from(`${auth.username}:${auth.password}`).toString('base64') },
      },
    });
    const reference = `${registry.host}/schemas/orders:v1`;
    await pushArtifact(
      reference,
      ARTIFACT_TYPE.schema,
      [{ path: 'schema.sql', bytes: Buffer.from(ORDERS) }],
      { dockerConfigJson, caPem: ca },
    );
    await env.core.createNamespacedSecret({
      namespace: env.namespace,
      body: {
        metadata: { name: 'registry' },
        type: 'kubernetes.io/dockerconfigjson',
        stringData: {
          '.dockerconfigjson': dockerConfigJson,
          registry: registry.host,
          caSHA256: `sha256:${createHash('sha256').update(ca).digest('hex')}`,
        },
      },
    });
    await env.core.createNamespacedConfigMap({
      namespace: env.namespace,
      body: { metadata: { name: 'registry-ca' }, data: { 'ca.crt': ca } },
    });
    await env.core.createNamespacedConfigMap({
      namespace: env.namespace,
      body: {
        metadata: { name: 'schema-policy' },
        immutable: true,
        data: { 'policy.yaml': `version: 1\nartifact_types: [${ARTIFACT_TYPE.schema}]\n` },
      },
    });
    const url = await env.env.postgres!.createDatabase('oci_db');
    await createSecret(env, 'oci-db', url);
    await env.objects.createNamespacedCustomObject({
      ...at(env, 'ptahschemas'),
      body: {
        apiVersion: `${API_GROUP}/${API_VERSION}`,
        kind: 'PtahSchema',
        metadata: { name: 'oci' },
        spec: {
          target: { engine: 'postgres', coordinationKey: 'oci', urlFrom: { name: 'oci-db', key: 'url' } },
          desired: {
            oci: {
              reference,
              credentialsSecretRef: { name: 'registry' },
              caConfigMapRef: { name: 'registry-ca', key: 'ca.crt' },
            },
          },
          verificationPolicyFrom: { name: 'schema-policy' },
          policy: { apply: 'Always' },
          execution: { failureRetryInterval: '5s', activeDeadlineSeconds: 120 },
        },
      },
    });
    const s = await waitForPhase(env, 'oci', ['InSync', 'Failed', 'Blocked'], 180_000);
    if (s.status?.phase !== 'InSync') await dumpDebug(env, 'oci');
    assert.equal(s.status?.phase, 'InSync', JSON.stringify(s.status?.conditions));
    const conds = s.status?.conditions ?? [];
    assert.equal(conds.find((c) => c.type === 'ArtifactResolved')?.reason, 'DigestPinned');
    assert.equal(conds.find((c) => c.type === 'ArtifactVerified')?.reason, 'PolicySatisfied');
    assert.equal(s.status?.resolution?.sourceType, 'OCI');
    assert.match(s.status?.resolution?.digest ?? '', /^sha256:[0-9a-f]{64}$/);
    const tables = await query(
      url,
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
    );
    assert.deepEqual(
      tables.map((r) => r['table_name']),
      ['orders'],
    );

    // The routing table, on every Job the manager made: who mounts the whole registry Secret, who holds the URL.
    const jobs = await schemaJobs(env, 'oci');
    const operations = jobs.map((j) => j.metadata?.labels?.['operator.ptah.run/operation']).sort();
    for (const op of ['resolve', 'verify', 'observe', 'plan', 'apply'])
      assert.ok(operations.includes(op), op);
    for (const job of jobs) {
      const pod = job.spec!.template.spec!;
      const whole = new Set(
        (pod.volumes ?? [])
          .filter((v) => v.secret?.secretName === 'registry' && v.secret.items === undefined)
          .map((v) => v.name),
      );
      for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
        const holdsRegistry = (c.volumeMounts ?? []).some((m) => whole.has(m.name));
        const holdsDatabase = (c.env ?? []).some((e) => e.name === 'PTAH_DB_URL');
        assert.ok(
          !(holdsRegistry && holdsDatabase),
          `${job.metadata?.name}/${c.name} holds both credentials`,
        );
        if (holdsRegistry) assert.ok(['ptah', 'fetch-source'].includes(c.name), c.name);
        if (holdsRegistry && c.name === 'ptah') {
          assert.ok(['resolve', 'verify'].includes(job.metadata!.labels!['operator.ptah.run/operation']!));
        }
      }
      assert.ok(!JSON.stringify(job).includes(auth.password), `${job.metadata?.name} carries the password`);
    }
    const pods = await env.core.listNamespacedPod({ namespace: env.namespace });
    for (const pod of pods.items) {
      assert.ok(!JSON.stringify(pod).includes(auth.password), `${pod.metadata?.name} carries the password`);
      for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
        const log = await env.core
          .readNamespacedPodLog({ namespace: env.namespace, name: pod.metadata!.name!, container: c.name })
          .catch(() => '');
        assert.ok(!log.includes(auth.password), `${pod.metadata?.name}/${c.name} logged the password`);
      }
    }
    assert.ok(!JSON.stringify(s.status).includes(auth.password));
    const events = await env.core.listNamespacedEvent({ namespace: env.namespace });
    assert.ok(!JSON.stringify(events.items).includes(auth.password));
  });
});

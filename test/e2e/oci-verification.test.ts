// The verification policy end to end, with signatures nobody here produced: cosign (key pair, no
// transparency log) signs, ORAS pushes, and PtahSchemas on the local control plane with the real registry
// (TLS and basic auth) are Blocked with the finding named — unsigned, signed by a key the policy does not
// list, a genuine signature over another digest — until the artifact is fixed, which the interval notices.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { API_GROUP, API_VERSION } from '../../src/api/meta.ts';
import type { PtahSchema } from '../../src/api/ptah-schema.ts';
import {
  ARTIFACT_TYPE,
  RegistryClient,
  parseReference,
  pushArtifact,
  type RegistryAccess,
} from '../../src/sources/oci/index.ts';
import { startRegistry, type RegistryServer } from '../env/registry.ts';
import { findOciTools, type OciTools } from '../env/tools.ts';
import {
  at,
  createSecret,
  dumpDebug,
  eventually,
  getSchema,
  operationJobs,
  query,
  useE2E,
} from './harness.ts';

const run = promisify(execFile);
const { skip, e2e } = useE2E();

const ACCOUNTS = 'CREATE TABLE public.accounts (id bigint PRIMARY KEY, email text NOT NULL);\n';
/** Short, so that a Blocked resource's refresh on its interval is seen within the test. */
const INTERVAL = '15s';

interface Setup {
  readonly registry: RegistryServer;
  readonly dir: string;
  readonly access: RegistryAccess;
  readonly tools: OciTools;
}

let s: Setup;

function cosign(args: string[]) {
  return run(s.tools.cosign, args, {
    cwd: s.dir,
    env: {
      ...process.env,
      HOME: s.dir,
      DOCKER_CONFIG: s.dir,
      COSIGN_PASSWORD: 'e2e-key-password',
      COSIGN_YES: 'true',
    },
  });
}

/** cosign sign with a key pair and no transparency log, as the docs tell a publisher to. */
async function sign(key: 'release' | 'other', reference: string): Promise<void> {
  await cosign([
    'sign',
    '--key',
    join(s.dir, `${key}.key`),
    '--tlog-upload=false',
    '--registry-cacert',
    s.registry.caFile!,
    reference,
  ]);
}

async function pushSchema(reference: string, sql: string): Promise<{ digest: string; pinned: string }> {
  const pushed = await pushArtifact(
    reference,
    ARTIFACT_TYPE.schema,
    [{ path: 'schema.sql', bytes: Buffer.from(sql) }],
    s.access,
  );
  return { digest: pushed.artifact.digest, pinned: pushed.artifact.resolvedReference };
}

async function declare(name: string, reference: string): Promise<string> {
  const t = e2e();
  const url = await t.env.postgres!.createDatabase(`${name.replace(/-/g, '_')}_db`);
  await createSecret(t, `${name}-db`, url);
  await t.objects.createNamespacedCustomObject({
    ...at(t, 'ptahschemas'),
    body: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'PtahSchema',
      metadata: { name },
      spec: {
        target: { engine: 'postgres', coordinationKey: name, urlFrom: { name: `${name}-db`, key: 'url' } },
        desired: {
          oci: {
            reference,
            credentialsSecretRef: { name: 'registry' },
            caConfigMapRef: { name: 'registry-ca', key: 'ca.crt' },
          },
        },
        verificationPolicyFrom: { name: 'signed-policy' },
        policy: { apply: 'Always' },
        interval: INTERVAL,
        execution: { failureRetryInterval: '5s', activeDeadlineSeconds: 120 },
      },
    },
  });
  return url;
}

async function settled(name: string, phases: string[]): Promise<PtahSchema> {
  const st = await eventually(
    `${name} in ${phases.join('|')}`,
    async () => {
      const now = await getSchema(e2e(), name);
      return phases.includes(now.status?.phase ?? '') ? now : undefined;
    },
    180_000,
  ).catch(async (error: unknown) => {
    await dumpDebug(e2e(), name);
    throw error;
  });
  return st;
}

/** Blocked by the policy, the finding named in ArtifactVerified; nothing read the database. */
async function blockedFor(name: string, digest: string, rule: string, finding: RegExp): Promise<PtahSchema> {
  const st = await settled(name, ['Blocked', 'InSync', 'Failed']);
  assert.equal(st.status?.phase, 'Blocked', JSON.stringify(st.status?.conditions));
  const verified = st.status?.conditions?.find((c) => c.type === 'ArtifactVerified');
  assert.equal(verified?.status, 'False');
  assert.equal(verified?.reason, 'PolicyRefused');
  assert.ok(
    verified?.message.startsWith(`policy signed-policy refused ${digest}: ${rule}: `),
    verified?.message,
  );
  assert.match(verified!.message, finding);
  assert.equal(st.status?.resolution?.verification?.refused?.rule, rule);
  assert.deepEqual(await operationJobs(e2e(), name, 'observe'), [], 'nothing read from a refused artifact');
  return st;
}

async function deleteSchema(name: string): Promise<void> {
  await e2e().objects.deleteNamespacedCustomObject({ ...at(e2e(), 'ptahschemas'), name });
}

describe('verification policies with cosign signatures', { skip }, () => {
  before(async () => {
    if (skip) return;
    const tools = findOciTools();
    const registry = await startRegistry({ tls: true, auth: true });
    const dir = mkdtempSync(join(tmpdir(), 'ptah-e2e-oci-verify-'));
    const auth = registry.auth!;
    const ca = readFileSync(registry.caFile!, 'utf8');
    const dockerConfigJson = JSON.stringify({
      auths: {
        [registry.host]: { auth: Buffer.from(`${auth.username}:${auth.password}`).toString('base64') },
      },
    });
    writeFileSync(join(dir, 'config.json'), dockerConfigJson, { mode: 0o600 });
    s = { registry, dir, tools, access: { dockerConfigJson, caPem: ca } };
    await cosign(['generate-key-pair', '--output-key-prefix', 'release']);
    await cosign(['generate-key-pair', '--output-key-prefix', 'other']);

    const t = e2e();
    await t.core.createNamespacedSecret({
      namespace: t.namespace,
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
    await t.core.createNamespacedConfigMap({
      namespace: t.namespace,
      body: { metadata: { name: 'registry-ca' }, data: { 'ca.crt': ca } },
    });
    // Only the release key is trusted; the other key is a real cosign key nobody listed.
    const releasePub = readFileSync(join(dir, 'release.pub'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => `        ${l}`)
      .join('\n');
    await t.core.createNamespacedConfigMap({
      namespace: t.namespace,
      body: {
        metadata: { name: 'signed-policy' },
        immutable: true,
        data: {
          'policy.yaml':
            `version: 1\nartifact_types: [${ARTIFACT_TYPE.schema}]\nsignatures:\n  required_signers: 1\n` +
            `  keys:\n    - name: release-2026\n      public_key: |\n${releasePub}\n`,
        },
      },
    });
  });
  after(async () => {
    await s?.registry.stop();
    if (s) rmSync(s.dir, { recursive: true, force: true });
  });

  it('refuses a signature by another key and a genuine signature over another digest, each by name', async () => {
    const host = s.registry.host;
    // Signed, but only by a key the policy does not list.
    const other = await pushSchema(`${host}/signed/other-key:v1`, ACCOUNTS);
    await sign('other', other.pinned);
    // A genuine release signature, made for v2 and copied to v1's signature tag.
    const moved = await pushSchema(`${host}/signed/moved:v1`, ACCOUNTS);
    const second = await pushSchema(`${host}/signed/moved:v2`, ACCOUNTS + '-- v2\n');
    await sign('release', second.pinned);
    const client = new RegistryClient(s.access);
    const ref = parseReference(moved.pinned);
    const copied = await client.getManifest(ref, `${second.digest.replace(':', '-')}.sig`);
    await client.putManifest(ref, `${moved.digest.replace(':', '-')}.sig`, copied.bytes, copied.mediaType);

    await declare('other-key', `${host}/signed/other-key:v1`);
    await declare('moved-signature', `${host}/signed/moved:v1`);
    await blockedFor(
      'other-key',
      other.digest,
      'signature-untrusted',
      /verifies under none of the policy's keys/,
    );
    await blockedFor(
      'moved-signature',
      moved.digest,
      'signature-digest',
      new RegExp(`by key release-2026 covers ${second.digest}, not ${moved.digest}`),
    );
    for (const name of ['other-key', 'moved-signature']) await deleteSchema(name);
  });

  it('an unsigned artifact pushed by ORAS is Blocked, and once cosign signs it the interval applies it', async () => {
    const host = s.registry.host;
    const src = mkdtempSync(join(s.dir, 'oras-'));
    writeFileSync(join(src, 'schema.sql'), ACCOUNTS);
    const reference = `${host}/signed/oras:v1`;
    await run(
      s.tools.oras,
      [
        'push',
        '--registry-config',
        join(s.dir, 'config.json'),
        '--ca-file',
        s.registry.caFile!,
        '--artifact-type',
        ARTIFACT_TYPE.schema,
        reference,
        'schema.sql:application/sql',
      ],
      { cwd: src },
    );
    const resolved = await new RegistryClient(s.access).getManifest(parseReference(reference), 'v1');
    const digest = `sha256:${createHash('sha256').update(resolved.bytes).digest('hex')}`;

    const url = await declare('oras', reference);
    const blocked = await blockedFor('oras', digest, 'signature-missing', /no cosign signature/);
    const verifiesBefore = (await operationJobs(e2e(), 'oras', 'verify')).length;

    // The artifact is fixed and nobody touches the resource: its interval runs Resolve → Verify again.
    await sign('release', `${host}/signed/oras@${digest}`);
    const synced = await settled('oras', ['InSync']);
    const verified = synced.status?.conditions?.find((c) => c.type === 'ArtifactVerified');
    assert.equal(verified?.reason, 'PolicySatisfied');
    assert.match(verified?.message ?? '', /signed by release-2026/);
    assert.deepEqual(synced.status?.resolution?.verification?.signers, ['release-2026']);
    assert.equal(synced.status?.resolution?.digest, digest);
    assert.ok((await operationJobs(e2e(), 'oras', 'verify')).length > verifiesBefore, 'verified again');
    assert.equal(blocked.metadata.generation, synced.metadata.generation, 'nobody edited the resource');
    const tables = await query(url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'");
    assert.deepEqual(
      tables.map((r) => r['tablename']),
      ['accounts'],
    );
    await deleteSchema('oras');
  });
});

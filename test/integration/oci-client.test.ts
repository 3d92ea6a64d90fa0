import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startRegistry, type RegistryServer } from '../env/registry.ts';
import { buildManifest } from '../../src/sources/snapshot-manifest.ts';
import {
  ARTIFACT_TYPE,
  OciError,
  RegistryClient,
  parseReference,
  pullArtifact,
  pushArtifact,
  resolveArtifact,
  type RegistryAccess,
} from '../../src/sources/oci/index.ts';

function accessFor(registry: RegistryServer, password = registry.auth?.password ?? ''): RegistryAccess {
  const auths = registry.auth
    ? { [registry.host]: { auth: Buffer.from(`${registry.auth.username}:${password}`).toString('base64') } }
    : {};
  return {
    dockerConfigJson: JSON.stringify({ auths }),
    ...(registry.caFile ? { caPem: readFileSync(registry.caFile, 'utf8') } : {}),
  };
}

const files = [
  { path: 'schema.sql', bytes: Buffer.from('create table t (id int primary key);\n') },
  { path: 'views/v.sql', bytes: Buffer.from('create view v as select id from t;\n') },
  // Larger than the error-body ceiling: the HEAD before its upload must not be taken for a body.
  { path: 'z-large.sql', bytes: Buffer.from(`-- ${'x'.repeat(100_000)}\n`) },
];

async function rejectsWith(promise: Promise<unknown>, reason: string, secret?: string): Promise<OciError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof OciError, `expected an OciError, got ${String(error)}`);
    assert.equal(error.reason, reason, error.message);
    if (secret !== undefined) {
      assert.ok(!error.message.includes(secret), 'the error message holds the password');
      assert.ok(!JSON.stringify(error).includes(secret));
    }
    return error;
  }
  assert.fail(`expected a refusal with ${reason}`);
}

test('OCI client against a TLS registry with basic auth: push, resolve by tag, pull by digest, digest checks', async () => {
  const registry = await startRegistry({ tls: true, auth: true });
  try {
    const access = accessFor(registry);
    const pushed = await pushArtifact(
      `${registry.host}/team/app-schema:v1`,
      ARTIFACT_TYPE.schema,
      files,
      access,
      {
        annotations: { 'org.opencontainers.image.source': 'https://example.invalid/app' },
      },
    );
    // Same files → same digest as a ConfigMap snapshot computes.
    assert.equal(pushed.contentDigest, buildManifest(files).contentDigest);
    assert.deepEqual(pushed.files, ['schema.sql', 'views/v.sql', 'z-large.sql']);
    // Pushing again finds every blob present (HEAD 200 with the blob's length) and gives the same digest.
    const again = await pushArtifact(
      `${registry.host}/team/app-schema:v1-again`,
      ARTIFACT_TYPE.schema,
      files,
      access,
      {
        annotations: { 'org.opencontainers.image.source': 'https://example.invalid/app' },
      },
    );
    assert.equal(again.artifact.digest, pushed.artifact.digest);

    const resolved = await resolveArtifact(`oci://${registry.host}/team/app-schema:v1`, access);
    assert.equal(resolved.digest, pushed.artifact.digest);
    assert.equal(resolved.resolvedReference, `${registry.host}/team/app-schema@${pushed.artifact.digest}`);
    assert.equal(resolved.requestedReference, `oci://${registry.host}/team/app-schema:v1`);
    assert.equal(resolved.artifactType, ARTIFACT_TYPE.schema);
    assert.equal(resolved.mediaType, 'application/vnd.oci.image.manifest.v1+json');
    assert.equal(resolved.size, pushed.artifact.size);
    assert.equal(resolved.annotations['org.opencontainers.image.source'], 'https://example.invalid/app');

    const pulled = await pullArtifact(resolved.resolvedReference, access, ARTIFACT_TYPE.schema);
    assert.equal(pulled.contentDigest, pushed.contentDigest);
    assert.deepEqual(
      pulled.files.map((f) => [f.path, Buffer.from(f.content).toString()]),
      files.map((f) => [f.path, f.bytes.toString()]),
    );

    await rejectsWith(
      pullArtifact(resolved.resolvedReference, access, ARTIFACT_TYPE.migrations),
      'WrongArtifactType',
    );
    await rejectsWith(
      pullArtifact(`${registry.host}/team/app-schema:v1`, access, ARTIFACT_TYPE.schema),
      'InvalidReference',
    );

    // HEAD: existence and the reported digest, without the bytes.
    const head = await new RegistryClient(access).headManifest(
      parseReference(resolved.resolvedReference),
      'v1',
    );
    assert.deepEqual(head, { digest: resolved.digest, mediaType: resolved.mediaType, size: resolved.size });
    assert.equal(
      await new RegistryClient(access).headManifest(parseReference(resolved.resolvedReference), 'missing'),
      undefined,
    );

    // No referrers API in this registry: the client falls back to the sha256-<hex> tag, which is absent.
    const client = new RegistryClient(access);
    const referrers = await client.referrers(parseReference(resolved.resolvedReference), resolved.digest);
    assert.deepEqual(referrers, { descriptors: [], via: 'tag' });

    // Wrong password: refused, and the password is in no message.
    const wrong = 'not-the-password-' + 'x'.repeat(8);
    await rejectsWith(
      resolveArtifact(`${registry.host}/team/app-schema:v1`, accessFor(registry, wrong)),
      'Unauthorized',
      wrong,
    );
    await rejectsWith(
      resolveArtifact(`${registry.host}/team/app-schema:v1`, {
        ...accessFor(registry),
        dockerConfigJson: '{"auths":{}}',
      }),
      'Unauthorized',
    );
    // Without the CA the serving certificate is not trusted.
    await rejectsWith(
      resolveArtifact(`${registry.host}/team/app-schema:v1`, {
        dockerConfigJson: accessFor(registry).dockerConfigJson!,
      }),
      'Unreachable',
    );
    await rejectsWith(resolveArtifact(`${registry.host}/team/app-schema:v2`, access), 'NotFound');

    // Change a stored blob's bytes on disk: the registry serves them, the client refuses them.
    const layerHex = pulled.files[0]!.content;
    const digestHex = (await import('node:crypto')).createHash('sha256').update(layerHex).digest('hex');
    const blobFile = join(
      registry.logFile,
      '..',
      'storage',
      'docker',
      'registry',
      'v2',
      'blobs',
      'sha256',
      digestHex.slice(0, 2),
      digestHex,
      'data',
    );
    const original = readFileSync(blobFile);
    const tampered = Buffer.from(original);
    tampered[0] = tampered[0]! ^ 0x20;
    writeFileSync(blobFile, tampered);
    await rejectsWith(
      pullArtifact(resolved.resolvedReference, access, ARTIFACT_TYPE.schema),
      'DigestMismatch',
    );
    writeFileSync(blobFile, original);
  } finally {
    await registry.stop();
  }
});

test('OCI client never falls back to plain HTTP, and works over it when allowed', async () => {
  const registry = await startRegistry();
  try {
    // Without plainHttp the client speaks TLS to the plain server and fails; it never falls back to HTTP.
    const refused = await rejectsWith(
      pushArtifact(`${registry.host}/plain/app:v1`, ARTIFACT_TYPE.migrations, files, {}),
      'Unreachable',
    );
    assert.match(refused.message, /^HEAD https:\/\//);
    const pushed = await pushArtifact(`${registry.host}/plain/app:v1`, ARTIFACT_TYPE.migrations, files, {
      plainHttp: true,
    });
    const pulled = await pullArtifact(
      pushed.artifact.resolvedReference,
      { plainHttp: true },
      ARTIFACT_TYPE.migrations,
    );
    assert.equal(pulled.contentDigest, pushed.contentDigest);
    assert.ok(readdirSync(join(registry.logFile, '..')).includes('storage'));
  } finally {
    await registry.stop();
  }
});

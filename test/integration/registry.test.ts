import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { sendHttpRequest, type HttpRequestOptions } from '../env/http-client.ts';
import { startRegistry, type RegistryServer } from '../env/registry.ts';
import { portRefusesConnections, processAlive } from '../env/host-state.ts';

const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';

function sha256(data: Buffer): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/** Request options that carry the registry's CA and credentials, if it has them. */
function as(registry: RegistryServer, extra: HttpRequestOptions = {}): HttpRequestOptions {
  return {
    ...extra,
    ...(registry.caFile ? { caFile: registry.caFile } : {}),
    ...(registry.auth ? { auth: registry.auth } : {}),
  };
}

/** OCI distribution "POST then PUT" upload; returns the digest the registry confirmed. */
async function pushBlob(registry: RegistryServer, repo: string, blob: Buffer): Promise<string> {
  const digest = sha256(blob);
  const started = await sendHttpRequest(
    `${registry.url}/v2/${repo}/blobs/uploads/`,
    as(registry, { method: 'POST' }),
  );
  assert.equal(started.status, 202, `upload start: ${started.body.toString()}`);
  const location = new URL(String(started.headers.location), registry.url);
  location.searchParams.set('digest', digest);
  const done = await sendHttpRequest(
    location.toString(),
    as(registry, { method: 'PUT', body: blob, headers: { 'content-type': 'application/octet-stream' } }),
  );
  assert.equal(done.status, 201, `upload finish: ${done.body.toString()}`);
  assert.equal(done.headers['docker-content-digest'], digest);
  return digest;
}

async function pushImage(
  registry: RegistryServer,
  repo: string,
  tag: string,
): Promise<{ layer: Buffer; layerDigest: string; manifest: Buffer; manifestDigest: string }> {
  const layer = randomBytes(4096);
  const config = Buffer.from(
    JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers' } }),
  );
  const layerDigest = await pushBlob(registry, repo, layer);
  const configDigest = await pushBlob(registry, repo, config);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: OCI_MANIFEST,
      config: {
        mediaType: 'application/vnd.oci.image.config.v1+json',
        digest: configDigest,
        size: config.length,
      },
      layers: [
        { mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: layerDigest, size: layer.length },
      ],
    }),
  );
  const put = await sendHttpRequest(
    `${registry.url}/v2/${repo}/manifests/${tag}`,
    as(registry, { method: 'PUT', body: manifest, headers: { 'content-type': OCI_MANIFEST } }),
  );
  assert.equal(put.status, 201, `manifest put: ${put.body.toString()}`);
  const manifestDigest = sha256(manifest);
  assert.equal(put.headers['docker-content-digest'], manifestDigest);
  return { layer, layerDigest, manifest, manifestDigest };
}

test('registry over plain HTTP: a pushed blob and manifest read back by tag and digest, and can be deleted', async () => {
  const registry = await startRegistry();
  try {
    assert.match(registry.host, /^127\.0\.0\.1:\d+$/);
    assert.equal(registry.url, `http://${registry.host}`);
    const repo = 'ptah/migrations';
    const image = await pushImage(registry, repo, 'v1');

    const blob = await sendHttpRequest(`${registry.url}/v2/${repo}/blobs/${image.layerDigest}`);
    assert.equal(blob.status, 200);
    assert.ok(blob.body.equals(image.layer), 'the blob reads back byte for byte');

    const accept = { accept: OCI_MANIFEST };
    const byTag = await sendHttpRequest(`${registry.url}/v2/${repo}/manifests/v1`, { headers: accept });
    assert.equal(byTag.status, 200);
    assert.ok(byTag.body.equals(image.manifest));
    assert.equal(byTag.headers['docker-content-digest'], image.manifestDigest);
    const byDigest = await sendHttpRequest(`${registry.url}/v2/${repo}/manifests/${image.manifestDigest}`, {
      headers: accept,
    });
    assert.equal(byDigest.status, 200);
    assert.ok(byDigest.body.equals(image.manifest));

    const tags = await sendHttpRequest(`${registry.url}/v2/${repo}/tags/list`);
    assert.deepEqual(JSON.parse(tags.body.toString()), { name: repo, tags: ['v1'] });

    const missing = await sendHttpRequest(`${registry.url}/v2/${repo}/blobs/${'sha256:' + '0'.repeat(64)}`);
    assert.equal(missing.status, 404);

    const deleted = await sendHttpRequest(`${registry.url}/v2/${repo}/manifests/${image.manifestDigest}`, {
      method: 'DELETE',
    });
    assert.equal(deleted.status, 202, 'storage.delete is enabled');
    const gone = await sendHttpRequest(`${registry.url}/v2/${repo}/manifests/v1`, { headers: accept });
    assert.equal(gone.status, 404);
  } finally {
    await registry.stop();
  }
  assert.ok(!processAlive(registry.pid), 'docker-registry has exited');
  assert.ok(
    await portRefusesConnections(Number(registry.host.split(':')[1])),
    'nothing listens on the port any more',
  );
});

test('registry with TLS and basic auth: the CA verifies it, anonymous and wrong credentials are refused', async () => {
  const registry = await startRegistry({ tls: true, auth: true });
  try {
    assert.equal(registry.url, `https://${registry.host}`);
    assert.ok(registry.caFile && existsSync(registry.caFile));
    assert.ok(registry.auth);

    await assert.rejects(
      sendHttpRequest(`${registry.url}/v2/`),
      /self[- ]signed|unable to verify|certificate/i,
      'without the CA the serving certificate is not trusted',
    );
    const anonymous = await sendHttpRequest(`${registry.url}/v2/`, { caFile: registry.caFile });
    assert.equal(anonymous.status, 401);
    assert.match(String(anonymous.headers['www-authenticate']), /^Basic realm="ptah-test-registry"/);
    const wrong = await sendHttpRequest(`${registry.url}/v2/`, {
      caFile: registry.caFile,
      auth: { username: registry.auth.username, password: 'not-the-password' },
    });
    assert.equal(wrong.status, 401);

    const image = await pushImage(registry, 'team/app', 'stable');
    const blob = await sendHttpRequest(
      `${registry.url}/v2/team/app/blobs/${image.layerDigest}`,
      as(registry),
    );
    assert.equal(blob.status, 200);
    assert.ok(blob.body.equals(image.layer));
    const anonymousBlob = await sendHttpRequest(`${registry.url}/v2/team/app/blobs/${image.layerDigest}`, {
      caFile: registry.caFile,
    });
    assert.equal(anonymousBlob.status, 401);
  } finally {
    await registry.stop();
  }
  assert.ok(!processAlive(registry.pid));
  assert.ok(await portRefusesConnections(Number(registry.host.split(':')[1])));
});

test('registry outage: interrupt stops it on its address, resume brings it back with what it stored', async () => {
  const registry = await startRegistry({ tls: true, auth: true });
  try {
    const image = await pushImage(registry, 'team/app', 'v1');
    const first = registry.pid;
    await registry.interrupt();
    assert.ok(!processAlive(first), 'the server process has exited');
    assert.ok(await portRefusesConnections(Number(registry.host.split(':')[1])), 'the address refuses');
    await assert.rejects(sendHttpRequest(`${registry.url}/v2/`, as(registry)), /ECONNREFUSED/);

    await registry.resume();
    assert.notEqual(registry.pid, first);
    const byTag = await sendHttpRequest(
      `${registry.url}/v2/team/app/manifests/v1`,
      as(registry, { headers: { accept: OCI_MANIFEST } }),
    );
    assert.equal(byTag.status, 200, 'the same credentials, CA and storage');
    assert.equal(byTag.headers['docker-content-digest'], image.manifestDigest);
  } finally {
    await registry.stop();
  }
  assert.ok(!processAlive(registry.pid));
});

// The OCI decoders, reference parser, Docker config reader and challenge parser, on fixed inputs.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseChallenges } from '../../../../src/sources/oci/auth.ts';
import { credentialFor, parseDockerConfig } from '../../../../src/sources/oci/docker-config.ts';
import { OciError } from '../../../../src/sources/oci/errors.ts';
import {
  artifactTypeOf,
  decodeManifest,
  decodeReferrers,
  MEDIA_TYPE,
} from '../../../../src/sources/oci/manifest.ts';
import { parseReference } from '../../../../src/sources/oci/reference.ts';

const d = (n: string) => `sha256:${n.repeat(64).slice(0, 64)}`;
const bytes = (v: unknown) => Buffer.from(JSON.stringify(v));
const refused = (reason: string) => (e: unknown) => e instanceof OciError && e.reason === reason;

describe('parseReference', () => {
  it('splits registry, repository, tag and digest', () => {
    assert.deepEqual(parseReference(`oci://127.0.0.1:5000/team/app:v1@${d('a')}`), {
      registry: '127.0.0.1:5000',
      apiHost: '127.0.0.1:5000',
      repository: 'team/app',
      tag: 'v1',
      digest: d('a'),
    });
    assert.deepEqual(parseReference('registry.example/app'), {
      registry: 'registry.example',
      apiHost: 'registry.example',
      repository: 'app',
    });
    assert.deepEqual(parseReference('localhost/a/b:latest'), {
      registry: 'localhost',
      apiHost: 'localhost',
      repository: 'a/b',
      tag: 'latest',
    });
  });
  it('puts a bare name on Docker Hub under library/', () => {
    assert.deepEqual(parseReference('postgres:17'), {
      registry: 'docker.io',
      apiHost: 'registry-1.docker.io',
      repository: 'library/postgres',
      tag: '17',
    });
  });
  it('refuses what the grammar does not allow', () => {
    for (const bad of [
      '',
      'oci://',
      'Reg.example/App',
      'r.example/app:',
      'r.example/app@sha256:abc',
      'r.example/a b',
      'r.example/app?x',
      'r.example/../etc',
      `r.example/app@md5:${'0'.repeat(32)}`,
      'r.example//app',
    ]) {
      assert.throws(() => parseReference(bad), refused('InvalidReference'), bad);
    }
  });
});

describe('decodeManifest', () => {
  const manifest = {
    schemaVersion: 2,
    mediaType: MEDIA_TYPE.ociManifest,
    artifactType: 'application/vnd.ptah.schema.v1',
    config: { mediaType: MEDIA_TYPE.ociEmpty, digest: d('4'), size: 2 },
    layers: [
      {
        mediaType: 'application/vnd.ptah.file.v1',
        digest: d('b'),
        size: 10,
        annotations: { 'org.opencontainers.image.title': 'a.sql' },
      },
    ],
    annotations: { k: 'v', protoKey: 'x' },
  };
  it('decodes an image manifest and its artifact type', () => {
    const m = decodeManifest(Buffer.from(JSON.stringify(manifest).replace('"protoKey"', '"__proto__"')));
    assert.equal(m.kind, 'manifest');
    assert.equal(artifactTypeOf(m), 'application/vnd.ptah.schema.v1');
    // "__proto__" from JSON is an own key, never the prototype.
    assert.equal(Object.getPrototypeOf(m.annotations), Object.prototype);
    assert.equal(m.annotations?.['k'], 'v');
    assert.equal(Object.getOwnPropertyDescriptor(m.annotations, '__proto__')?.value, 'x');
  });
  it('takes the config media type as the artifact type when artifactType is absent (OCI 1.0 artifacts)', () => {
    const { artifactType: _omit, ...old } = manifest;
    const m = decodeManifest(
      bytes({ ...old, config: { ...old.config, mediaType: 'application/vnd.example.config.v1+json' } }),
    );
    assert.equal(artifactTypeOf(m), 'application/vnd.example.config.v1+json');
  });
  it('decodes an index, inferring the media type when it is absent', () => {
    const m = decodeManifest(
      bytes({
        schemaVersion: 2,
        manifests: [{ mediaType: MEDIA_TYPE.ociManifest, digest: d('c'), size: 3, artifactType: 'a/b' }],
      }),
    );
    assert.equal(m.kind, 'index');
    assert.equal(m.kind === 'index' && m.manifests[0]?.artifactType, 'a/b');
  });
  it('refuses malformed documents with InvalidManifest', () => {
    const cases: unknown[] = [
      null,
      [],
      'text',
      { ...manifest, schemaVersion: 1 },
      { ...manifest, layers: 'x' },
      { ...manifest, config: { ...manifest.config, size: -1 } },
      { ...manifest, config: { ...manifest.config, size: 1.5 } },
      { ...manifest, config: { ...manifest.config, digest: 'nope' } },
      { ...manifest, layers: [{ ...manifest.layers[0], annotations: { a: 1 } }] },
      { ...manifest, mediaType: 'text/plain' },
      { ...manifest, artifactType: 'not a media type' },
    ];
    for (const c of cases)
      assert.throws(() => decodeManifest(bytes(c)), refused('InvalidManifest'), JSON.stringify(c));
    assert.throws(() => decodeManifest(Buffer.from([0xff, 0xfe])), refused('InvalidManifest'));
  });
  it('decodes a referrers answer', () => {
    assert.deepEqual(
      decodeReferrers(bytes({ schemaVersion: 2, mediaType: MEDIA_TYPE.ociIndex, manifests: [] })),
      [],
    );
    assert.throws(
      () => decodeReferrers(bytes({ schemaVersion: 2, manifests: {} })),
      refused('InvalidManifest'),
    );
  });
});

describe('parseDockerConfig', () => {
  const config = JSON.stringify({
    auths: {
      'https://index.docker.io/v1/': { auth: Buffer.from('hub:pw1').toString('base64') },
      'registry.example:5000': { username: 'u', password: 'p:with:colons' },
      'https://tok.example/': { registrytoken: 't0k' },
      'id.example': {
        auth: Buffer.from('00000000-0000-0000-0000-000000000000:').toString('base64'),
        identitytoken: 'refresh',
      },
    },
  });
  it('finds credentials by host, whatever form the key has', () => {
    const store = parseDockerConfig(config);
    assert.deepEqual(credentialFor(store, 'docker.io'), { kind: 'basic', username: 'hub', password: 'pw1' });
    assert.deepEqual(credentialFor(store, 'registry-1.docker.io'), {
      kind: 'basic',
      username: 'hub',
      password: 'pw1',
    });
    assert.deepEqual(credentialFor(store, 'registry.example:5000'), {
      kind: 'basic',
      username: 'u',
      password: 'p:with:colons',
    });
    assert.deepEqual(credentialFor(store, 'tok.example'), { kind: 'registryToken', token: 't0k' });
    assert.equal(credentialFor(store, 'id.example')?.kind, 'identityToken');
    assert.equal(credentialFor(store, 'other.example'), undefined);
  });
  it('refuses a malformed config without quoting it', () => {
    const secret = 'hunter2-secret';
    for (const bad of [
      `{"auths": "${secret}"`,
      `{"auths": {"h": {"auth": "${Buffer.from(secret).toString('base64')}"}}}`,
      `{"auths": {"h": {"password": 5}}}`,
    ]) {
      assert.throws(
        () => parseDockerConfig(bad),
        (e: unknown) =>
          e instanceof OciError &&
          e.reason === 'InvalidConfig' &&
          !e.message.includes(secret) &&
          !e.message.includes(Buffer.from(secret).toString('base64')),
      );
    }
  });
});

describe('parseChallenges', () => {
  it('reads Bearer and Basic challenges', () => {
    assert.deepEqual(
      parseChallenges(
        'Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull"',
      ),
      [
        {
          scheme: 'bearer',
          params: {
            realm: 'https://auth.example/token',
            service: 'registry.example',
            scope: 'repository:a/b:pull',
          },
        },
      ],
    );
    assert.deepEqual(parseChallenges('Basic realm="ptah-test-registry"'), [
      { scheme: 'basic', params: { realm: 'ptah-test-registry' } },
    ]);
    assert.deepEqual(
      parseChallenges('Basic realm="a", Bearer realm="b"').map((c) => c.scheme),
      ['basic', 'bearer'],
    );
    assert.deepEqual(parseChallenges(''), []);
  });
});

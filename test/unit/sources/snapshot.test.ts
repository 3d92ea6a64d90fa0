import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { ConfigMapObject } from '../../../src/api/core.ts';
import { sha256Digest } from '../../../src/api/digest.ts';
import type { ConfigMapSource } from '../../../src/api/ptah-schema.ts';
import { MANIFEST_KEY, snapshotFileKey } from '../../../src/sources/snapshot-manifest.ts';
import { SourceSelectionError } from '../../../src/sources/select-files.ts';
import {
  buildSourceSnapshot,
  SnapshotTooLargeError,
  unusedSnapshots,
} from '../../../src/sources/snapshot-config-map.ts';
import { materialiseSnapshot, verifySnapshot } from '../../../src/sources/verify-snapshot.ts';
import { resolutionFromSnapshot, snapshotNamesInUse } from '../../../src/controller/snapshot/resolution.ts';
import type { Claim } from '../../../src/api/ptah-schema.ts';

const claimFixture: Claim = {
  type: 'Observe',
  operationId: sha256Digest('op'),
  inputsFingerprint: sha256Digest('in'),
  jobName: 'ptah-observe-orders-0123456789abcdef',
  attempt: 1,
  generation: 1,
  startedAt: '2026-01-01T00:00:00Z',
};

const owner = {
  apiVersion: 'operator.ptah.run/v1alpha1',
  kind: 'PtahSchema',
  metadata: { name: 'orders', namespace: 'shop', uid: 'uid-orders' },
};
const source: ConfigMapSource = {
  name: 'orders-schema',
  files: [{ key: 'tables.sql' }, { key: 'rows', path: 'data/rows.sql' }],
};
const sourceConfigMap = (
  data: Record<string, string>,
  binaryData?: Record<string, string>,
): ConfigMapObject => ({
  metadata: { name: 'orders-schema', namespace: 'shop', uid: 'uid-cm' },
  data,
  ...(binaryData ? { binaryData } : {}),
});
const original = {
  'tables.sql': 'CREATE TABLE t (id int);\n',
  rows: 'INSERT INTO t VALUES (1);\n',
  README: 'notes',
};

const readFrom = (cm: ConfigMapObject) => (key: string) => {
  const v = cm.binaryData?.[key];
  return v === undefined ? undefined : Buffer.from(v, 'base64');
};

describe('ConfigMap source snapshot', () => {
  const snap = buildSourceSnapshot(owner, source, sourceConfigMap(original));

  it('lists every selected file with path, size and SHA-256, sorted by path, and digests the manifest', () => {
    assert.deepEqual(snap.manifest.files, [
      { path: 'data/rows.sql', size: 26, sha256: sha256Digest(original.rows) },
      { path: 'tables.sql', size: 25, sha256: sha256Digest(original['tables.sql']) },
    ]);
    const manifestBytes = readFrom(snap.configMap)(MANIFEST_KEY)!;
    assert.equal(snap.contentDigest, sha256Digest(manifestBytes));
    assert.equal(
      manifestBytes.toString(),
      `{"files":[{"path":"data/rows.sql","sha256":"${sha256Digest(original.rows)}","size":26},` +
        `{"path":"tables.sql","sha256":"${sha256Digest(original['tables.sql'])}","size":25}],"version":1}`,
    );
    assert.equal(snap.fileCount, 2);
    assert.equal(snap.size, 51);
    assert.equal(snap.configMapUID, 'uid-cm');
  });

  it('builds an immutable ptah-src-<hash> ConfigMap owned by the resource', () => {
    const cm = snap.configMap;
    assert.match(cm.metadata.name, /^ptah-src-[0-9a-f]{32}$/);
    assert.equal(cm.immutable, true);
    assert.equal(cm.metadata.namespace, 'shop');
    assert.deepEqual(cm.metadata.ownerReferences, [
      {
        apiVersion: 'operator.ptah.run/v1alpha1',
        kind: 'PtahSchema',
        name: 'orders',
        uid: 'uid-orders',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    assert.equal(cm.metadata.labels?.['operator.ptah.run/schema'], 'orders');
    assert.equal(cm.metadata.annotations?.['operator.ptah.run/content-digest'], snap.contentDigest);
    assert.deepEqual(Object.keys(cm.binaryData ?? {}).sort(), [
      snapshotFileKey(0),
      snapshotFileKey(1),
      MANIFEST_KEY,
    ]);
    assert.equal(cm.data, undefined);
  });

  it('gives the same digest, name and bytes when a key the source does not select is edited', () => {
    const edited = buildSourceSnapshot(
      owner,
      source,
      sourceConfigMap({ ...original, README: 'changed', extra: 'x' }),
    );
    assert.equal(edited.contentDigest, snap.contentDigest);
    assert.deepEqual(edited.configMap, snap.configMap);
  });

  it('gives another digest and name when a selected key is edited', () => {
    const edited = buildSourceSnapshot(
      owner,
      source,
      sourceConfigMap({ ...original, rows: 'INSERT INTO t VALUES (2);\n' }),
    );
    assert.notEqual(edited.contentDigest, snap.contentDigest);
    assert.notEqual(edited.configMap.metadata.name, snap.configMap.metadata.name);
  });

  it('gives the same digest for the same files read from other keys, another for another path', () => {
    const renamed = buildSourceSnapshot(
      owner,
      {
        name: 'orders-schema',
        files: [
          { key: 'a', path: 'tables.sql' },
          { key: 'b', path: 'data/rows.sql' },
        ],
      },
      sourceConfigMap({ a: original['tables.sql'], b: original.rows }),
    );
    assert.equal(renamed.contentDigest, snap.contentDigest);
    const moved = buildSourceSnapshot(
      owner,
      { name: 'orders-schema', files: [{ key: 'tables.sql' }, { key: 'rows', path: 'rows.sql' }] },
      sourceConfigMap(original),
    );
    assert.notEqual(moved.contentDigest, snap.contentDigest);
  });

  it('names snapshots per resource so two resources never share one', () => {
    const other = buildSourceSnapshot(
      { ...owner, metadata: { ...owner.metadata, uid: 'uid-2' } },
      source,
      sourceConfigMap(original),
    );
    assert.equal(other.contentDigest, snap.contentDigest);
    assert.notEqual(other.configMap.metadata.name, snap.configMap.metadata.name);
  });

  it('reads binaryData keys as bytes', () => {
    const bytes = Buffer.from([0, 1, 2, 255]);
    const s = buildSourceSnapshot(
      owner,
      { name: 'orders-schema', files: [{ key: 'blob' }] },
      sourceConfigMap({}, { blob: bytes.toString('base64') }),
    );
    assert.deepEqual(s.manifest.files, [{ path: 'blob', size: 4, sha256: sha256Digest(bytes) }]);
  });

  it('refuses a selected key the ConfigMap lacks, naming it', () => {
    assert.throws(
      () => buildSourceSnapshot(owner, source, sourceConfigMap({ 'tables.sql': 'x' })),
      (e: unknown) =>
        e instanceof SourceSelectionError && e.reason === 'KeyNotFound' && /no key rows/.test(e.message),
    );
  });

  it('refuses files that do not fit one ConfigMap', () => {
    const big = 'x'.repeat(600 * 1024);
    assert.throws(
      () =>
        buildSourceSnapshot(
          owner,
          { name: 'orders-schema', files: [{ key: 'a' }, { key: 'b' }] },
          sourceConfigMap({ a: big, b: big }),
        ),
      SnapshotTooLargeError,
    );
  });
});

describe('snapshot verification', () => {
  const snap = buildSourceSnapshot(owner, source, sourceConfigMap(original));
  const tampered = (key: string, value: Uint8Array | undefined) => (k: string) =>
    k === key ? value : readFrom(snap.configMap)(k);

  it('accepts the snapshot it was bound to and returns the files under their paths', () => {
    const r = verifySnapshot(readFrom(snap.configMap), snap.contentDigest);
    assert.ok(r.ok);
    assert.deepEqual(
      r.files.map((f) => [f.path, Buffer.from(f.bytes).toString()]),
      [
        ['data/rows.sql', original.rows],
        ['tables.sql', original['tables.sql']],
      ],
    );
  });

  it('refuses another content digest at the manifest', () => {
    const r = verifySnapshot(readFrom(snap.configMap), sha256Digest('other'));
    assert.deepEqual(r.ok ? undefined : [r.failing, r.reason], [MANIFEST_KEY, 'DigestMismatch']);
  });

  it('names the file whose bytes changed', () => {
    const r = verifySnapshot(
      tampered(snapshotFileKey(1), Buffer.from('CREATE TABLE u (id int);\n')),
      snap.contentDigest,
    );
    assert.deepEqual(r.ok ? undefined : [r.failing, r.reason], ['tables.sql', 'DigestMismatch']);
  });

  it('names a file whose size changed and a missing file', () => {
    const r1 = verifySnapshot(tampered(snapshotFileKey(0), Buffer.from('short')), snap.contentDigest);
    assert.deepEqual(r1.ok ? undefined : [r1.failing, r1.reason], ['data/rows.sql', 'SizeMismatch']);
    const r2 = verifySnapshot(tampered(snapshotFileKey(1), undefined), snap.contentDigest);
    assert.deepEqual(r2.ok ? undefined : [r2.failing, r2.reason], ['tables.sql', 'Missing']);
  });

  it('refuses a manifest that hashes right but is not canonical or safe', () => {
    const bad = Buffer.from(
      '{"files":[{"path":"../x","sha256":"sha256:' + '0'.repeat(64) + '","size":1}],"version":1}',
    );
    const r = verifySnapshot((k) => (k === MANIFEST_KEY ? bad : undefined), sha256Digest(bad));
    assert.deepEqual(r.ok ? undefined : [r.failing, r.reason], [MANIFEST_KEY, 'Malformed']);
  });

  const dirs: string[] = [];
  after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const mountSnapshot = (cm: ConfigMapObject) => {
    const dir = mkdtempSync(join(tmpdir(), 'ptah-snap-'));
    dirs.push(dir);
    mkdirSync(join(dir, 'in'));
    for (const [k, v] of Object.entries(cm.binaryData ?? {}))
      writeFileSync(join(dir, 'in', k), Buffer.from(v, 'base64'));
    return dir;
  };

  it('materialises the verified files into the output directory', () => {
    const dir = mountSnapshot(snap.configMap);
    const r = materialiseSnapshot(join(dir, 'in'), snap.contentDigest, join(dir, 'out'));
    assert.ok(r.ok);
    assert.equal(readFileSync(join(dir, 'out', 'data', 'rows.sql'), 'utf8'), original.rows);
    assert.equal(readFileSync(join(dir, 'out', 'tables.sql'), 'utf8'), original['tables.sql']);
  });

  it('writes nothing when any file fails', () => {
    const dir = mountSnapshot(snap.configMap);
    writeFileSync(join(dir, 'in', snapshotFileKey(1)), 'tampered');
    const r = materialiseSnapshot(join(dir, 'in'), snap.contentDigest, join(dir, 'out'));
    assert.equal(r.ok ? undefined : r.failing, 'tables.sql');
    assert.equal(existsSync(join(dir, 'out')), false);
  });
});

describe('unused snapshots', () => {
  it('selects owned snapshots nothing names, and nothing else', () => {
    const a = buildSourceSnapshot(owner, source, sourceConfigMap(original)).configMap;
    const b = buildSourceSnapshot(owner, source, sourceConfigMap({ ...original, rows: 'x' })).configMap;
    const foreign = buildSourceSnapshot(
      { ...owner, metadata: { ...owner.metadata, uid: 'uid-2' } },
      source,
      sourceConfigMap(original),
    ).configMap;
    const plain: ConfigMapObject = { metadata: { name: 'ptah-src-unrelated' } };
    const names = unusedSnapshots([a, b, foreign, plain], 'uid-orders', new Set([a.metadata.name])).map(
      (c) => c.metadata.name,
    );
    assert.deepEqual(names, [b.metadata.name]);
  });
});

describe('resolution record', () => {
  it('records the snapshot and the source ConfigMap identity, and marks both snapshots in use', () => {
    const snap = buildSourceSnapshot(owner, source, sourceConfigMap(original));
    const resolution = resolutionFromSnapshot(snap, source.name, new Date('2026-01-01T00:00:00Z'));
    assert.deepEqual(resolution, {
      sourceType: 'ConfigMap',
      configMapName: 'orders-schema',
      configMapUID: 'uid-cm',
      contentDigest: snap.contentDigest,
      snapshotName: snap.configMap.metadata.name,
      fileCount: 2,
      size: 51,
      resolvedAt: '2026-01-01T00:00:00.000Z',
    });
    const inUse = snapshotNamesInUse({
      resolution,
      claim: { ...claimFixture, snapshotName: 'ptah-src-old' },
    });
    assert.deepEqual([...inUse].sort(), [snap.configMap.metadata.name, 'ptah-src-old'].sort());
    assert.deepEqual([...snapshotNamesInUse(undefined)], []);
  });
});

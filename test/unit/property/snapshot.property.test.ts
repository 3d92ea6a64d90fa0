// Property tests for the snapshot manifest check (src/sources/verify-snapshot.ts): any set of files round-
// trips through the manifest, any one changed key is refused (naming it) or yields the same files, and
// arbitrary manifest bytes never crash the check.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { sha256Digest } from '../../../src/api/digest.ts';
import { buildManifest, MANIFEST_KEY, snapshotFileKey } from '../../../src/sources/snapshot-manifest.ts';
import { verifySnapshot } from '../../../src/sources/verify-snapshot.ts';
import { runs } from './settings.ts';

const segment = fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9._-]{0,11}$/);
const path = fc.array(segment, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('/'));
const files = fc.uniqueArray(fc.record({ path, bytes: fc.uint8Array({ maxLength: 256 }) }), {
  maxLength: 8,
  selector: (f) => f.path,
});

function store(built: ReturnType<typeof buildManifest>): Map<string, Uint8Array> {
  const keys = new Map<string, Uint8Array>([[MANIFEST_KEY, built.bytes]]);
  built.files.forEach((f, i) => keys.set(snapshotFileKey(i), f.bytes));
  return keys;
}

const same = (a: readonly { path: string; bytes: Uint8Array }[], b: typeof a) =>
  assert.deepEqual(
    a.map((f) => [f.path, Buffer.from(f.bytes).toString('hex')]),
    b.map((f) => [f.path, Buffer.from(f.bytes).toString('hex')]),
  );

describe('snapshot manifest check (property)', () => {
  it('every set of files round-trips: built, stored, verified, the same files back', () => {
    fc.assert(
      fc.property(files, (input) => {
        const built = buildManifest(input);
        const keys = store(built);
        const v = verifySnapshot((k) => keys.get(k), built.contentDigest);
        assert.equal(v.ok, true);
        if (v.ok) same(v.files, built.files);
      }),
      runs(200),
    );
  });

  it('one changed, removed or added key is refused by name, or changes nothing', () => {
    fc.assert(
      fc.property(
        files,
        fc.nat(),
        fc.oneof(fc.constant(undefined), fc.uint8Array({ maxLength: 64 })),
        (input, at, replacement) => {
          const built = buildManifest(input);
          const keys = store(built);
          const names = [...keys.keys()];
          const key = names[at % names.length]!;
          const before = keys.get(key)!;
          if (replacement === undefined) keys.delete(key);
          else keys.set(key, replacement);
          const v = verifySnapshot((k) => keys.get(k), built.contentDigest);
          if (v.ok) {
            assert.ok(replacement !== undefined && Buffer.from(replacement).equals(Buffer.from(before)));
            same(v.files, built.files);
          } else if (key === MANIFEST_KEY) {
            assert.equal(v.failing, MANIFEST_KEY);
          } else {
            assert.equal(v.failing, built.files[Number(key.slice('file-'.length))]!.path);
          }
        },
      ),
      runs(300),
    );
  });

  it('arbitrary manifest bytes bound by their own digest never crash, and are accepted only when canonical', () => {
    const manifestLike = fc.oneof(
      fc.uint8Array({ maxLength: 512 }),
      fc.json({ maxDepth: 4 }).map((j) => Buffer.from(j)),
      files.map((f) =>
        Buffer.from(JSON.stringify({ version: 1, files: buildManifest(f).manifest.files }, null, 1)),
      ),
    );
    fc.assert(
      fc.property(manifestLike, (bytes) => {
        const v = verifySnapshot((k) => (k === MANIFEST_KEY ? bytes : undefined), sha256Digest(bytes));
        if (v.ok) {
          // Accepted: the bytes are exactly the canonical manifest of the files read.
          assert.ok(Buffer.from(buildManifest(v.files).bytes).equals(Buffer.from(bytes)));
        } else {
          assert.ok(['Missing', 'DigestMismatch', 'Malformed', 'SizeMismatch'].includes(v.reason));
        }
      }),
      runs(300),
    );
  });
});

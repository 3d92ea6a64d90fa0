// Fuzzing the OCI decoders (src/sources/oci/manifest.ts, the policy parser and the signature payload
// reader) with random and mutated bytes: each either returns a checked value or throws its own error type,
// never a TypeError or RangeError, and a long run does not grow the heap.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { checkBundle } from '../../../src/sources/oci/bundle.ts';
import { signedDigestOf } from '../../../src/sources/oci/cosign.ts';
import { OciError } from '../../../src/sources/oci/errors.ts';
import { DEFAULT_LIMITS } from '../../../src/sources/oci/limits.ts';
import { decodeManifest, decodeReferrers, MEDIA_TYPE } from '../../../src/sources/oci/manifest.ts';
import { parseVerificationPolicy, PolicyError } from '../../../src/sources/oci/policy.ts';
import { heapGrowth, runs } from './settings.ts';

const digest = fc.stringMatching(/^[0-9a-f]{64}$/).map((h) => `sha256:${h}`);
const descriptor = fc.record(
  {
    mediaType: fc.constantFrom(MEDIA_TYPE.ociManifest, 'application/vnd.ptah.file.v1', 'x/y', ''),
    digest: fc.oneof(digest, fc.string()),
    size: fc.oneof(fc.nat(), fc.integer(), fc.double(), fc.string()),
    artifactType: fc.constantFrom('application/vnd.ptah.schema.v1', 'bad type'),
    annotations: fc.dictionary(
      fc.string({ maxLength: 20 }),
      fc.oneof(fc.string({ maxLength: 20 }), fc.integer()),
    ),
  },
  { requiredKeys: [] },
);
const document = fc.record(
  {
    schemaVersion: fc.oneof(fc.constant(2), fc.integer()),
    mediaType: fc.constantFrom(
      MEDIA_TYPE.ociManifest,
      MEDIA_TYPE.ociIndex,
      MEDIA_TYPE.dockerManifest,
      'text/plain',
    ),
    artifactType: fc.constantFrom('application/vnd.ptah.schema.v1', '', 'a/b'),
    config: descriptor,
    layers: fc.array(descriptor, { maxLength: 5 }),
    manifests: fc.array(descriptor, { maxLength: 5 }),
    subject: descriptor,
    annotations: fc.dictionary(fc.string({ maxLength: 20 }), fc.string({ maxLength: 20 })),
  },
  { requiredKeys: [] },
);

/** Valid-looking JSON, then a few bytes flipped, cut or inserted: the input a broken registry gives. */
const mutated = fc
  .tuple(
    document,
    fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('flip', 'cut', 'insert')), {
      maxLength: 4,
    }),
  )
  .map(([doc, edits]) => {
    let b = Buffer.from(JSON.stringify(doc));
    for (const [at, value, kind] of edits) {
      const i = b.length === 0 ? 0 : at % b.length;
      if (kind === 'flip') b[i] = value;
      else if (kind === 'cut') b = b.subarray(0, i);
      else b = Buffer.concat([b.subarray(0, i), Buffer.from([value]), b.subarray(i)]);
    }
    return new Uint8Array(b);
  });
const input = fc.oneof(
  mutated,
  fc.uint8Array({ maxLength: 512 }),
  document.map((d) => new Uint8Array(Buffer.from(JSON.stringify(d)))),
);

function onlyOwnErrors(work: () => unknown, ...allowed: (new (...args: never[]) => Error)[]): void {
  try {
    work();
  } catch (error) {
    assert.ok(
      allowed.some((type) => error instanceof type),
      `threw ${(error as Error).name}: ${(error as Error).message}`,
    );
  }
}

describe('OCI decoders under random and mutated bytes', () => {
  it('decodeManifest returns a manifest or an index, or throws OciError', () => {
    fc.assert(
      fc.property(input, (bytes) =>
        onlyOwnErrors(() => {
          const m = decodeManifest(bytes);
          assert.ok(m.kind === 'manifest' || m.kind === 'index');
          const entries = m.kind === 'manifest' ? [m.config, ...m.layers] : m.manifests;
          for (const e of entries)
            assert.ok(Number.isSafeInteger(e.size) && e.size >= 0 && typeof e.digest === 'string');
        }, OciError),
      ),
      runs(1500),
    );
  });
  it('decodeReferrers returns descriptors or throws OciError', () => {
    fc.assert(
      fc.property(input, (bytes) => onlyOwnErrors(() => decodeReferrers(bytes), OciError)),
      runs(1000),
    );
  });
  it('signature payloads and bundles give a verdict, never an exception', () => {
    fc.assert(
      fc.property(input, (bytes) => {
        signedDigestOf(bytes);
        checkBundle(bytes, `sha256:${'0'.repeat(64)}`, bytes, []);
      }),
      runs(800),
    );
  });
  it('the policy parser returns a policy or throws PolicyError', () => {
    const text = fc.oneof(
      fc.string({ maxLength: 300 }),
      input.map((b) => Buffer.from(b).toString('utf8')),
      fc
        .record(
          {
            version: fc.oneof(fc.constant(1), fc.integer()),
            artifact_types: fc.array(fc.string({ maxLength: 30 })),
            signatures: fc.anything(),
          },
          { requiredKeys: [] },
        )
        .map((o) => JSON.stringify(o)),
    );
    fc.assert(
      fc.property(text, (t) =>
        onlyOwnErrors(() => parseVerificationPolicy({ 'policy.yaml': t }), PolicyError),
      ),
      runs(800),
    );
  });
  it('decoding the largest documents the transport admits, over and over, does not grow the heap', () => {
    // Valid documents just under the 4 MiB manifest ceiling, so the decoders walk every entry (a cut
    // document would only exercise JSON.parse): an index, a referrers list and a manifest of many layers.
    const entries = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        mediaType: MEDIA_TYPE.ociManifest,
        digest: `sha256:${i.toString(16).padStart(64, '0')}`,
        size: i,
        artifactType: 'application/vnd.dev.cosign.artifact.sig.v1+json',
        annotations: { k: 'v'.repeat(200) },
      }));
    const largest = (build: (n: number) => object): Buffer => {
      let n = 10_000;
      let bytes = Buffer.from(JSON.stringify(build(n)));
      while (bytes.length > DEFAULT_LIMITS.manifestBytes) {
        n = Math.floor((n * DEFAULT_LIMITS.manifestBytes) / bytes.length) - 1;
        bytes = Buffer.from(JSON.stringify(build(n)));
      }
      return bytes;
    };
    const index = largest((n) => ({
      schemaVersion: 2,
      mediaType: MEDIA_TYPE.ociIndex,
      manifests: entries(n),
    }));
    const manifest = largest((n) => ({
      schemaVersion: 2,
      mediaType: MEDIA_TYPE.ociManifest,
      config: { mediaType: MEDIA_TYPE.ociEmpty, digest: `sha256:${'4'.repeat(64)}`, size: 2 },
      layers: entries(n),
    }));
    assert.ok(index.length > 3 * 1024 * 1024 && manifest.length > 3 * 1024 * 1024);
    const counts = { index: 0, referrers: 0, layers: 0 };
    const growth = heapGrowth(() => {
      for (let i = 0; i < 10; i++) {
        const decoded = decodeManifest(index);
        counts.index = decoded.kind === 'index' ? decoded.manifests.length : -1;
        counts.referrers = decodeReferrers(index).length;
        const m = decodeManifest(manifest);
        counts.layers = m.kind === 'manifest' ? m.layers.length : -1;
      }
    });
    assert.ok(
      counts.index > 5000 && counts.referrers === counts.index && counts.layers > 5000,
      JSON.stringify(counts),
    );
    assert.ok(growth < 64 * 1024 * 1024, `heap grew by ${growth} bytes`);
  });
  it('an index or a manifest with more entries than the decoders keep is refused, whatever its size', () => {
    const tiny = { mediaType: 'a/b', digest: `sha256:${'0'.repeat(64)}`, size: 0 };
    const many = Array.from({ length: 10_001 }, () => tiny);
    for (const doc of [
      { schemaVersion: 2, mediaType: MEDIA_TYPE.ociIndex, manifests: many },
      { schemaVersion: 2, mediaType: MEDIA_TYPE.ociManifest, config: tiny, layers: many },
    ]) {
      const bytes = Buffer.from(JSON.stringify(doc));
      assert.throws(
        () => decodeManifest(bytes),
        (e: unknown) => e instanceof OciError && /more than 10000/.test(e.message),
      );
    }
    assert.throws(
      () => decodeReferrers(Buffer.from(JSON.stringify({ schemaVersion: 2, manifests: many }))),
      (e: unknown) => e instanceof OciError && /more than 10000/.test(e.message),
    );
  });
});

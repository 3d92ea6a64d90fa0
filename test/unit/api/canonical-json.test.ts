import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { canonicalJson, CanonicalJsonError } from '../../../src/api/canonical-json.ts';
import { canonicalDigest, isSha256Digest, sha256Digest } from '../../../src/api/digest.ts';

describe('canonicalJson', () => {
  it('sorts keys at every depth and writes no whitespace', () => {
    assert.equal(
      canonicalJson({ b: 1, a: { d: [3, { z: true, y: null }], c: 'x' } }),
      '{"a":{"c":"x","d":[3,{"y":null,"z":true}]},"b":1}',
    );
  });

  it('gives the same bytes whatever order the keys were inserted in', () => {
    const one = canonicalJson({ x: 1, y: 2, nested: { p: 'a', q: 'b' } });
    const two = canonicalJson({ nested: { q: 'b', p: 'a' }, y: 2, x: 1 });
    assert.equal(one, two);
  });

  it('orders keys exactly as comparing their code points does, surrogates and prefixes included', () => {
    const byCodePoints = (a: string, b: string) => {
      const [x, y] = [Array.from(a), Array.from(b)];
      for (let i = 0; i < Math.min(x.length, y.length); i++) {
        const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
        if (d !== 0) return d;
      }
      return x.length - y.length;
    };
    const units = [
      'a',
      'b',
      '\u00e9',
      '\ud7ff',
      '\ud83d',
      '\ude00',
      '\ue000',
      '\uffff',
      '\u{1F600}',
      '\u{10FFFF}',
    ];
    const keys = new Set<string>();
    for (const u of units) for (const v of units) for (const w of ['', 'a', '\uffff']) keys.add(u + v + w);
    const expected = [...keys].sort(byCodePoints);
    const written = canonicalJson(Object.fromEntries([...keys].reverse().map((k) => [k, 0])));
    assert.equal(written, `{${expected.map((k) => `${JSON.stringify(k)}:0`).join(',')}}`);
  });

  it('sorts keys by code point, so astral characters sort after the BMP as UTF-8 bytes do', () => {
    assert.equal(canonicalJson({ '\u{1F600}': 1, '\uFFFF': 2, a: 3 }), '{"a":3,"\uFFFF":2,"\u{1F600}":1}');
  });

  it('omits undefined members and writes -0 as 0', () => {
    assert.equal(canonicalJson({ a: undefined, b: -0 }), '{"b":0}');
  });

  it('escapes strings the JSON way', () => {
    assert.equal(canonicalJson(['a"b\\c\n\u0001']), '["a\\"b\\\\c\\n\\u0001"]');
  });

  for (const [name, value] of [
    ['a fraction', 1.5],
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['an unsafe integer', 2 ** 53],
  ] as const) {
    it(`refuses ${name}`, () => {
      assert.throws(() => canonicalJson({ n: value }), CanonicalJsonError);
    });
  }

  it('refuses non-plain objects and undefined array items', () => {
    assert.throws(() => canonicalJson({ d: new Date(0) as never }), CanonicalJsonError);
    assert.throws(() => canonicalJson([undefined as never]), CanonicalJsonError);
  });
});

describe('digests', () => {
  it('writes sha256:<hex> of the bytes', () => {
    const expected = createHash('sha256').update('abc').digest('hex');
    assert.equal(sha256Digest('abc'), `sha256:${expected}`);
    assert.equal(sha256Digest(Buffer.from('abc')), `sha256:${expected}`);
    assert.ok(isSha256Digest(sha256Digest('abc')));
    assert.ok(!isSha256Digest('sha256:ABC'));
  });

  it('hashes the canonical form, not the insertion order', () => {
    assert.equal(canonicalDigest({ a: 1, b: 2 }), canonicalDigest({ b: 2, a: 1 }));
    assert.notEqual(canonicalDigest({ a: 1, b: 2 }), canonicalDigest({ a: 1, b: 3 }));
  });
});

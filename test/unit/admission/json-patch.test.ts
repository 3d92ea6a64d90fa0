import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { computeJsonPatch } from '../../../src/admission/json-patch.ts';
import { applyPatch } from './apply-json-patch.ts';

function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function randomValue(rnd: () => number, depth: number): unknown {
  const r = rnd();
  if (depth > 3 || r < 0.3) return [null, true, 1, 'x', 'a/b', ''][Math.floor(rnd() * 6)];
  if (r < 0.45) return [randomValue(rnd, depth + 1), randomValue(rnd, depth + 1)];
  const o: Record<string, unknown> = {};
  for (const k of ['a', 'b', 'c/d', 'e~f', 'g']) if (rnd() < 0.5) o[k] = randomValue(rnd, depth + 1);
  return o;
}

describe('computeJsonPatch', () => {
  it('is empty for equal objects', () => {
    assert.deepEqual(computeJsonPatch({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] }), []);
  });

  it('adds, removes and replaces members, escaping ~ and /', () => {
    const ops = computeJsonPatch(
      { spec: { 'a/b': 1, 'x~y': 2, keep: 3 } },
      { spec: { 'a/b': 9, keep: 3, n: [1] } },
    );
    assert.deepEqual(ops, [
      { op: 'remove', path: '/spec/x~0y' },
      { op: 'replace', path: '/spec/a~1b', value: 9 },
      { op: 'add', path: '/spec/n', value: [1] },
    ]);
  });

  it('applied to before, the patch always gives after (random objects)', () => {
    const rnd = prng(11);
    for (let i = 0; i < 500; i++) {
      const before = { metadata: { name: 'x' }, spec: randomValue(rnd, 0) };
      const after = { metadata: { name: 'x' }, spec: randomValue(rnd, 0) };
      assert.deepEqual(applyPatch(before, computeJsonPatch(before, after)), after, `case ${i}`);
    }
  });
});

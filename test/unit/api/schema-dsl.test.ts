import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ptahSchemaSpec } from '../../../src/api/ptah-schema.ts';
import { validate } from '../../../src/api/schema-dsl.ts';

const minimalSpec = {
  target: { engine: 'postgres', coordinationKey: 'orders-db', urlFrom: { name: 'orders-db', key: 'url' } },
  desired: { configMap: { name: 'orders-schema', files: [{ key: 'schema.sql' }] } },
};

describe('PtahSchema spec validation and defaults', () => {
  it('fills every default the CRD declares', () => {
    const r = validate(ptahSchemaSpec, minimalSpec);
    assert.deepEqual(r.errors, []);
    assert.equal(r.value.policy.apply, 'OnApproval');
    assert.equal(r.value.policy.allowDestructive, false);
    assert.equal(r.value.interval, '10m');
    assert.equal(r.value.suspend, false);
    assert.equal(r.value.execution.activeDeadlineSeconds, 900);
    assert.equal(r.value.execution.failureRetryInterval, '30s');
  });

  it('keeps values that were written', () => {
    const r = validate(ptahSchemaSpec, { ...minimalSpec, policy: { apply: 'Always' }, interval: '1h' });
    assert.equal(r.value.policy.apply, 'Always');
    assert.equal(r.value.interval, '1h');
  });

  const invalid: [string, unknown, RegExp][] = [
    [
      'an unknown apply policy',
      { ...minimalSpec, policy: { apply: 'Sometimes' } },
      /policy\.apply: must be one of/,
    ],
    ['a missing target', { desired: minimalSpec.desired }, /\$\.target: is required/],
    ['an unknown field', { ...minimalSpec, extra: 1 }, /\$\.extra: is not a known field/],
    [
      'a path escaping the directory',
      { ...minimalSpec, desired: { configMap: { name: 'x', files: [{ key: 'a', path: '../etc/passwd' }] } } },
      /files\[0\]\.path: must match/,
    ],
    [
      'a duplicated key',
      {
        ...minimalSpec,
        desired: { configMap: { name: 'x', files: [{ key: 'a' }, { key: 'a', path: 'b' }] } },
      },
      /files\[1\]: duplicates an earlier item/,
    ],
    ['no files', { ...minimalSpec, desired: { configMap: { name: 'x', files: [] } } }, /at least 1 items/],
    ['a malformed interval', { ...minimalSpec, interval: 'ten minutes' }, /interval: must match/],
    [
      'too many protected tables',
      { ...minimalSpec, policy: { protectedTables: Array.from({ length: 129 }, (_, i) => `t${i}`) } },
      /at most 128 items/,
    ],
  ];
  for (const [name, spec, message] of invalid) {
    it(`refuses ${name}`, () => {
      const r = validate(ptahSchemaSpec, spec);
      assert.equal(r.ok, false);
      assert.ok(
        r.errors.some((e) => message.test(e)),
        `expected ${message} in ${JSON.stringify(r.errors)}`,
      );
    });
  }
});

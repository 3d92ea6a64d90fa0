import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ptahSchemaSpec } from '../../../src/api/ptah-schema.ts';
import {
  array,
  boolean,
  defaulted,
  enumOf,
  integer,
  object,
  openApi,
  opaqueObject,
  optional,
  record,
  string,
  validate,
  withDefaults,
  withRules,
  type Infer,
} from '../../../src/api/schema-dsl.ts';

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

describe('schema language', () => {
  const item = object({ name: string({ maxLength: 8 }), size: defaulted(integer({ minimum: 0 }), 1) });
  const node = object({
    items: optional(array(item, { maxItems: 3, listType: 'map', mapKeys: ['name'] })),
    tags: optional(array(string({ maxLength: 8 }), { maxItems: 4, listType: 'set' })),
    labels: optional(record(string({ maxLength: 8 }), { maxProperties: 2 })),
    mode: defaulted(enumOf(['a', 'b']), 'a'),
  });

  it('infers optional, defaulted and required members into the TypeScript type', () => {
    const v: Infer<typeof node> = { mode: 'b' };
    assert.equal(v.items, undefined);
  });

  it('fills defaults inside list items and leaves optional members absent', () => {
    const r = validate(node, { items: [{ name: 'x' }] });
    assert.deepEqual(r.value, { items: [{ name: 'x', size: 1 }], mode: 'a' });
    assert.equal(r.ok, true);
  });

  it('writes defaults, required members and list semantics into the OpenAPI schema', () => {
    const s = openApi(node);
    assert.equal(s.required, undefined);
    assert.equal(s.properties?.['mode']?.default, 'a');
    assert.deepEqual(s.properties?.['items']?.['x-kubernetes-list-map-keys'], ['name']);
    assert.deepEqual(s.properties?.['items']?.items?.required, ['name']);
    assert.equal(s.properties?.['tags']?.['x-kubernetes-list-type'], 'set');
    assert.equal(s.properties?.['labels']?.additionalProperties?.type, 'string');
  });

  const refusals: [string, unknown, RegExp][] = [
    ['a duplicate in a set', { tags: ['a', 'a'] }, /tags\[1\]: duplicates/],
    ['a duplicate map key', { items: [{ name: 'x' }, { name: 'x', size: 2 }] }, /items\[1\]: duplicates/],
    ['too many record entries', { labels: { a: 'x', b: 'y', c: 'z' } }, /at most 2 entries/],
    ['a string over its length', { tags: ['123456789'] }, /at most 8 characters/],
    ['a negative integer', { items: [{ name: 'x', size: -1 }] }, /at least 0/],
    ['a fraction where an integer belongs', { items: [{ name: 'x', size: 1.5 }] }, /must be an integer/],
  ];
  for (const [name, value, message] of refusals) {
    it(`refuses ${name}`, () => {
      const r = validate(node, value);
      assert.ok(
        r.errors.some((e) => message.test(e)),
        JSON.stringify(r.errors),
      );
    });
  }

  it('places CEL rules on the node they judge', () => {
    const s = openApi(
      withRules(object({ a: optional(boolean()) }), [{ rule: 'has(self.a)', message: 'a is needed' }]),
    );
    assert.deepEqual(s['x-kubernetes-validations'], [{ rule: 'has(self.a)', message: 'a is needed' }]);
  });

  it('defaults a copy: the input is never changed nor shared, and a "__proto__" member stays a member', () => {
    const node = object({
      tags: defaulted(array(string()), ['x']),
      inner: optional(object({ size: defaulted(integer({ minimum: 0 }), 1) })),
      extra: optional(opaqueObject()),
    });
    const input = JSON.parse('{"inner":{},"extra":{"deep":{"n":1},"__proto__":{"polluted":true}}}') as Record<
      string,
      Record<string, unknown>
    >;
    const before = JSON.stringify(input);
    const first = withDefaults(node, input) as unknown as Record<string, Record<string, unknown>>;
    assert.equal(JSON.stringify(input), before);
    assert.deepEqual(first['inner'], { size: 1 });
    assert.notEqual(first['extra'], input['extra']);
    assert.notEqual(first['extra']!['deep'], input['extra']!['deep']);
    assert.equal(Object.getPrototypeOf(first['extra']), Object.prototype);
    assert.deepEqual(Object.keys(first['extra']!), ['deep', '__proto__']);
    // Each default is its own: changing one leaves the next untouched.
    (first['tags'] as unknown as string[]).push('y');
    assert.deepEqual((withDefaults(node, {}) as unknown as Record<string, unknown>)['tags'], ['x']);
  });
});

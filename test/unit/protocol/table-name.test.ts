import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  canonicalTableName,
  parseTableName,
  TABLE_NAME_PATTERN,
  TableNameError,
} from '../../../src/protocol/table-name.ts';
import { protectedMatcher } from '../../../src/engine/scope.ts';

describe('protected table names', () => {
  it('folds unquoted parts to lower case and keeps quoted parts as written', () => {
    assert.deepEqual(parseTableName('Orders'), { table: 'orders' });
    assert.deepEqual(parseTableName('"Orders"'), { table: 'Orders' });
    assert.deepEqual(parseTableName('Sales."Order Lines"'), { schema: 'sales', table: 'Order Lines' });
    assert.deepEqual(parseTableName('"a.b"."say ""hi"""'), { schema: 'a.b', table: 'say "hi"' });
    assert.deepEqual(parseTableName('t$1'), { table: 't$1' });
  });

  for (const bad of [
    '',
    '1abc',
    'a.b.c',
    '"open',
    '""',
    'a.',
    '.a',
    'a b',
    'a."b"c',
    `"${'x'.repeat(64)}"`,
  ]) {
    it(`refuses ${JSON.stringify(bad)} with the name in the message`, () => {
      assert.throws(
        () => parseTableName(bad),
        (e: unknown) => e instanceof TableNameError && e.message.includes(JSON.stringify(bad)),
      );
    });
  }

  it('the CRD pattern accepts what the parser accepts and refuses what it refuses', () => {
    const pattern = new RegExp(TABLE_NAME_PATTERN);
    for (const good of ['orders', 'Orders', '"Orders"', 'public."Orders"', '"a.b"."c""d"'])
      assert.ok(pattern.test(good), good);
    for (const bad of ['a.b.c', '"open', '""', '1a', 'a b']) assert.ok(!pattern.test(bad), bad);
  });

  it('canonical spellings are equal exactly when the tables are', () => {
    assert.equal(canonicalTableName('Orders'), '"orders"');
    assert.equal(canonicalTableName('public."Orders"'), '"public"."Orders"');
    assert.equal(canonicalTableName('"say ""hi"""'), '"say ""hi"""');
    assert.equal(parseTableName(canonicalTableName('"say ""hi"""')).table, 'say "hi"');
  });

  it('the engine matches by the same rule and names the entry that matched', () => {
    const match = protectedMatcher(['"Orders"', 'audit.Events']);
    assert.equal(match('public', 'Orders'), '"Orders"');
    assert.equal(match('public', 'orders'), undefined, '"Orders" does not protect orders');
    assert.equal(match('audit', 'events'), 'audit.Events');
    assert.equal(match('public', 'events'), undefined, 'a qualified name covers its schema only');
    assert.equal(protectedMatcher(['Orders'])('s', 'orders'), 'Orders', 'unquoted folds: protects orders');
    assert.throws(() => protectedMatcher(['a.b.c']), TableNameError);
  });

  it('covers a table whatever the case of either where the dialect says so (MySQL)', () => {
    const match = protectedMatcher(['Orders', '"AUDIT".Events'], true);
    assert.equal(match('app', 'Orders'), 'Orders');
    assert.equal(match('app', 'ORDERS'), 'Orders');
    assert.equal(match('audit', 'EVENTS'), '"AUDIT".Events');
    assert.equal(match('app', 'events'), undefined, 'a qualified name still covers its schema only');
    assert.equal(match('app', 'order_lines'), undefined);
  });
});
